#!/usr/bin/env bash
# test-fio-preload.sh - run Debian's unmodified fio (--ioengine=rbd) with
# librbdlite interposed via LD_PRELOAD against layering-only images (plain,
# striped, separate data pool), and judge the data it wrote with fio running
# on the real librbd (no preload).
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL (a running
# cluster, e.g. from tests/cluster/with-cluster.sh), fio, rbd, python3.
# The library is "${RBDLITE_BUILDDIR:-<srcdir>}/lib/.libs/librbdlite.so",
# or $RBDLITE_LIB.  With RBDLITE_SAN=asan (or tsan) the sanitizer runtime is
# preloaded first.
#
# Prints one line per sub-test and a final "N passed, M failed"; exits
# non-zero if anything failed.  Per-run fio output is kept in a temporary
# directory that is removed at exit (set RBDLITE_KEEP_LOGS=1 to keep it).

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env fio rbd python3 timeout

FIO_TMO=${RBDLITE_FIO_TIMEOUT:-120}  # any single fio run (s)
MiB=$((1024 * 1024))
IMG_SIZE=$((64 * MiB))

rbdl_workdir fio
rbdl_images_cleanup 0 "$POOL/"

# ---- images ---------------------------------------------------------------

UNIQ="fiopl-$$-$RANDOM"
IMG_PLAIN=$UNIQ-plain
IMG_STRIPED=$UNIQ-striped
IMG_DP=$UNIQ-dpool

rbdl_mkimage "$IMG_PLAIN" "${IMG_SIZE}B" --image-feature layering
rbdl_mkimage "$IMG_STRIPED" "${IMG_SIZE}B" --image-feature layering --stripe-unit 64K --stripe-count 4
rbdl_mkimage "$IMG_DP" "${IMG_SIZE}B" --image-feature layering --data-pool "$DATA_POOL"

# ---- running fio -----------------------------------------------------------

# fio_run NAME MODE IMAGE EXPECT [FIO OPTIONS...]
#   MODE: "lite" (LD_PRELOAD librbdlite) or "librbd" (the real librbd).
#   Runs fio with JSON output, then judges it (rbdl_fio_verdict: exit
#   status, preload, sanitizer reports, rbdl_fio_json EXPECT).  Records a
#   PASS/FAIL line; returns 0 on pass.
fio_run() {
    local name=$1 mode=$2 img=$3 expect=$4 rc why
    shift 4
    local json=$TMP/$name.json log=$TMP/$name.log
    local -a envs=(-u LD_PRELOAD)
    if [[ $mode == lite ]]; then
        envs=(LD_PRELOAD="$PRELOAD" "${SAN_ENV[@]}")
    fi
    (cd -- "$TMP" && exec timeout -k 5 "$FIO_TMO" env "${envs[@]}" \
        "${EXTRA_ENV[@]}" fio --output-format=json --output="$json" \
        --ioengine=rbd --clientname=admin --pool="$POOL" --rbdname="$img" \
        --name="$name" "$@") >"$log" 2>&1
    rc=$?
    if ! why=$(rbdl_fio_verdict "$rc" "$log" "$json" "$expect" "$FIO_TMO"); then
        ((rc == 0)) || why="fio ($mode) $why"
        fail "$name" "$why"
        show_log "$log"
        return 1
    fi
    pass "$name"
}
EXTRA_ENV=()

# Short time-based runs for throughput-style coverage (no verification).
TB=(--runtime=3 --time_based)

# ---- 1. verified writes, judged by the real librbd -------------------------

# Each pair: librbdlite writes with verify=crc32c and reads back (do_verify),
# then fio on the real librbd re-runs the same job with verify_only=1, which
# regenerates the expected blocks and checks every one of them.

V1=(--rw=write --bs=4k --size=16M --iodepth=16 --verify=crc32c)
fio_run verify-4k-qd16-plain lite "$IMG_PLAIN" wr "${V1[@]}" --do_verify=1 &&
    fio_run verify-4k-qd16-plain-by-librbd librbd "$IMG_PLAIN" r "${V1[@]}" --verify_only=1

V2=(--rw=randwrite --bsrange=4k-1M --size=32M --iodepth=16 --verify=crc32c)
fio_run verify-bsrange-striped lite "$IMG_STRIPED" wr "${V2[@]}" --do_verify=1 &&
    fio_run verify-bsrange-striped-by-librbd librbd "$IMG_STRIPED" r "${V2[@]}" --verify_only=1 &&
    fio_run verify-bsrange-striped-by-lite lite "$IMG_STRIPED" r "${V2[@]}" --verify_only=1

# Two jobs, each in its own 32 MiB half of the image (no overlap), direct=1.
V3=(--rw=randwrite --bsrange=4k-128k --size=24M --offset_increment=32M
    --numjobs=2 --iodepth=32 --direct=1 --verify=crc32c)
fio_run verify-2jobs-dpool lite "$IMG_DP" wr "${V3[@]}" --do_verify=1 &&
    fio_run verify-2jobs-dpool-by-librbd librbd "$IMG_DP" r "${V3[@]}" --verify_only=1

V4=(--rw=write --bs=64k --size=16M --offset=40M --iodepth=16 --verify=crc32c)
fio_run verify-64k-qd16-dpool lite "$IMG_DP" wr "${V4[@]}" --do_verify=1 &&
    fio_run verify-64k-qd16-dpool-by-librbd librbd "$IMG_DP" r "${V4[@]}" --verify_only=1

# The reverse direction: the real librbd writes, librbdlite verifies.
V5=(--rw=randwrite --bsrange=4k-256k --size=16M --offset=32M --iodepth=32 --verify=crc32c)
fio_run librbd-writes-striped librbd "$IMG_STRIPED" w "${V5[@]}" --do_verify=0 &&
    fio_run librbd-writes-striped-by-lite lite "$IMG_STRIPED" r "${V5[@]}" --verify_only=1

# ---- 2. workload coverage --------------------------------------------------

fio_run write-64k-qd1-direct1-plain lite "$IMG_PLAIN" w \
    --rw=write --bs=64k --iodepth=1 --direct=1 --size=8M
fio_run write-16k-qd32-fsync8-striped lite "$IMG_STRIPED" ws \
    --rw=write --bs=16k --iodepth=32 --direct=0 --fsync=8 --size=16M
fio_run read-64k-qd32-direct0-plain lite "$IMG_PLAIN" r \
    --rw=read --bs=64k --iodepth=32 --direct=0 "${TB[@]}"
fio_run randread-4k-qd128-direct1-striped lite "$IMG_STRIPED" r \
    --rw=randread --bs=4k --iodepth=128 --direct=1 "${TB[@]}"
fio_run randwrite-4k-qd128-2jobs-dpool lite "$IMG_DP" w \
    --rw=randwrite --bs=4k --iodepth=128 --numjobs=2 --size=32M \
    --offset_increment=32M "${TB[@]}"
fio_run randrw70-8k-qd32-busypoll-plain lite "$IMG_PLAIN" rw \
    --rw=randrw --rwmixread=70 --bs=8k --iodepth=32 --busy_poll=1 "${TB[@]}"
fio_run randrw70-4k-qd1-direct1-striped lite "$IMG_STRIPED" rw \
    --rw=randrw --rwmixread=70 --bs=4k --iodepth=1 --direct=1 "${TB[@]}"
fio_run randrw70-bsrange-qd128-dpool lite "$IMG_DP" rw \
    --rw=randrw --rwmixread=70 --bsrange=4k-256k --iodepth=128 "${TB[@]}"
fio_run read-128k-qd128-dpool lite "$IMG_DP" r \
    --rw=read --bs=128k --iodepth=128 --direct=1 "${TB[@]}"
fio_run trim-64k-qd32-plain lite "$IMG_PLAIN" t \
    --rw=trim --bs=64k --iodepth=32 --size=16M
fio_run randtrim-64k-qd128-striped lite "$IMG_STRIPED" t \
    --rw=randtrim --bs=64k --iodepth=128 --size=32M
fio_run randtrim-4k-qd1-dpool lite "$IMG_DP" t \
    --rw=randtrim --bs=4k --iodepth=1 --size=2M

# Blocking poll path (busy_poll=0, the default): with iodepth=1 fio sleeps
# in poll(eventfd, -1) for every single I/O, so each completion must
# increment the eventfd exactly once or fio hangs (caught by the timeout)
# or asserts.  1000 I/Os, each one a wakeup.
fio_run eventfd-poll-qd1-plain lite "$IMG_PLAIN" rw \
    --rw=randrw --bs=4k --iodepth=1 --busy_poll=0 --size=8M --number_ios=1000

# ---- 3. the preload really replaced librbd --------------------------------

# LD_DEBUG=bindings logs every symbol binding; every rbd_* that fio imports
# must bind to librbdlite, none to librbd.so.1, and fio's rados_* must still
# bind to the real librados.  fio imports rbd_poll_io_events and
# rbd_set_image_notification only when built with CONFIG_RBD_POLL, so their
# bindings also prove the eventfd build of the engine is the one under test.
check_bindings() {
    local name=preload-binds-rbd-to-librbdlite ld=$TMP/ld-debug f missing=() s
    mkdir -p "$ld"
    EXTRA_ENV=(LD_DEBUG=bindings LD_DEBUG_OUTPUT="$ld/bind")
    if ! fio_run bindings-run-plain lite "$IMG_PLAIN" rw \
        --rw=randrw --bs=4k --iodepth=8 --size=4M; then
        EXTRA_ENV=()
        fail "$name" "the fio run under LD_DEBUG failed"
        return
    fi
    EXTRA_ENV=()
    # The output file of the fio process itself (other processes, e.g.
    # the env or timeout wrapper, write their own files).
    f=$(grep -l "binding file [^ ]*fio \[0\] to .*symbol \`rbd_open'" "$ld"/bind.* 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "$name" "no LD_DEBUG binding of fio's rbd_open found in $ld"
        return
    fi
    for s in rbd_open rbd_close rbd_stat rbd_flush rbd_invalidate_cache \
        rbd_set_image_notification rbd_poll_io_events \
        rbd_aio_create_completion rbd_aio_read rbd_aio_write \
        rbd_aio_discard rbd_aio_flush rbd_aio_get_return_value \
        rbd_aio_get_arg rbd_aio_release; do
        grep -qF "to $LIB [0]: normal symbol \`$s'" "$f" || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$name" "not bound to $LIB: ${missing[*]}"
        grep -E "binding file [^ ]*fio \[0\] to .*symbol \`rbd_" "$f" | head -n 20 | sed 's/^/    | /'
        return
    fi
    if grep -E "binding file [^ ]*fio \[0\] to [^ ]*librbd\.so[^ ]* \[0\]: normal symbol \`rbd_" "$f" >"$TMP/bad-bindings"; then
        fail "$name" "fio has rbd_* symbols bound to the real librbd"
        show_log "$TMP/bad-bindings"
        return
    fi
    if ! grep -Eq "binding file [^ ]*fio \[0\] to [^ ]*librados\.so[^ ]* \[0\]: normal symbol \`rados_connect'" "$f"; then
        fail "$name" "fio's rados_connect is not bound to the real librados (librbdlite must not interpose rados_*)"
        return
    fi
    pass "$name"
}
check_bindings

# ---- 4. negative: a missing image fails cleanly ---------------------------

check_missing_image() {
    local name=missing-image-fails-cleanly rc log=$TMP/missing.log
    (cd -- "$TMP" && exec timeout -k 5 60 env LD_PRELOAD="$PRELOAD" "${SAN_ENV[@]}" fio \
        --ioengine=rbd --clientname=admin --pool="$POOL" \
        --rbdname="$UNIQ-does-not-exist" --name=missing --rw=read --bs=4k \
        --size=1M) >"$log" 2>&1
    rc=$?
    if ((rc == 0)); then
        fail "$name" "fio exited 0 on a missing image"
    elif ((rc == 124 || rc == 137)); then
        fail "$name" "fio hung ($([[ $rc == 124 ]] && echo "timed out" || echo "timed out, ignored SIGTERM"))"
    elif ((rc > 128)); then
        fail "$name" "fio died of signal $((rc - 128))"
    elif rbdl_san_report "$log"; then
        fail "$name" "sanitizer report"
    elif ! grep -q 'rbd_open failed' "$log"; then
        fail "$name" "exit $rc but no 'rbd_open failed' message"
    else
        pass "$name"
        return
    fi
    show_log "$log"
}
check_missing_image

rbdl_summary
