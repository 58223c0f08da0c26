#!/bin/bash
# bench-scaling.sh - client CPU per I/O as images and submitting threads grow,
# librbdlite vs the real librbd vs raw librados, side by side:
#
#   tests/bench-scaling.sh [SECONDS_PER_BLOCK] [BLOCKS]
#
# Two sweeps of rbdlite-bench (4 KiB random reads by default; every point
# runs the three backends interleaved in blocks, each block a fresh process):
#
#   images   1 job thread spreading its I/Os over 1, 2, 4, 8, 16 images
#            (--spread=ios: one handle per image, one eventfd for all)
#   threads  1, 2, 4, 8 job threads submitting to ONE image through one
#            shared handle (--handles=shared --mode=handoff: the completion
#            callback hands the I/O back to the thread that submitted it)
#
# The total queue depth stays the same at every point (iodepth per job =
# QD / threads), so only the spreading changes, not the load.  Prints a
# table (CPU us per I/O and IOPS per backend and point, lite/librbd and
# lite/rados ratios, the flatness of each backend), and writes it with the
# per-point JSON and an SVG chart to bench-results/ (or $RBDLITE_BENCH_OUT):
# scaling.txt, scaling.tsv, scaling.svg, scaling-*.json.  The committed
# chart is tests/bench/results/scaling.svg (copy the new one there).
#
# Environment: RBDLITE_SCALING_RW (randread), RBDLITE_SCALING_QD (32),
# RBDLITE_SCALING_IMAGES ("1 2 4 8 16"), RBDLITE_SCALING_THREADS ("1 2 4 8").
# Like tests/bench.sh it builds what is missing and runs on a throwaway
# cluster; with RBDLITE_USE_CLUSTER=1 and CEPH_CONF set it uses that
# cluster instead (creating and removing its own images).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
blocks=${2:-3}
out=${RBDLITE_BENCH_OUT:-$root/bench-results}
cd "$root" || exit 1

if [ -z "${RBDLITE_SCALING_INNER:-}" ]; then
	# shellcheck source=tests/bench/prepare.sh
	. tests/bench/prepare.sh
	bench_prepare "$out" build/lib/tools/rbdlite-bench build/lib/.libs/librbdlite.so || exit 1
	export RBDLITE_SCALING_INNER=1
	if [ "${RBDLITE_USE_CLUSTER:-}" = 1 ] && [ -n "${CEPH_CONF:-}" ]; then
		exec bash "$0" "$secs" "$blocks"
	fi
	exec tests/cluster/with-cluster.sh bash "$0" "$secs" "$blocks"
fi

rw=${RBDLITE_SCALING_RW:-randread}
qd=${RBDLITE_SCALING_QD:-32}
images=${RBDLITE_SCALING_IMAGES:-1 2 4 8 16}
threads=${RBDLITE_SCALING_THREADS:-1 2 4 8}
bench=$root/build/lib/tools/rbdlite-bench
pool=${RBDLITE_TEST_POOL:-rbd}
maximg=1
for n in $images; do [ "$n" -gt "$maximg" ] && maximg=$n; done
pfx=scal$$
names=()
for ((i = 0; i < maximg; i++)); do names+=("$pfx-$i"); done
# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
	for n in "${names[@]}"; do rbd rm --no-progress "$pool/$n" >/dev/null 2>&1; done
}
trap cleanup EXIT
# Layering-only images: the raw librados backend writes the data objects
# directly, which would bypass an object map.
for n in "${names[@]}"; do
	rbd create --size 64M --image-feature layering "$pool/$n" || exit 1
done

common=(--pool="$pool" --rw="$rw" --bs=4k --runtime="$secs" --blocks="$blocks"
	--lite-lib="$root/build/lib/.libs/librbdlite.so"
	--malloccount-lib="$root/build/lib/tools/.libs/librbdlite-malloccount.so"
	--output-format=json)
tsv=$out/scaling.tsv
printf '# sweep\tx\tbackend\tcpu_med\tcpu_min\tcpu_max\tiops\tp50_us\tp99_us\n' >"$tsv"
# to_tsv SWEEP X JSON: append the per-backend summary of one run
to_tsv() {
	python3 - "$1" "$2" "$3" >>"$tsv" <<'PY' || return 1
import json, sys
sweep, x, path = sys.argv[1:4]
d = json.load(open(path))
for b in d["backends"]:
    s = b["summary"]
    c = s["cpu_us_per_io"]
    print("\t".join(str(v) for v in (sweep, x, b["name"], c["median"], c["min"],
          c["max"], s["iops"]["median"], s["lat_us"]["p50"], s["lat_us"]["p99"])))
PY
}
rc=0
first=1
for n in $images; do
	list=$(IFS=,; echo "${names[*]:0:$n}")
	pre=()
	[ $first = 1 ] && pre=(--prefill --image="$(IFS=,; echo "${names[*]}")")
	if [ $first = 1 ]; then
		# prefill every image once, through a short run on all of them
		"$bench" "${common[@]}" --runtime=0.5 --blocks=1 --backends=lite \
			--spread=ios --iodepth="$qd" "${pre[@]}" --quiet >/dev/null || exit 1
		first=0
	fi
	echo "=== images: $n image(s), 1 thread, iodepth $qd, $rw" >&2
	"$bench" "${common[@]}" --image="$list" --spread=ios --iodepth="$qd" \
		>"$out/scaling-images-$n.json" && to_tsv images "$n" "$out/scaling-images-$n.json" || rc=1
done
for t in $threads; do
	d=$((qd / t))
	[ $d -lt 1 ] && d=1
	echo "=== threads: $t thread(s) on one image (shared handle), iodepth $d each, $rw" >&2
	"$bench" "${common[@]}" --image="${names[0]}" --numjobs="$t" --iodepth="$d" \
		--handles=shared --mode=handoff \
		>"$out/scaling-threads-$t.json" && to_tsv threads "$t" "$out/scaling-threads-$t.json" || rc=1
done
python3 "$root/tests/bench/scaling-report.py" "$tsv" "$out/scaling.svg" \
	"rbdlite-bench: 4 KiB $rw, total iodepth $qd, $blocks x ${secs} s blocks per backend" \
	| tee "$out/scaling.txt" || rc=1
echo "results in $out" >&2
exit $rc
