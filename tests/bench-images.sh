#!/bin/bash
# bench-images.sh - many images in one process, librbdlite vs the real librbd:
#
#   tests/bench-images.sh [SECONDS_PER_BLOCK] [BLOCKS]
#
# 1. What N open images cost (tests/bench/manyimg.c, one process per
#    library and N, the libraries alternating): N images with rbd's default
#    features opened read-write on one cluster handle and written once
#    (4 KiB, so each takes its exclusive lock), then closed: threads, RSS
#    and open fds added, open latency p50/p99, time to close them all.
# 2. 4 KiB random reads at a total iodepth of 32 spread over all N images
#    (rbdlite-bench --spread=ios, one handle per image, the backends
#    interleaved in BLOCKS blocks of SECONDS_PER_BLOCK): client CPU per
#    I/O and IOPS.
#
# N is 1, 10, 100 and 1000 (RBDLITE_IMAGES_N).  Prints both tables and
# writes them, with an SVG chart, to bench-results/ (or $RBDLITE_BENCH_OUT):
# images.txt, images.tsv, images.svg.  Runs on a throwaway cluster (a
# 6 GiB memstore OSD; the images are 4 MiB each, one object), or with
# RBDLITE_USE_CLUSTER=1 and CEPH_CONF set on that cluster.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
blocks=${2:-3}
out=${RBDLITE_BENCH_OUT:-$root/bench-results}
cd "$root" || exit 1

if [ -z "${RBDLITE_IMAGES_INNER:-}" ]; then
	# shellcheck source=tests/bench/prepare.sh
	. tests/bench/prepare.sh
	bench_prepare "$out" build/lib/tools/rbdlite-bench build/lib/.libs/librbdlite.so || exit 1
	export RBDLITE_IMAGES_INNER=1
	if [ "${RBDLITE_USE_CLUSTER:-}" = 1 ] && [ -n "${CEPH_CONF:-}" ]; then
		exec bash "$0" "$secs" "$blocks"
	fi
	export RBDLITE_MEMSTORE_BYTES=${RBDLITE_MEMSTORE_BYTES:-6442450944}
	exec tests/cluster/with-cluster.sh bash "$0" "$secs" "$blocks"
fi

fail() { echo "bench-images.sh: command failed: $*" >&2; exit 1; }
ns=${RBDLITE_IMAGES_N:-1 10 100 1000}
pool=${RBDLITE_TEST_POOL:-rbd}
lite=$root/build/lib/.libs/librbdlite.so
bench=$root/build/lib/tools/rbdlite-bench
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
librbd=/usr/lib/$multiarch/librbd.so.1
[ -f "$librbd" ] || fail "no real librbd at $librbd"
max=1
for n in $ns; do [ "$n" -gt "$max" ] && max=$n; done
pfx=many$$
work=$(mktemp -d) || fail mktemp
# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
	/usr/bin/python3 - "$pool" "$pfx" "$max" <<'PY' >/dev/null 2>&1
import rados, rbd, sys
pool, pfx, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with rados.Rados(conffile="") as c, c.open_ioctx(pool) as io:
    for i in range(n):
        try:
            rbd.RBD().remove(io, "%s-%d" % (pfx, i))
        except rbd.ImageNotFound:
            pass
PY
	rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -Wall -o "$work/manyimg" tests/bench/manyimg.c -lrados -ldl ||
	fail "cc tests/bench/manyimg.c"
# The images, made and filled (so that reads hit data, not holes) by the
# real librbd (python3-rbd) with its defaults.
/usr/bin/python3 - "$pool" "$pfx" "$max" <<'PY' || fail "creating $max images"
import os, rados, rbd, sys
pool, pfx, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = os.urandom(4 << 20)
with rados.Rados(conffile="") as c, c.open_ioctx(pool) as io:
    for i in range(n):
        name = "%s-%d" % (pfx, i)
        rbd.RBD().create(io, name, 4 << 20)
        with rbd.Image(io, name) as im:
            im.write(data, 0)
PY

tsv=$out/images.tsv
printf '# part\tn\tbackend\tthreads\trss_kib\tfds\topen_p50_us\topen_p99_us\tclose_ms\tcpu_us_per_io\tiops\n' >"$tsv"
for n in $ns; do
	for b in 1 $(seq 2 "$blocks"); do
		# Alternate which library goes first.
		# shellcheck disable=SC2086,SC2046  # key=value words
		order="lite librbd"
		[ $((b % 2)) = 0 ] && order="librbd lite"
		for l in $order; do
			lib=$lite
			[ $l = librbd ] && lib=$librbd
			line=$("$work/manyimg" "$lib" "$pool" "$pfx" "$n") ||
				fail "manyimg $l $n"
			echo "=== open/close $l: $line" >&2
			eval "$(printf '%s\n' $line | sed 's/^/v_/')"
			printf 'open\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t-\n' "$n" "$l" \
				"$v_threads" "$v_rss_kib" "$v_fds" "$v_open_p50_us" \
				"$v_open_p99_us" "$v_close_ms" >>"$tsv"
		done
	done
done
for n in $ns; do
	list=$(for ((i = 0; i < n; i++)); do printf ',%s-%d' "$pfx" "$i"; done | sed 's/^,//')
	echo "=== randread over $n image(s), total iodepth 32" >&2
	"$bench" --pool="$pool" --rw=randread --bs=4k --runtime="$secs" --blocks="$blocks" \
		--backends=lite,librbd --lite-lib="$lite" --spread=ios --iodepth=32 \
		--image="$list" --output-format=json >"$work/rr-$n.json" ||
		fail "rbdlite-bench randread over $n images"
	python3 - "$n" "$work/rr-$n.json" >>"$tsv" <<'PY' || fail "reading rbdlite-bench's JSON"
import json, sys
n, path = sys.argv[1:3]
for b in json.load(open(path))["backends"]:
    s = b["summary"]
    print("\t".join(["randread", n, b["name"]] + ["-"] * 6 +
                    [str(s["cpu_us_per_io"]["median"]), str(s["iops"]["median"])]))
PY
done
python3 tests/bench/images-report.py "$tsv" "$out/images.svg" \
	"tests/bench-images.sh $secs $blocks" | tee "$out/images.txt" || fail "images-report.py"
echo "results in $out" >&2
