#!/usr/bin/env bash
# test-bench.sh - rbdlite-bench's multi-image and multi-thread modes on a
# running test cluster (short runs; figures are not judged, only that the
# I/O happened where it should):
#   (a) --spread=ios: one job thread writing over three empty images leaves
#       data objects in every one of them, on each backend;
#   (b) --handles=shared --mode=handoff: four job threads on one image
#       handle complete I/O on all three backends (JSON: ios > 0, numjobs 4,
#       handles "shared"), and librbdlite's hot-path allocation counter is 0;
#   (c) --handles=shared in poll mode is refused;
#   (d) --luks on a LUKS2 image: all three backends write (the rados
#       floor encrypting the blocks itself), the header bytes before the
#       data area are unchanged, and the encryption still loads.
#
# Needs CEPH_CONF and RBDLITE_TEST_POOL (make check, or
# tests/cluster/cluster-test.sh); without them it fails, never skips.
# The harness and libraries come from $RBDLITE_BUILDDIR (default: two levels
# above this script).  Prints one line per sub-test and "N passed, M failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
B=$BUILDDIR
BENCH=$B/lib/tools/rbdlite-bench
ok() { rbdl_pass "$1"; }
bad() { rbdl_fail "$1" "$2"; }
rbdl_need_progs "$BENCH"
rbdl_workdir bench-test
rbdl_images_cleanup 0 "$POOL/"
U=tb$$
common=(--pool="$POOL" --lite-lib="$B/lib/.libs/librbdlite.so"
	--malloccount-lib="$B/lib/tools/.libs/librbdlite-malloccount.so"
	--runtime=1 --warmup=0.2 --blocks=1 --quiet --output-format=json)
# json_check FILE PYTHON-EXPR: the expression over d (the JSON) is true
json_check() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

# (a) one thread, three images, every backend
for be in lite librbd rados; do
	names=("$U-$be-0" "$U-$be-1" "$U-$be-2")
	for n in "${names[@]}"; do
		if rbd create --size 16M --image-feature layering "$POOL/$n"; then
			IMAGES+=("$n")
		else
			bad "spread-$be" "rbd create $n failed"
		fi
	done
	if "$BENCH" "${common[@]}" --backends="$be" --image="$(IFS=,; echo "${names[*]}")" \
		--spread=ios --rw=randwrite --iodepth=16 >"$TMP/a-$be.json" 2>"$TMP/a-$be.err" &&
		json_check "$TMP/a-$be.json" 'd["job"]["spread"] == "ios" and d["backends"][0]["summary"]["ios"] > 0'; then
		missing=
		objs=$(rados -p "$POOL" ls)
		for n in "${names[@]}"; do
			pfx=$(rbd info --format json "$POOL/$n" | python3 -c 'import json, sys; print(json.load(sys.stdin)["block_name_prefix"])')
			grep -qF "$pfx." <<<"$objs" || missing+=" $n"
		done
		if [[ -z $missing ]]; then ok "spread-$be"; else bad "spread-$be" "no data objects in:$missing"; fi
	else
		bad "spread-$be" "rbdlite-bench failed: $(tail -2 "$TMP/a-$be.err")"
	fi
done

# (b) four threads on one shared handle
n=$U-shared
rbd create --size 16M --image-feature layering "$POOL/$n" && IMAGES+=("$n")
if "$BENCH" "${common[@]}" --image="$n" --numjobs=4 --iodepth=4 --handles=shared \
	--mode=handoff --rw=randrw >"$TMP/b.json" 2>"$TMP/b.err"; then
	if json_check "$TMP/b.json" 'd["job"]["numjobs"] == 4 and d["job"]["handles"] == "shared" and len(d["backends"]) == 3 and all(b["summary"]["ios"] > 0 for b in d["backends"]) and d["backends"][0]["summary"]["lib_hot_path_mallocs_per_io"] == 0'; then
		ok shared-handle
	else
		bad shared-handle "unexpected JSON: $(head -c 600 "$TMP/b.json")"
	fi
else
	bad shared-handle "rbdlite-bench failed: $(tail -2 "$TMP/b.err")"
fi

# (c) a shared handle cannot be polled by several threads
if "$BENCH" "${common[@]}" --image="$n" --numjobs=2 --handles=shared >/dev/null 2>"$TMP/c.err"; then
	bad shared-poll-refused "accepted --handles=shared in poll mode"
elif grep -q "mode=handoff" "$TMP/c.err"; then
	ok shared-poll-refused
else
	bad shared-poll-refused "unexpected error: $(cat "$TMP/c.err")"
fi

# (d) --luks: the rados floor writes the data area only
n=$U-luks
pyload() {	# the header's size: stored size - size with the key loaded
	/usr/bin/python3 - "$POOL" "$1" <<'PY'
import rados, rbd, sys
with rados.Rados(conffile="") as c, c.open_ioctx(sys.argv[1]) as io, \
        rbd.Image(io, sys.argv[2]) as im:
    raw = im.size()
    im.encryption_load(rbd.RBD_ENCRYPTION_FORMAT_LUKS2, "bench-test")
    print(raw - im.size())
PY
}
hdrsum() {	# md5 of the image's first $doff bytes (the header)
	rm -f "$TMP/d.raw"
	rbd export --no-progress "$POOL/$1" "$TMP/d.raw" 2>>"$TMP/d.err" &&
		head -c "$doff" "$TMP/d.raw" | md5sum
}
printf bench-test >"$TMP/pass"
if rbd create --size 64M --image-feature layering "$POOL/$n" && IMAGES+=("$n") &&
	rbd encryption format "$POOL/$n" luks2 "$TMP/pass" >"$TMP/d.err" 2>&1 &&
	doff=$(pyload "$n" 2>>"$TMP/d.err") && [ "$doff" -gt 0 ] &&
	hdrsum "$n" >"$TMP/hdr0"; then
	if "$BENCH" "${common[@]}" --image="$n" --luks=luks2:bench-test --rw=randwrite \
		--iodepth=8 >"$TMP/d.json" 2>>"$TMP/d.err" &&
		json_check "$TMP/d.json" 'len(d["backends"]) == 3 and all(b["summary"]["ios"] > 0 for b in d["backends"])' &&
		hdrsum "$n" >"$TMP/hdr1" &&
		cmp -s "$TMP/hdr0" "$TMP/hdr1" && [ "$(pyload "$n" 2>>"$TMP/d.err")" = "$doff" ]; then
		ok luks-floor
	else
		bad luks-floor "run, header check or load after failed: $(tail -3 "$TMP/d.err")"
	fi
else
	bad luks-floor "set-up (create, format, load, export) failed: $(tail -3 "$TMP/d.err")"
fi

rbdl_summary
