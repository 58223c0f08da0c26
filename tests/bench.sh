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
# RBDLITE_BENCH_LUKS=1 adds the encrypted cases: a 256 MiB image formatted
# LUKS2 (AES-256) by the real librbd (rbd encryption format), loaded by
# each backend (--luks), 4 KiB random reads and writes at iodepth 32 and
# 1 MiB sequential reads and writes at iodepth 8, librbdlite, librbd and
# the raw librados floor (rbdlite-bench's rados backend with --luks
# encrypts and decrypts the blocks itself, past the header); plots
# luks-*.svg.  RBDLITE_BENCH_LUKS=only runs the encrypted cases alone.
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
export RBDLITE_BENCH_LUKS=${RBDLITE_BENCH_LUKS:-0}
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
plain="randread randwrite"
[ "$RBDLITE_BENCH_LUKS" = only ] && plain=
for rw in $plain; do
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
if [ "$RBDLITE_BENCH_LUKS" != 0 ]; then
	eimg=bench-luks pass=bench-luks-passphrase
	rbd create --size 256M --image-feature layering "$pool/$eimg" || exit 1
	printf %s "$pass" >"$out/luks.pass"
	rbd encryption format "$pool/$eimg" luks2 "$out/luks.pass" \
		--cipher-alg aes-256 || exit 1
	for c in "randread 4k 32" "randwrite 4k 32" "read 1m 8" "write 1m 8"; do
		set -- $c
		tag="luks-$1-$2-qd$3"
		echo "=== LUKS2 $2 $1, iodepth $3, $blocks blocks x ${secs} s per backend"
		pre=()
		[ "$1" = randread ] && pre=(--prefill)
		"$bench" --pool="$pool" --image="$eimg" --rw="$1" --bs="$2" \
			--iodepth="$3" --runtime="$secs" --blocks="$blocks" \
			--backends=lite,librbd,rados --luks="luks2:$pass" \
			--lite-lib="$root/build/lib/.libs/librbdlite.so" \
			--malloccount-lib="$root/build/lib/tools/.libs/librbdlite-malloccount.so" \
			--plot="$out/$tag.svg" "${pre[@]}" "${extra[@]}" |
			tee "$out/$tag.txt" || rc=1
	done
	rm -f "$out/luks.pass"
fi
echo "results in $out"
exit $rc
' _ "$root" "$secs" "$blocks" "$out"
