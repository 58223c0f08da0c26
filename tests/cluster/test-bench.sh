#!/usr/bin/env bash
# test-bench.sh - rbdlite-bench's multi-image and multi-thread modes on a
# running test cluster (short runs; figures are not judged, only that the
# I/O happened where it should):
#   (a) --spread=ios: one job thread writing over three empty images leaves
#       data objects in every one of them, on each backend;
#   (b) --handles=shared --mode=handoff: four job threads on one image
#       handle complete I/O on all three backends (JSON: ios > 0, numjobs 4,
#       handles "shared"), and librbdlite's hot-path allocation counter is 0;
#   (c) --handles=shared in poll mode is refused.
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

rbdl_summary
