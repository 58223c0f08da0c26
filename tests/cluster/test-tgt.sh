#!/usr/bin/env bash
# test-tgt.sh - Debian's unmodified tgtd (the Linux SCSI target framework
# daemon) with its rbd backing store (tgt-rbd's bs_rbd.so) on librbdlite,
# driven over iSCSI by qemu-io (qemu's block-iscsi), judged by the real
# librbd (the rbd CLI).
#
# tgtd is started by this script, once per mode:
#   preload     under lib/tools/rbdlite-run (LD_PRELOAD of librbdlite.so)
#   substitute  with LD_LIBRARY_PATH=<the drop-in lib/librbd1 librbd.so.1>
#   librbd      the real librbd, nothing substituted (only when asked for:
#               RBDLITE_CONSUMER_MODES="librbd preload substitute"; it shows
#               that the expectations below are librbd's)
# in the foreground, with a control port of its own (-C: its management
# socket is /run/tgtd/socket.PORT; one that exists is not used) and an
# iSCSI portal on 127.0.0.1 at a free port, so nothing collides with a
# system tgtd.
#
# Per mode, on an image made by the rbd CLI (default features):
#   - a target with LUN 1 on the image's HEAD (tgtadm --bstype rbd
#     --backing-store POOL/IMAGE --bsopts conf=CEPH_CONF); qemu-io over
#     iscsi://127.0.0.1:PORT/IQN/1 sees its size, writes two patterns and
#     reads them back; `rbd export` (the real librbd) has exactly them;
#   - `rbd snap create IMAGE@s1` while tgtd has the image open, then LUN 2
#     on IMAGE@s1; qemu-io overwrites part of LUN 1, and reads on LUN 2 the
#     data of the snapshot; a write to LUN 2 fails (bs_rbd's rbd_write on
#     a snapshot: -EROFS, which tgtd logs); `rbd export` of IMAGE@s1 and of
#     the HEAD have the expected data;
#   - LUN 3 on a striped image in the data pool, thin-provisioned:
#     qemu-io writes and discards (SCSI UNMAP: rbd_discard); `rbd export`
#     has the data, zeros where it was discarded;
#   - LUNs and target deleted, tgtd stopped (tgtadm --op delete --mode
#     system): it exits 0, and the image has no watcher left (every
#     rbd_close ran);
#   - LD_DEBUG: every rbd_* bs_rbd.so imports is bound to librbdlite.
# tgtd must still be running after every step.
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL (a running
# cluster), tgtd, tgtadm
# (tgt, tgt-rbd), qemu-io with block-iscsi.so (qemu-utils,
# qemu-block-extra), rbd, python3 (tests/deps.sh consumers judges).  Runs
# as root (tgtd's /run/tgtd).  Prints one line per check and "N passed, M
# failed"; exits non-zero if anything failed.  Every tgtd it started is
# stopped, even on failure.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env tgtd tgtadm qemu-io rbd python3 timeout md5sum
rbdl_qemu_sanrt

DROPIN_DIR=${RBDLITE_DROPIN_DIR:-$BUILDDIR/lib/librbd1/.libs}
[[ -e $DROPIN_DIR/librbd.so.1 ]] || die "drop-in library not built: $DROPIN_DIR/librbd.so.1"
DROPIN_DIR=$(cd -- "$DROPIN_DIR" && pwd)
MODES=${RBDLITE_CONSUMER_MODES:-preload substitute}
((EUID == 0)) || die "tgtd needs root (its management socket is in /run/tgtd)"
BS_RBD=
for f in /usr/lib/tgt/backing-store/bs_rbd.so /usr/lib/*/tgt/backing-store/bs_rbd.so; do
    [[ -f $f ]] && { BS_RBD=$f; break; }
done
[[ -n $BS_RBD ]] || die "tgt's bs_rbd.so not found (Debian package tgt-rbd: tests/deps.sh consumers)"
ISCSI_MOD=
for f in /usr/lib/x86_64-linux-gnu/qemu/block-iscsi.so /usr/lib/*/qemu/block-iscsi.so; do
    [[ -f $f ]] && { ISCSI_MOD=$f; break; }
done
[[ -n $ISCSI_MOD ]] || die "qemu's block-iscsi.so not found (Debian package qemu-block-extra: tests/deps.sh judges)"
MiB=$((1024 * 1024))
QIO_TMO=60

rbdl_workdir tgt
IMAGES=()
TGTPID=
CPORT=
cleanup() {
    stop_tgtd
    rbdl_remove_images 30 "$POOL/"
    rbdl_rm_workdir
}
rbdl_traps

# free_port: a TCP port free on 127.0.0.1 right now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

T() { timeout -k 5 30 tgtadm -C "$CPORT" "$@"; }
tgtd_answers() { T --op show --mode sys >/dev/null 2>&1; }

# start_tgtd MODE: tgtd for MODE; sets TGTPID, CPORT, PORT.  The portal
# port is free when chosen, not reserved: if tgtd exits at once (another
# process took a port meanwhile), it is started again on new ports, up to
# three times.
start_tgtd() {
    local mode=$1 i try
    local -a pre=()
    case $mode in
    preload) pre=("${WRAPPED[@]}") ;;
    substitute) pre=(env ${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}" LD_LIBRARY_PATH="$DROPIN_DIR") ;;
    librbd) pre=(env) ;;
    esac
    mkdir -p "$D/ld"
    for ((try = 1; try <= 3; try++)); do
        for ((i = 0; i < 50; i++)); do
            CPORT=$((2000 + RANDOM % 30000))
            [[ -e /run/tgtd/socket.$CPORT || -e /run/tgtd/socket.$CPORT.lock ]] || break
        done
        PORT=$(free_port) || { fail "$mode: tgtd-start" "no free TCP port"; return 1; }
        (exec env -u LD_PRELOAD -u LD_LIBRARY_PATH LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$D/ld/b" \
            "${pre[@]}" tgtd -f -C "$CPORT" --iscsi portal="127.0.0.1:$PORT") >"$D/tgtd.log" 2>&1 &
        TGTPID=$!
        if rbdl_await_answer "$TGTPID" 100 tgtd_answers; then
            pass "$mode: tgtd (pid $TGTPID, control port $CPORT, portal 127.0.0.1:$PORT) started"
            return 0
        fi
        if kill -0 "$TGTPID" 2>/dev/null; then
            fail "$mode: tgtd-start" "tgtadm -C $CPORT --op show --mode sys: no answer within 10 s"
            break
        fi
        wait "$TGTPID" 2>/dev/null
        local rc=$?
        TGTPID=
        if ((try < 3)); then
            echo "# $mode: tgtd exited at once ($(rbdl_rc_text $rc)), try $try of 3; new ports" >&2
            show_log "$D/tgtd.log"
            continue
        fi
        fail "$mode: tgtd-start" "tgtd exited at once, three times ($(rbdl_rc_text $rc))"
    done
    show_log "$D/tgtd.log"
    return 1
}

# stop_tgtd: LUNs and targets away, then tgtadm --op delete --mode system;
# SIGKILL if it is still there after 15 s.  Sets TGTRC (its exit status).
stop_tgtd() {
    local i
    TGTRC=
    [[ -n $TGTPID ]] || return 0
    for i in 3 2 1; do T --lld iscsi --op delete --mode logicalunit --tid 1 --lun $i >/dev/null 2>&1; done
    T --lld iscsi --op delete --mode target --force --tid 1 >/dev/null 2>&1
    T --op delete --mode system >/dev/null 2>&1 || kill -TERM "$TGTPID" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
        kill -0 "$TGTPID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$TGTPID" 2>/dev/null; then
        echo "$PROG: tgtd $TGTPID still running 15 s after being told to stop: SIGKILL" >&2
        kill -KILL "$TGTPID" 2>/dev/null
    fi
    wait "$TGTPID" 2>/dev/null
    TGTRC=$?
    TGTPID=
    rm -f -- "/run/tgtd/socket.$CPORT" "/run/tgtd/socket.$CPORT.lock"
    rmdir /run/tgtd 2>/dev/null
    return 0
}

# alive STEP: tgtd still runs after STEP, else a FAIL (and 1).
alive() {
    kill -0 "$TGTPID" 2>/dev/null && return 0
    wait "$TGTPID" 2>/dev/null
    fail "$M: tgtd died during $1 ($(rbdl_rc_text $?))"
    show_log "$D/tgtd.log"
    TGTPID=
    return 1
}

# step NAME CMD...: CMD must succeed (output in $D/NAME.log) and tgtd must
# still run; else a FAIL naming the step and the command.
step() {
    local name=$1 rc
    shift
    "$@" >"$D/$name.log" 2>&1
    rc=$?
    alive "'$*'" || return 2
    if ((rc != 0)); then
        fail "$M: $name" "'$*' failed ($(rbdl_rc_text "$rc"))"
        show_log "$D/$name.log"
        return 1
    fi
}

# qio LUN CMD...: qemu-io (nothing substituted: an iSCSI initiator) on LUN.
qio() {
    local lun=$1 x
    shift
    local -a c=()
    for x in "$@"; do c+=(-c "$x"); done
    timeout -k 5 "$QIO_TMO" env -u LD_PRELOAD -u LD_LIBRARY_PATH qemu-io -f raw "${c[@]}" \
        "iscsi://127.0.0.1:$PORT/$IQN/$lun"
}
# qio_ok LOG: qemu-io's output has no failure (qemu-io exits 0 even when
# a request failed, or a -P pattern did not match).
qio_ok() { ! grep -Eq 'failed|Pattern verification|error' "$1"; }

# expect NAME WHAT GOT WANTED
expect() { rbdl_expect "$@"; }
# omap_ok STEP IMG[@SNAP]: rbdl_omap_ok (testlib.sh).
omap_ok() { rbdl_omap_ok "$@"; }
info() { rbdl_info "$@"; }
export_md5() { c_rbd export --no-progress "$POOL/$1" - 2>/dev/null | md5sum | cut -d' ' -f1; }
# file_md5 SIZE [BYTE:OFFSET:LENGTH...]: md5 of SIZE zero bytes with the
# given byte values written over them.
file_md5() {
    python3 - "$@" <<'EOF'
import hashlib, sys
b = bytearray(int(sys.argv[1]))
for spec in sys.argv[2:]:
    v, off, n = (int(x, 0) for x in spec.split(":"))
    b[off:off + n] = bytes([v]) * n
print(hashlib.md5(b).hexdigest())
EOF
}

# bindings: every rbd_* bs_rbd.so imports bound to librbdlite.
bindings() {
    local t s missing=() f
    case $M in
    preload) t=$LIB ;;
    substitute) t=$DROPIN_DIR/librbd.so.1 ;;
    *) return 0 ;;
    esac
    f=$(grep -l "/bs_rbd.so \[0\] to .*symbol \`rbd_open'" "$D"/ld/b.* 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "$M: bs_rbd-binds-to-librbdlite" "no LD_DEBUG binding of bs_rbd.so's rbd_open"
        return
    fi
    for s in $(nm -D --undefined-only "$BS_RBD" | awk '$2 ~ /^rbd_/ { print $2 }'); do
        grep -qF "/bs_rbd.so [0] to $t [0]: normal symbol \`$s'" "$f" || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$M: bs_rbd-binds-to-librbdlite" "not bound to $t: ${missing[*]}"
    else
        pass "$M: bs_rbd-binds-to-librbdlite (all $(nm -D --undefined-only "$BS_RBD" | grep -c ' rbd_') of its rbd_* bound to ${t##*/})"
    fi
    if [[ $M == substitute ]] && grep -h 'calling init: .*librbd\.so' "$D"/ld/b.* |
        grep -vF "$DROPIN_DIR/" | sort -u >"$D/real" && [[ -s $D/real ]]; then
        echo "NOTE $M: the real librbd was loaded too (forwarded calls): $(head -n 1 "$D/real")"
    fi
}

run_mode() {
    M=$1
    D=$TMP/$M
    mkdir -p "$D"
    local img=tgt$RANDOM-$M size=$((32 * MiB)) head_md5 snap_md5 len
    IQN=iqn.2026-12.io.librbdlite:test-$M-$$

    IMAGES+=("$img")
    c_rbd create --size 32M "$POOL/$img" >"$D/create.log" 2>&1 ||
        { fail "$M: rbd create $POOL/$img" "$(tail -n 1 "$D/create.log")"; return; }
    start_tgtd "$M" || return

    # LUN 1: the image's HEAD.
    step target-new T --lld iscsi --op new --mode target --tid 1 -T "$IQN" || return
    step lun1-new T --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 \
        --bstype rbd --backing-store "$POOL/$img" --bsopts "conf=$CEPH_CONF" || return
    step bind T --lld iscsi --op bind --mode target --tid 1 -I ALL || return
    pass "$M: target $IQN with LUN 1 on $POOL/$img (bstype rbd)"

    if step lun1-length qio 1 length; then
        len=$(grep -Eo '^[0-9.]+ [KMG]iB' "$D/lun1-length.log")
        expect lun1-length "LUN 1 size (qemu-io length)" "$len" "32 MiB" && pass "$M: LUN 1 is 32 MiB"
    fi
    [[ -n $TGTPID ]] || return
    if step lun1-write qio 1 "write -P 0x5a 0 4M" "write -P 0x3c 20M 1M" "read -P 0x5a 0 4M" \
        "read -P 0 4M 16M" "read -P 0x3c 20M 1M" "flush"; then
        if ! qio_ok "$D/lun1-write.log"; then
            fail "$M: lun1-write" "qemu-io on LUN 1 reported an error"
            show_log "$D/lun1-write.log"
        elif expect lun1-write "rbd export $POOL/$img (md5)" "$(export_md5 "$img")" \
            "$(file_md5 $size 0x5a:0:$((4 * MiB)) 0x3c:$((20 * MiB)):$MiB)"; then
            pass "$M: qemu-io wrote and read LUN 1 over iSCSI; the real librbd reads the same data"
        fi
    fi
    [[ -n $TGTPID ]] || return

    # LUN 2: a snapshot taken while tgtd has the image open.
    step snap-create c_rbd snap create "$POOL/$img@s1" || return
    step lun2-new T --lld iscsi --op new --mode logicalunit --tid 1 --lun 2 \
        --bstype rbd --backing-store "$POOL/$img@s1" --bsopts "conf=$CEPH_CONF" || return
    pass "$M: LUN 2 on $POOL/$img@s1 (taken by the rbd CLI while tgtd had the image open)"
    if step lun1-overwrite qio 1 "write -P 0xb2 0 1M" "read -P 0xb2 0 1M" "flush" &&
        qio_ok "$D/lun1-overwrite.log"; then
        pass "$M: qemu-io overwrote 1 MiB of LUN 1 (HEAD)"
    elif [[ -n $TGTPID ]]; then
        fail "$M: lun1-overwrite" "qemu-io on LUN 1 reported an error"
        show_log "$D/lun1-overwrite.log"
    fi
    [[ -n $TGTPID ]] || return
    if step lun2-read qio 2 "read -P 0x5a 0 4M" "read -P 0 4M 16M" "read -P 0x3c 20M 1M" &&
        qio_ok "$D/lun2-read.log"; then
        pass "$M: LUN 2 reads the snapshot's data (not the overwrite)"
    elif [[ -n $TGTPID ]]; then
        fail "$M: lun2-read" "qemu-io on LUN 2 (the snapshot) did not read its data"
        show_log "$D/lun2-read.log"
    fi
    [[ -n $TGTPID ]] || return
    # A write to the snapshot LUN: bs_rbd's rbd_write fails, tgtd logs the
    # errno (librbd: -30, EROFS) and qemu-io gets an I/O error.
    qio 2 "write -P 0x11 8M 4k" >"$D/lun2-write.log" 2>&1
    alive "a write to LUN 2" || return
    if grep -q 'write failed: Input/output error' "$D/lun2-write.log" &&
        grep -Eq 'bs_rbd_request.*io error .* 2a -30 ' "$D/tgtd.log"; then
        pass "$M: a write to LUN 2 (the snapshot) fails: rbd_write returned -EROFS"
    else
        fail "$M: lun2-write" "expected an I/O error in qemu-io and 'io error ... 2a -30' (EROFS) in tgtd's log"
        show_log "$D/lun2-write.log"
        grep 'bs_rbd' "$D/tgtd.log" | tail -n 3 | sed 's/^/    | /'
    fi

    # The real librbd's view.
    snap_md5=$(file_md5 $size 0x5a:0:$((4 * MiB)) 0x3c:$((20 * MiB)):$MiB)
    head_md5=$(file_md5 $size 0x5a:0:$((4 * MiB)) 0x3c:$((20 * MiB)):$MiB 0xb2:0:$MiB)
    expect export-snap "rbd export $POOL/$img@s1 (md5)" "$(export_md5 "$img@s1")" "$snap_md5" &&
        expect export-head "rbd export $POOL/$img (md5)" "$(export_md5 "$img")" "$head_md5" &&
        omap_ok object-map "$img" && omap_ok object-map "$img@s1" &&
        pass "$M: rbd export: the snapshot and the HEAD hold what was written; object maps check clean"

    # LUN 3: a striped image in a separate data pool, thin-provisioned, so
    # that qemu-io's discard becomes a SCSI UNMAP (bs_rbd: rbd_discard).
    IMAGES+=("$img-st")
    step st-create c_rbd create --size 32M --stripe-unit 64K --stripe-count 4 \
        ${DATA_POOL:+--data-pool "$DATA_POOL"} "$POOL/$img-st" || return
    step lun3-new T --lld iscsi --op new --mode logicalunit --tid 1 --lun 3 \
        --bstype rbd --backing-store "$POOL/$img-st" --bsopts "conf=$CEPH_CONF" || return
    step lun3-thin T --lld iscsi --op update --mode logicalunit --tid 1 --lun 3 \
        --params thin_provisioning=1 || return
    if step lun3-io qio 3 "write -P 0x77 0 8M" "write -P 0x99 12M 300k" "discard 2M 1M" \
        "read -P 0x77 0 2M" "read -P 0 2M 1M" "read -P 0x77 3M 5M" "read -P 0x99 12M 300k" "flush"; then
        if ! qio_ok "$D/lun3-io.log"; then
            fail "$M: lun3-io" "qemu-io on LUN 3 reported an error"
            show_log "$D/lun3-io.log"
        elif expect lun3-io "rbd export $POOL/$img-st (md5)" "$(export_md5 "$img-st")" \
            "$(file_md5 $size 0x77:0:$((8 * MiB)) 0:$((2 * MiB)):$MiB 0x99:$((12 * MiB)):$((300 * 1024)))" &&
            omap_ok lun3-io "$img-st"; then
            pass "$M: LUN 3 (striped, data pool ${DATA_POOL:-none}): writes and an UNMAP (rbd_discard) over iSCSI; the real librbd reads the same data"
        fi
    fi
    [[ -n $TGTPID ]] || return

    # Away with it all.
    step lun3-delete T --lld iscsi --op delete --mode logicalunit --tid 1 --lun 3 &&
        step lun2-delete T --lld iscsi --op delete --mode logicalunit --tid 1 --lun 2 &&
        step lun1-delete T --lld iscsi --op delete --mode logicalunit --tid 1 --lun 1 &&
        step target-delete T --lld iscsi --op delete --mode target --tid 1 &&
        pass "$M: LUNs and target deleted"
    [[ -n $TGTPID ]] || return
    bindings
    stop_tgtd
    if [[ $TGTRC == 0 ]]; then
        pass "$M: tgtd ran to the end and exited 0 (tgtadm --op delete --mode system)"
    else
        fail "$M: tgtd-exit" "tgtd: $(rbdl_rc_text "$TGTRC")"
        show_log "$D/tgtd.log"
    fi
    local w
    w=$(c_rbd status --format json "$POOL/$img" 2>/dev/null |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)["watchers"]))' 2>/dev/null)
    expect watchers "watchers of $POOL/$img once tgtd is gone" "$w" 0 &&
        pass "$M: no watcher left on $POOL/$img (tgtd closed its images)"
}

for m in $MODES; do
    case $m in
    preload | substitute | librbd) run_mode "$m" ;;
    *) die "unknown mode '$m' in RBDLITE_CONSUMER_MODES (preload, substitute, librbd)" ;;
    esac
    stop_tgtd
done

rbdl_summary
