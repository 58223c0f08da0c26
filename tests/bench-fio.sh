#!/bin/bash
# bench-fio.sh - the benchmark figures through unmodified fio:
#
#   tests/bench-fio.sh [LONG_SECONDS] [BLOCKS]
#
# Runs Debian's fio with --ioengine=rbd (busy_poll=0: it waits on the
# image's eventfd) once on the real librbd and once with librbdlite
# LD_PRELOADed and once through rbdlite-run with its defaults (librbdlite
# and jemalloc preloaded), rotating in blocks, and measures client CPU per
# I/O of the WHOLE fio process (all threads, from wait4() rusage; fio's own
# "cpu" line counts only its job threads), with set-up and tear-down
# removed by the slope between a short and a long time-based run of every
# job (tests/bench/fio-driver.py explains it).  Cases:
#
#   main     4 KiB randread and randwrite, iodepth 32 and 1, 1 job, 1 image
#   writes   the write path: 4 KiB randwrite and sequential write at
#            iodepth 32 and 1, 64 KiB and 1 MiB sequential writes at
#            iodepth 32 (IOPS and CPU per I/O ratios; run it at the
#            defaults and with RBDLITE_FIO_SET=rbd_cache=false)
#   images   1, 2, 4, 8, 16 fio jobs, each on its own image (fio's rbd
#            engine drives one image per job thread), total iodepth 32
#   threads  1, 2, 4, 8 fio jobs on one image (each job opens its own
#            handle, as fio does), total iodepth 32
#   qemu     qemu-img bench -w (4 KiB writes, depth 32, 20000 of them)
#            through qemu's rbd driver, with -t none (rbd_cache=false) and
#            -t writeback (rbd_cache=true): wall and CPU time (not in the
#            default list: RBDLITE_FIO_SWEEPS=writes,qemu)
#
# Prints the tables and writes them, with every fio JSON output, fio.json,
# fio-scaling.tsv and the chart fio-scaling.svg, to bench-results/ (or
# $RBDLITE_BENCH_OUT); the committed chart is
# tests/bench/results/fio-scaling.svg (copy the new one there).
# Environment: RBDLITE_FIO_SWEEPS ("main,writes,images,
# threads"), RBDLITE_FIO_SHORT (short run, default LONG/3 seconds),
# RBDLITE_FIO_FEATURES (image features, default rbd's: layering,
# exclusive-lock, object-map, fast-diff, deep-flatten), RBDLITE_FIO_SET
# (comma-separated KEY=VALUE Ceph options for both backends, e.g.
# rbd_cache=false: at the defaults both libraries acknowledge writes
# before the OSD has them, write-around).  Builds what is
# missing and runs on a throwaway cluster; with RBDLITE_USE_CLUSTER=1 and
# CEPH_CONF set it uses that cluster (creating and removing its images).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
long=${1:-6}
blocks=${2:-3}
out=${RBDLITE_BENCH_OUT:-$root/bench-results}
cd "$root" || exit 1

if [ -z "${RBDLITE_FIO_INNER:-}" ]; then
	# shellcheck source=tests/bench/prepare.sh
	. tests/bench/prepare.sh
	bench_prepare "$out" build/lib/.libs/librbdlite.so || exit 1
	command -v fio >/dev/null || { echo "bench-fio.sh: fio not found" >&2; exit 1; }
	export RBDLITE_FIO_INNER=1
	if [ "${RBDLITE_USE_CLUSTER:-}" = 1 ] && [ -n "${CEPH_CONF:-}" ]; then
		exec bash "$0" "$long" "$blocks"
	fi
	exec tests/cluster/with-cluster.sh bash "$0" "$long" "$blocks"
fi

sweeps=${RBDLITE_FIO_SWEEPS:-main,writes,images,threads}
short=${RBDLITE_FIO_SHORT:-$(python3 -c "print(max(1, $long / 3))")}
features=${RBDLITE_FIO_FEATURES:-layering,exclusive-lock,object-map,fast-diff,deep-flatten}
pool=${RBDLITE_TEST_POOL:-rbd}
lib=$root/build/lib/.libs/librbdlite.so
export CEPH_CONF
if [ -n "${RBDLITE_FIO_SET:-}" ]; then
	conf=$out/fio-ceph.conf
	{ cat "$CEPH_CONF" && printf '\n[client]\n' &&
	  for kv in ${RBDLITE_FIO_SET//,/ }; do printf '\t%s = %s\n' "${kv%%=*}" "${kv#*=}"; done
	} >"$conf" || exit 1
	echo "bench-fio.sh: client options: $RBDLITE_FIO_SET" >&2
	export CEPH_CONF=$conf
fi
nimg=1
case ",$sweeps," in *,images,*) nimg=16 ;; esac
names=()
for ((i = 0; i < nimg; i++)); do names+=("fio$$-$i"); done
# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
	for n in "${names[@]}"; do rbd rm --no-progress "$pool/$n" >/dev/null 2>&1; done
}
trap cleanup EXIT
for n in "${names[@]}"; do
	rbd create --size 64M --image-feature "$features" "$pool/$n" || exit 1
done
# Prefill (through librbd), so that reads hit data rather than holes.
pre=(fio --ioengine=rbd --clientname=admin --pool="$pool" --rw=write --bs=1M
     --iodepth=8 --output=/dev/null)
for n in "${names[@]}"; do pre+=(--name="$n" --rbdname="$n"); done
"${pre[@]}" || exit 1

python3 "$root/tests/bench/fio-driver.py" --lib="$lib" --pool="$pool" \
	--wrapper="$root/build/lib/tools/rbdlite-run" \
	--images="$(IFS=,; echo "${names[*]}")" --out="$out" --short="$short" \
	--long="$long" --blocks="$blocks" --sweeps="$sweeps" | tee "$out/fio.txt"
rc=${PIPESTATUS[0]}
echo "results in $out" >&2
exit "$rc"
