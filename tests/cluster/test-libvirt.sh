#!/usr/bin/env bash
# test-libvirt.sh - Debian's unmodified libvirtd, its rbd storage backend
# (libvirt_storage_backend_rbd.so) and virsh, with librbdlite in place of
# librbd, judged by the real librbd (the rbd CLI).
#
# libvirtd is started by this script, once per mode:
#   preload     under lib/tools/rbdlite-run (LD_PRELOAD of librbdlite.so)
#   substitute  with LD_LIBRARY_PATH=<the drop-in lib/librbd1 librbd.so.1>
#   librbd      the real librbd, nothing substituted (only when asked for:
#               RBDLITE_CONSUMER_MODES="librbd preload substitute"; it shows
#               that the expectations below are librbd's)
# It runs as the unprivileged user nobody, so that it is a session daemon
# whose sockets, pid file, config, pool definitions and log all live in a
# private temporary directory (XDG_RUNTIME_DIR, XDG_CONFIG_HOME, HOME):
# nothing collides with a system libvirtd, and no system directory is
# touched.  The libraries it loads are copied there (a build tree in a
# home directory may not be readable by nobody).  The test cluster has
# "auth ... = none" (its ceph.conf), so the pool needs no ceph secret;
# libvirt reads no ceph.conf, the pool names the monitor.
#
# Steps, each checked with the rbd CLI on the real librbd after it ran:
#   pool-define-as / pool-start / pool-refresh (an image made by the rbd
#     CLI is listed with its size), pool-info;
#   vol-create-as (size, format 2, the same features as `rbd create`);
#   vol-clone twice (a clone of a protected libvirt-* snapshot; the second
#     clone reuses that snapshot, found by rbd_diff_iterate2; the clones'
#     data is the parent's);
#   vol-resize (grow: the new part reads zeros);
#   vol-wipe, zero and trim algorithms (after qemu-io on the real librbd
#     wrote a pattern: the image reads zeros);
#   vol-delete without --delete-snapshots of an image with snapshots (made
#     by the rbd CLI, one protected) must fail and leave it intact; with
#     --delete-snapshots it goes; clones, then their parent;
#   pool-refresh (nothing left), pool-destroy, pool-undefine.
# After every step libvirtd must still be running; LD_DEBUG shows every
# rbd_* the backend imports bound to librbdlite; at the end libvirtd exits
# 0 on SIGTERM and its log has no error from the rbd backend but the
# expected refusal of the first vol-delete.
#
# Needs: root, CEPH_CONF, RBDLITE_TEST_POOL (a running cluster), libvirtd,
# virsh, setpriv, rbd, qemu-io (tests/deps.sh consumers judges).  Prints
# one line per check and "N passed, M failed"; exits non-zero if anything
# failed.  Every daemon it started is stopped, even on failure.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env libvirtd virsh setpriv rbd qemu-io python3 timeout md5sum
rbdl_qemu_sanrt

DROPIN_DIR=${RBDLITE_DROPIN_DIR:-$BUILDDIR/lib/librbd1/.libs}
[[ -e $DROPIN_DIR/librbd.so.1 ]] || die "drop-in library not built: $DROPIN_DIR/librbd.so.1"
MODES=${RBDLITE_CONSUMER_MODES:-preload substitute}
((EUID == 0)) || die "this test needs root (it runs libvirtd as the user nobody)"
RUN_UID=$(id -u nobody 2>/dev/null) || die "no user 'nobody' to run libvirtd as"
RUN_GID=$(id -g nobody)
VIRSH_TMO=60
MiB=$((1024 * 1024))

# The monitor's address, from the cluster's ceph.conf ("mon host = ...").
MON=$(sed -n 's/^[[:space:]]*mon[ _]host[[:space:]]*=[[:space:]]*//p' "$CEPH_CONF" | head -n 1)
[[ -n $MON && $MON != *,* ]] || die "cannot take one monitor address from $CEPH_CONF (got '$MON')"

rbdl_workdir libvirt
chmod 755 "$TMP"
IMAGES=()
LVPID=
cleanup() {
    stop_libvirtd
    rbdl_remove_images 30 "$POOL/"
    rbdl_rm_workdir
}
rbdl_traps

# Private copies of the libraries and of the wrapper, readable by nobody.
mkdir -p "$TMP/lib" "$TMP/librbd1"
cp -- "$LIB" "$TMP/lib/librbdlite.so.0" || die "cannot copy $LIB"
cp -- "$DROPIN_DIR/librbd.so.1" "$TMP/librbd1/librbd.so.1" || die "cannot copy the drop-in"
cp -- "$WRAPPER" "$TMP/lib/rbdlite-run" || die "cannot copy $WRAPPER"
chmod -R a+rX "$TMP/lib" "$TMP/librbd1"

# The data the tests compare with: 16 MiB of random bytes.
head -c $((16 * MiB)) /dev/urandom >"$TMP/data.bin"
zeros_md5() { head -c "$1" /dev/zero | md5sum | cut -d' ' -f1; }
DATA_MD5=$(md5sum <"$TMP/data.bin" | cut -d' ' -f1)

# ---- libvirtd -----------------------------------------------------------------

# as_nobody VAR=VALUE... -- CMD...: exec CMD as nobody in the mode's
# private environment (nothing of ours is inherited: env -i).  It replaces
# the shell it runs in: call it in a subshell, ( as_nobody ... ), so that
# a background one's $! is the command's pid.
as_nobody() {
    local -a vars=()
    while [[ $1 != -- ]]; do
        vars+=("$1")
        shift
    done
    shift
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C HOME="$D/home" \
        XDG_RUNTIME_DIR="$D/run" XDG_CONFIG_HOME="$D/config" XDG_CACHE_HOME="$D/cache" \
        LIBVIRT_AUTOSTART=0 "${vars[@]}" \
        setpriv --reuid="$RUN_UID" --regid="$RUN_GID" --clear-groups -- "$@"
}

# start_libvirtd MODE: libvirtd for MODE in $D; sets LVPID; returns 1 (with
# a FAIL) if it does not answer within 30 s.
start_libvirtd() {
    local mode=$1
    local -a pre=()
    rm -rf -- "$D"
    mkdir -p "$D"/{home,run,config,cache,ld}
    chmod 700 "$D/run"
    chown -R "$RUN_UID:$RUN_GID" "$D"
    cat >"$D/libvirtd.conf" <<EOF
log_outputs="1:file:$D/home/libvirtd.log"
log_filters="1:storage 3:util 3:rpc 3:event 3:object 3:conf 3:qemu 3:security"
EOF
    chmod 644 "$D/libvirtd.conf"
    case $mode in
    preload) pre=(env RBDLITE_RUN_LIB="$TMP/lib/librbdlite.so.0" ${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}" "$TMP/lib/rbdlite-run") ;;
    substitute) pre=(env LD_LIBRARY_PATH="$TMP/librbd1" ${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}") ;;
    librbd) pre=(env) ;;
    esac
    # LD_DEBUG set only once running as nobody, who must be able to write
    # its files.  --timeout: a daemon that outlives this script (SIGKILLed)
    # goes once idle.
    (as_nobody -- env LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$D/ld/b" \
        "${pre[@]}" libvirtd --timeout 600 -f "$D/libvirtd.conf" -p "$D/run/libvirtd.pid") \
        >"$D/libvirtd.out" 2>&1 &
    LVPID=$!
    if rbdl_await_answer "$LVPID" 300 libvirtd_answers; then
        if [[ $(cat "$D/run/libvirtd.pid" 2>/dev/null) != "$LVPID" ]]; then
            fail "$mode: libvirtd's pid file says $(cat "$D/run/libvirtd.pid" 2>/dev/null), not $LVPID"
            return 1
        fi
        pass "$mode: libvirtd (pid $LVPID) started and answers virsh"
        return 0
    fi
    if kill -0 "$LVPID" 2>/dev/null; then
        fail "$mode: libvirtd-start" "libvirtd does not answer 'virsh pool-list' within 30 s"
    else
        wait "$LVPID" 2>/dev/null
        fail "$mode: libvirtd-start" "libvirtd exited before answering virsh ($(rbdl_rc_text $?))"
        LVPID=
    fi
    grep -v -e 'binding file' -e '^ *[0-9]*:' "$D/libvirtd.out" >"$D/libvirtd.err" 2>/dev/null
    show_log "$D/libvirtd.err"
    grep -E ' error : ' "$D/home/libvirtd.log" | grep -Ev 'emulator|capabilities|udev|DBus|kvm|dnsmasq' |
        tail -n 5 | sed 's/^/    | /'
    return 1
}

# stop_libvirtd: SIGTERM, 15 s, then SIGKILL; sets LVRC to its exit status.
stop_libvirtd() {
    local i
    LVRC=
    [[ -n $LVPID ]] || return 0
    kill -TERM "$LVPID" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
        kill -0 "$LVPID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$LVPID" 2>/dev/null; then
        echo "$PROG: libvirtd $LVPID ignored SIGTERM for 15 s: SIGKILL" >&2
        kill -KILL "$LVPID" 2>/dev/null
    fi
    wait "$LVPID" 2>/dev/null
    LVRC=$?
    LVPID=
}

# vsh ARGS...: virsh (as nobody) on this mode's daemon.
vsh() {
    (as_nobody -- timeout -k 5 "$VIRSH_TMO" \
        virsh -q -c "qemu:///session?socket=$D/run/libvirt/libvirt-sock" "$@")
}

# libvirtd_answers: this mode's daemon has its socket and answers virsh.
libvirtd_answers() {
    [[ -S $D/run/libvirt/libvirt-sock ]] && vsh pool-list --all >/dev/null 2>&1
}

# alive STEP: libvirtd is still running after STEP, else a FAIL (and 1).
alive() {
    kill -0 "$LVPID" 2>/dev/null && return 0
    wait "$LVPID" 2>/dev/null
    fail "$M: libvirtd died during '$1' ($(rbdl_rc_text $?))"
    grep -v -e 'binding file' -e '^ *[0-9]*:' "$D/libvirtd.out" >"$D/libvirtd.err" 2>/dev/null
    show_log "$D/libvirtd.err"
    grep -v ' debug : ' "$D/home/libvirtd.log" | tail -n 5 | sed 's/^/    | /'
    tail -n 3 "$D/home/libvirtd.log" | sed 's/^/    | /'
    LVPID=
    return 1
}

# V STEP ok|fails ARGS...: virsh ARGS, which must succeed (ok) or fail
# (fails, with libvirt's error message); then libvirtd must be alive.
# Output in $D/STEP.log.  Returns 1 on failure (with a FAIL line).
V() {
    local step=$1 want=$2 rc
    shift 2
    vsh "$@" >"$D/$step.log" 2>&1
    rc=$?
    alive "virsh $*" || return 2
    if [[ $want == ok ]] && ((rc != 0)); then
        fail "$M: $step" "virsh $* failed ($(rbdl_rc_text "$rc" "$VIRSH_TMO"))"
        show_log "$D/$step.log"
        return 1
    fi
    if [[ $want == fails ]] && ((rc == 0)); then
        fail "$M: $step" "virsh $* succeeded, expected an error"
        show_log "$D/$step.log"
        return 1
    fi
    return 0
}

# ---- checks with the real librbd ----------------------------------------------

# info IMG FIELD: a field of `rbd info --format json` (python expression on d).
info() { rbdl_info "$@"; }
# export_md5 IMG: md5 of the image's data (HEAD).
export_md5() { c_rbd export --no-progress "$POOL/$1" - 2>/dev/null | md5sum | cut -d' ' -f1; }
# gone IMG: the image does not exist (rbd info says so).
gone() {
    local out
    out=$(c_rbd info "$POOL/$1" 2>&1)
    [[ $out == *'No such file or directory'* ]]
}
# snaps IMG: "name:protected" of each snapshot, sorted, space-separated.
snaps() {
    c_rbd snap ls --format json "$POOL/$1" 2>/dev/null | python3 -c '
import json, sys
print(" ".join(sorted("%s:%s" % (s["name"], s["protected"]) for s in json.load(sys.stdin))))' 2>/dev/null
}
# expect STEP WHAT GOT WANTED: GOT == WANTED, else FAIL naming WHAT.
expect() { rbdl_expect "$@"; }
# omap_ok STEP IMG[@SNAP]: rbdl_omap_ok (testlib.sh).
omap_ok() { rbdl_omap_ok "$@"; }
# qio IMG CMD...: qemu-io on the real librbd (nothing substituted).
qio() {
    local img=$1
    shift
    local -a c=()
    for x in "$@"; do c+=(-c "$x"); done
    timeout -k 5 60 env -u LD_PRELOAD -u LD_LIBRARY_PATH qemu-io -f raw "${c[@]}" \
        "rbd:$POOL/$img:conf=$CEPH_CONF" >"$D/qio.log" 2>&1 && ! grep -q 'failed' "$D/qio.log"
}

# bindings: every rbd_* the backend imports bound to librbdlite.
bindings() {
    local obj=libvirt_storage_backend_rbd.so t s missing=() f
    case $M in
    preload) t=$TMP/lib/librbdlite.so.0 ;;
    substitute) t=$TMP/librbd1/librbd.so.1 ;;
    *) return 0 ;;
    esac
    f=$(grep -l "$obj \[0\] to .*symbol \`rbd_open'" "$D"/ld/b.* 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "$M: backend-binds-to-librbdlite" "no LD_DEBUG binding of $obj's rbd_open"
        return
    fi
    for s in $(nm -D --undefined-only "$(grep -o "/[^ ]*/$obj" "$f" | head -n 1)" |
        awk '$2 ~ /^rbd_/ { print $2 }'); do
        grep -qF "/$obj [0] to $t [0]: normal symbol \`$s'" "$f" || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$M: backend-binds-to-librbdlite" "not bound to $t: ${missing[*]}"
        grep -F "/$obj [0] to" "$f" | grep -F "symbol \`rbd_" | grep -vF " to $t " |
            head -n 5 | sed 's/^/    | /'
    else
        pass "$M: backend-binds-to-librbdlite (every rbd_* of $obj bound to ${t##*/})"
    fi
    if [[ $M == substitute ]] && grep -h 'calling init: .*librbd\.so' "$D"/ld/b.* |
        grep -vF "$TMP/librbd1/" | sort -u >"$D/real" && [[ -s $D/real ]]; then
        # The delegation layer may load the real librbd for a forwarded call
        # (dlopen'ed RTLD_LOCAL by path): not an error, shown for the record.
        echo "NOTE $M: the real librbd was loaded too (forwarded calls): $(head -n 1 "$D/real")"
    fi
}

# ---- one mode -------------------------------------------------------------------

run_mode() {
    M=$1
    D=$TMP/$M
    local P=rbdl-$M-$$ u=lv$RANDOM-$M
    local src=$u-src new=$u-new cl=$u-clone cl2=$u-clone2 parent snap1 f

    # An image made by the rbd CLI, for libvirt to find: 16 MiB of data.
    IMAGES+=("$src")
    c_rbd import --no-progress "$TMP/data.bin" "$POOL/$src" >"$TMP/import.log" 2>&1 ||
        { fail "$M: rbd import $POOL/$src" "$(tail -n 1 "$TMP/import.log")"; return; }
    IMAGES+=("$new" "$cl" "$cl2")

    start_libvirtd "$M" || return

    # 1. The pool.
    V pool-define ok pool-define-as "$P" rbd --source-host "$MON" --source-name "$POOL" || return
    V pool-start ok pool-start "$P" || return
    V pool-refresh ok pool-refresh "$P" || return
    if V pool-info ok pool-info "$P" && grep -q '^State:[[:space:]]*running' "$D/pool-info.log"; then
        pass "$M: pool-define-as/pool-start/pool-refresh: pool $P is running"
    else
        [[ -n $LVPID ]] || return
        fail "$M: pool-info" "pool $P is not running"
        show_log "$D/pool-info.log"
    fi
    V vol-list ok vol-list "$P" || return
    if V vol-info-src ok vol-info "$src" --pool "$P" --bytes &&
        grep -q "^Capacity:[[:space:]]*$((16 * MiB)) bytes" "$D/vol-info-src.log" &&
        grep -qw "$src" "$D/vol-list.log"; then
        pass "$M: pool-refresh lists $src (made by the rbd CLI) with its 16 MiB"
    else
        [[ -n $LVPID ]] || return
        fail "$M: pool-refresh" "$src not listed with 16 MiB"
        show_log "$D/vol-list.log"
        show_log "$D/vol-info-src.log"
    fi

    # 2. vol-create-as.
    V vol-create-as ok vol-create-as "$P" "$new" 64M || return
    if expect vol-create-as "size" "$(info "$new" 'd["size"]')" $((64 * MiB)) &&
        expect vol-create-as "format" "$(info "$new" 'd["format"]')" 2 &&
        expect vol-create-as "features (those of rbd create)" \
            "$(info "$new" '",".join(d["features"])')" "$(info "$src" '",".join(d["features"])')"; then
        pass "$M: vol-create-as $new 64M: rbd info agrees"
    fi

    # 3. vol-clone, twice.
    if V vol-clone ok vol-clone "$src" "$cl" --pool "$P"; then
        parent=$(info "$cl" '"%s/%s@%s" % (d["parent"]["pool"], d["parent"]["image"], d["parent"]["snapshot"])')
        snap1=${parent##*@}
        if expect vol-clone "parent" "${parent%@*}" "$POOL/$src" &&
            expect vol-clone "parent snapshot name" "${snap1%%-*}" libvirt &&
            expect vol-clone "snapshots of $src" "$(snaps "$src")" "$snap1:true" &&
            expect vol-clone "overlap" "$(info "$cl" 'd["parent"]["overlap"]')" $((16 * MiB)) &&
            expect vol-clone "clone's data (md5)" "$(export_md5 "$cl")" "$DATA_MD5"; then
            pass "$M: vol-clone $src $cl: a clone of $src@$snap1 (protected) with its data"
        fi
        if V vol-clone2 ok vol-clone "$src" "$cl2" --pool "$P" &&
            expect vol-clone2 "parent" "$(info "$cl2" '"%s/%s@%s" % (d["parent"]["pool"], d["parent"]["image"], d["parent"]["snapshot"])')" "$POOL/$src@$snap1" &&
            expect vol-clone2 "snapshots of $src" "$(snaps "$src")" "$snap1:true" &&
            expect vol-clone2 "clone's data (md5)" "$(export_md5 "$cl2")" "$DATA_MD5"; then
            pass "$M: vol-clone $src $cl2 reuses $src@$snap1 (no diff since)"
        fi
    fi
    [[ -n $LVPID ]] || return

    # 4. vol-resize.
    if V vol-resize ok vol-resize "$cl" 32M --pool "$P" &&
        expect vol-resize "size" "$(info "$cl" 'd["size"]')" $((32 * MiB)) &&
        expect vol-resize "data (md5: the parent's, then zeros)" "$(export_md5 "$cl")" \
            "$( (cat "$TMP/data.bin"; head -c $((16 * MiB)) /dev/zero) | md5sum | cut -d' ' -f1)"; then
        pass "$M: vol-resize $cl 32M: grown, the new part reads zeros"
    fi
    [[ -n $LVPID ]] || return

    # 5. vol-wipe, after the real librbd wrote a pattern.
    for alg in zero trim; do
        if ! qio "$new" "write -P 0x5a 0 8M" "write -P 0xa5 40M 8M"; then
            fail "$M: vol-wipe-$alg" "qemu-io (real librbd) could not write the pattern"
            show_log "$D/qio.log"
            continue
        fi
        if [[ $(export_md5 "$new") == "$(zeros_md5 $((64 * MiB)))" ]]; then
            fail "$M: vol-wipe-$alg" "the pattern written by qemu-io is not there"
            continue
        fi
        if V vol-wipe-$alg ok vol-wipe "$new" --pool "$P" --algorithm "$alg" &&
            expect vol-wipe-$alg "data (md5 of zeros)" "$(export_md5 "$new")" "$(zeros_md5 $((64 * MiB)))" &&
            expect vol-wipe-$alg "size" "$(info "$new" 'd["size"]')" $((64 * MiB)) &&
            omap_ok vol-wipe-$alg "$new"; then
            pass "$M: vol-wipe --algorithm $alg $new: reads zeros, object map checks clean"
        fi
        [[ -n $LVPID ]] || return
    done

    # 6. vol-delete.
    if ! { c_rbd snap create "$POOL/$new@s1" && c_rbd snap create "$POOL/$new@s2" &&
        c_rbd snap protect "$POOL/$new@s2"; } >"$D/snaps.log" 2>&1; then
        fail "$M: vol-delete" "rbd snap create $POOL/$new@s1, @s2, snap protect @s2 failed"
        show_log "$D/snaps.log"
    fi
    if V vol-delete-refused fails vol-delete "$new" --pool "$P" &&
        expect vol-delete-refused "libvirt's error" \
            "$(grep -c "failed to remove volume '$POOL/$new'" "$D/vol-delete-refused.log")" 1 &&
        expect vol-delete-refused "snapshots after the refusal" "$(snaps "$new")" "s1:false s2:true" &&
        expect vol-delete-refused "size after the refusal" "$(info "$new" 'd["size"]')" $((64 * MiB)); then
        pass "$M: vol-delete $new (with snapshots, no --delete-snapshots) is refused (rbd_remove fails)"
    fi
    [[ -n $LVPID ]] || return
    if V vol-delete-snaps ok vol-delete "$new" --pool "$P" --delete-snapshots && gone "$new"; then
        pass "$M: vol-delete --delete-snapshots $new: gone (protected snapshot too)"
    elif [[ -n $LVPID ]]; then
        fail "$M: vol-delete-snaps" "$POOL/$new still exists: snapshots '$(snaps "$new")'"
    fi
    [[ -n $LVPID ]] || return
    for f in "$cl2" "$cl"; do
        if V "vol-delete-$f" ok vol-delete "$f" --pool "$P" && gone "$f"; then
            pass "$M: vol-delete $f (a clone): gone"
        elif [[ -n $LVPID ]]; then
            fail "$M: vol-delete-$f" "$POOL/$f still exists"
        fi
        [[ -n $LVPID ]] || return
    done
    if V vol-delete-src ok vol-delete "$src" --pool "$P" --delete-snapshots && gone "$src"; then
        pass "$M: vol-delete --delete-snapshots $src (the clones' parent): gone"
    elif [[ -n $LVPID ]]; then
        fail "$M: vol-delete-src" "$POOL/$src still exists: snapshots '$(snaps "$src")'"
    fi
    [[ -n $LVPID ]] || return

    # 7. The pool again, then away.
    if V pool-refresh2 ok pool-refresh "$P" && V vol-list2 ok vol-list "$P" &&
        ! grep -q "$u-" "$D/vol-list2.log"; then
        pass "$M: pool-refresh: none of the deleted volumes is listed"
    elif [[ -n $LVPID ]]; then
        fail "$M: pool-refresh2" "deleted volumes still listed"
        show_log "$D/vol-list2.log"
    fi
    [[ -n $LVPID ]] || return
    V pool-destroy ok pool-destroy "$P" && V pool-undefine ok pool-undefine "$P" &&
        pass "$M: pool-destroy, pool-undefine"
    [[ -n $LVPID ]] || return

    bindings
    # librbdlite complaining that a forwarded call had nowhere to go.
    if grep -h 'forwarded to the system' "$D/libvirtd.out" >"$D/fwd" 2>/dev/null; then
        fail "$M: forwarded-calls" "librbdlite could not forward calls to the real librbd"
        show_log "$D/fwd"
    fi
    # The backend's errors: only the refused vol-delete (librbd's
    # rbd_remove of an image with snapshots) may be there.
    grep -E ' error : .*(RBD|rbd|Rbd)' "$D/home/libvirtd.log" |
        grep -v 'failed to remove volume' >"$D/errors"
    if [[ -s $D/errors ]]; then
        fail "$M: libvirtd-log" "errors from the rbd backend"
        show_log "$D/errors"
    else
        pass "$M: libvirtd log: no rbd backend errors but the refused vol-delete"
    fi
    stop_libvirtd
    if [[ $LVRC == 0 ]]; then
        pass "$M: libvirtd ran to the end and exited 0 on SIGTERM"
    else
        fail "$M: libvirtd-exit" "libvirtd: $(rbdl_rc_text "$LVRC") after SIGTERM"
        show_log "$D/libvirtd.out"
    fi
}

for m in $MODES; do
    case $m in
    preload | substitute | librbd) run_mode "$m" ;;
    *) die "unknown mode '$m' in RBDLITE_CONSUMER_MODES (preload, substitute, librbd)" ;;
    esac
    stop_libvirtd
done

rbdl_summary
