#!/bin/bash
# bench.sh - the project's main job in one command:
#
#   tests/bench.sh [SECONDS_PER_BLOCK] [BLOCKS]
#
# Installs what it needs (Debian packages, as root), builds librbdlite and
# its benchmark harness, starts a throwaway Ceph cluster, creates and
# prefills a 256 MiB image, and runs rbdlite-bench on three backends
# interleaved in blocks (librbdlite, the real librbd, raw librados on the
# same objects) for 4 KiB random reads and writes at iodepth 32 and 1.
# Prints the harness' tables and ratios and writes them, with SVG plots, to
# bench-results/ (or $RBDLITE_BENCH_OUT).  The charts committed in
# tests/bench/results/ are these plots (randread-qd32.svg, randread-qd1.svg,
# randwrite-qd32.svg, randwrite-qd1.svg): copy them there to refresh them.
# For machine-readable output run
# build/lib/tools/rbdlite-bench --output-format=json yourself.
# RBDLITE_BENCH_ARGS adds rbdlite-bench options to every case, e.g.
# RBDLITE_BENCH_ARGS=--jemalloc=both runs each backend with glibc malloc
# and with jemalloc preloaded.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-10}
blocks=${2:-3}
out=${RBDLITE_BENCH_OUT:-$root/bench-results}
cd "$root" || exit 1
# shellcheck source=tests/bench/prepare.sh
. tests/bench/prepare.sh
bench_prepare "$out" build/lib/tools/rbdlite-bench build/lib/.libs/librbdlite.so || exit 1

export RBDLITE_BENCH_ARGS=${RBDLITE_BENCH_ARGS:-}
exec tests/cluster/with-cluster.sh bash -c '
set -uo pipefail
root=$1 secs=$2 blocks=$3 out=$4
read -r -a extra <<<"$RBDLITE_BENCH_ARGS"
bench="$root/build/lib/tools/rbdlite-bench"
pool=$RBDLITE_TEST_POOL img=bench
# A layering-only image: the raw librados backend writes the same data
# objects directly, which would bypass an object map.
rbd create --size 256M --image-feature layering "$pool/$img" || exit 1
rc=0
for rw in randread randwrite; do
	for qd in 32 1; do
		tag="$rw-qd$qd"
		echo "=== 4 KiB $rw, iodepth $qd, $blocks blocks x ${secs} s per backend"
		pre=()
		[ "$rw" = randread ] && [ "$qd" = 32 ] && pre=(--prefill)
		"$bench" --pool="$pool" --image="$img" --rw="$rw" --bs=4k \
			--iodepth="$qd" --runtime="$secs" --blocks="$blocks" \
			--lite-lib="$root/build/lib/.libs/librbdlite.so" \
			--malloccount-lib="$root/build/lib/tools/.libs/librbdlite-malloccount.so" \
			--plot="$out/$tag.svg" "${pre[@]}" "${extra[@]}" |
			tee "$out/$tag.txt" || rc=1
	done
done
echo "results in $out"
exit $rc
' _ "$root" "$secs" "$blocks" "$out"
