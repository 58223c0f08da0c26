#!/usr/bin/env bash
# test-faults.sh - the fault matrix: OSD, monitor and client failures under
# a verifying write load, on librbdlite and, as the reference, on the real
# librbd, side by side, with both acknowledgement policies: rbd_cache=false
# (a write is acknowledged once the OSDs have it) and the defaults
# (write-around: acknowledged once sent, durable once a flush covering it
# completed).
#
# Starts a cluster of its own (cluster.sh with RBDLITE_OSDS=3: one monitor,
# three BlueStore OSDs on sparse files, pools of size 3 / min_size 2,
# failure detection in seconds) and ignores the shared one.  For each
# library (lite, librbd) and image kind (default: rbd's default features;
# layering: layering only; luks: default features, LUKS2-formatted by the
# rbd CLI, its encryption loaded by the writer, 512-byte writes, so every
# write is a read-modify-write of a 4 KiB encryption block, acknowledged
# early under write-around) every row runs tests/cluster/faultio (4 KiB
# aio writes at iodepth 8, a header and generation in every block, the
# acknowledged generations in a state file that survives SIGKILL) while
# the fault happens:
#   osd-kill    kill -9 one OSD mid-run and restart it
#   min-size    two of the three OSDs down (below min_size) for FAULT_S
#               seconds, then back: I/O blocks and resumes
#   mon-kill    the monitor killed with -9 and restarted on its port
#   osd-stop    one OSD SIGSTOPped for FAULT_S seconds, then SIGCONT
#   quota       the pool's quota reached during the writes, then lifted
#   client-kill the writer killed with SIGKILL while it owns the lock;
#               a librbd client, then a librbdlite one, take the lock over
#               and write
#   blocklist   the writer blocklisted while it owns the lock: its I/O
#               fails (librbd's errno), rbd_is_exclusive_lock_owner says
#               what librbd says; then librbd and librbdlite take over
# Every row runs with each policy (RBDLITE_FAULTS_POLICIES, default
# "off on"): off passes --cache off to faultio (rbd_cache=false); on,
# --cache on (the libraries' defaults, and an rbd_aio_flush every 50 ms).
# Afterwards every writer's blocks are verified through librbdlite and
# through the real librbd: a librbdlite writer must have lost 0 durable
# writes (acknowledged with the cache off; covered by a completed flush
# with it on), or the row fails; for a librbd writer, the reference, both
# verifications must agree and its losses are counted in the table.
# Early-acknowledged writes that no completed flush covered may be lost to
# a fault (the contract of a volatile write cache): the table counts them
# ("unflushed") for both libraries.  Object-map images must pass
# `rbd object-map check` with clean flags.
# A hang is a failure: every writer runs under a time limit, and a writer
# that hits it gets a backtrace (gdb, when installed) in the log.
# Per row the table at the end gives, for each library: lost writes, the
# longest I/O stall (ms) and the errors returned; rows 1-6 must return no
# error, and in the blocklist row both libraries must return the same
# errno and the same rbd_is_exclusive_lock_owner answer.
#
# RBDLITE_FAULTS_LONG=1 runs the long form (20 s faults, longer writers,
# every row on every kind with both policies); the default (CI) uses 8 s
# faults, runs the rows that are not about the lock on default-feature
# images only, the write-around policy on default-feature images only,
# and encrypted images in the osd-kill and blocklist rows with
# write-around only.  RBDLITE_FAULTS_ROWS, RBDLITE_FAULTS_KINDS and
# RBDLITE_FAULTS_POLICIES select rows, kinds and policies.  Prints "N passed, M failed"
# last; exits non-zero on any failure.

# cluster-test: own cluster
# cluster-test: time limit 1800

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
BUILDDIR=${RBDLITE_BUILDDIR:-$(cd -- "$HERE/../.." && pwd)}
rbdl_need_cmds rbd ceph python3 timeout
FIO=$BUILDDIR/tests/cluster/faultio
rbdl_need_progs "$FIO"
LITELIB=${RBDLITE_LIB:-$BUILDDIR/lib/.libs/librbdlite.so}
REFLIB=librbd.so.1
[[ -e $LITELIB ]] || die "librbdlite not built: $LITELIB"
ROWS=${RBDLITE_FAULTS_ROWS:-osd-kill min-size mon-kill osd-stop quota client-kill blocklist}
KINDS=${RBDLITE_FAULTS_KINDS:-default layering luks}
POLICIES=${RBDLITE_FAULTS_POLICIES:-off on}
# Which rows run on which image kinds: all on both in the long form; in
# the short one (CI) the rows about the lock on both, the others on
# default-feature images only.
if [[ ${RBDLITE_FAULTS_LONG:-0} == 1 ]]; then
    FAULT_S=20 PRE_S=4 WRITE_S=12 TAKE_S=6
    LAYERING_ROWS=${ROWS} LUKS_ROWS=${ROWS}
    LAYERING_POLICIES=${POLICIES} LUKS_POLICIES=${POLICIES}
else
    FAULT_S=8 PRE_S=3 WRITE_S=6 TAKE_S=3
    LAYERING_ROWS="client-kill blocklist"
    LAYERING_POLICIES=off
    LUKS_ROWS="osd-kill blocklist"
    LUKS_POLICIES=on
fi
CLUSTER=$HERE/cluster.sh
rbdl_workdir faults
C3=$TMP/c3
cleanup() {
    [[ -n ${WPID:-} ]] && kill -9 "$WPID" 2>/dev/null
    "$CLUSTER" stop "$C3" >/dev/null 2>&1
    rbdl_rm_workdir
}
rbdl_traps

echo "$PROG: starting a 3-OSD cluster in $C3"
RBDLITE_OSDS=3 "$CLUSTER" start "$C3" || die "cannot start the 3-OSD cluster"
# shellcheck disable=SC1091
. "$C3/env" || die "no $C3/env"
export CEPH_CONF
POOL=$RBDLITE_TEST_POOL
CEPH_BIN=$(type -P ceph)
ceph() { timeout -k 5 60 "$CEPH_BIN" "$@"; }
cl() { "$CLUSTER" "$@" "$C3" >>"$TMP/cluster.log" 2>&1; }
cl_n() { local c=$1; shift; "$CLUSTER" "$c" "$C3" "$@" >>"$TMP/cluster.log" 2>&1; }

# lib_path LIB
lib_path() { [[ $1 == lite ]] && echo "$LITELIB" || echo "$REFLIB"; }

# writer TAG LIB IMG FIRST SECS [--stop-on-error]: faultio write in the
# background (WPID: faultio itself, so that kill -9 kills the client),
# with the row's policy (POLICY: --cache off|on), output in $TMP/TAG.out,
# state in $TMP/TAG.state.
writer() {
    local tag=$1 lib=$2 img=$3 first=$4 secs=$5
    shift 5
    "$FIO" --lib "$(lib_path "$lib")" \
        --pool "$POOL" --image "$img" --state "$TMP/$tag.state" write \
        --seconds "$secs" --depth 8 --blocks 1024 --first "$first" \
        --cache "$POLICY" "${KOPT[@]}" --ready "$TMP/$tag.ready" "$@" \
        >"$TMP/$tag.out" 2>"$TMP/$tag.err" &
    WPID=$!
    # The fault comes PRE_S seconds into the writing, not into the open
    # (loading an encrypted image's key takes seconds).
    local deadline=$((SECONDS + 60))
    while [[ ! -e $TMP/$tag.ready ]] && kill -0 "$WPID" 2>/dev/null &&
        ((SECONDS < deadline)); do
        sleep 0.1
    done
}

# wait_writer TAG SECS: wait up to SECS for WPID.  A writer still running
# then hung: its threads' stacks go into the log, it is killed, and the
# row fails.
wait_writer() {
    local tag=$1 deadline=$((SECONDS + $2)) rc
    while kill -0 "$WPID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
    if kill -0 "$WPID" 2>/dev/null; then
        echo "$tag: the writer still runs after $2 s; its stacks:" >>"$TMP/hung.log"
        backtrace_hung "$WPID" >>"$TMP/hung.log"
        kill -9 "$WPID"
        wait "$WPID" 2>/dev/null
        WPID=
        fail "$tag: the writer finished (no hang)" "still running after $2 s"
        show_log "$TMP/hung.log"
        return 1
    fi
    wait "$WPID"
    rc=$?
    WPID=
    ((rc == 0)) || { fail "$tag: writer exit $rc" "$(tail -3 "$TMP/$tag.err")"; return 1; }
    return 0
}

# backtrace_hung PID: gdb's backtrace of every thread of PID into the log.
backtrace_hung() {
    command -v gdb >/dev/null || return 0
    gdb -p "$1" -batch -ex 'thread apply all bt' 2>&1 | sed 's/^/    /' | tail -80
}

# field TAG KEY: KEY's value from the writer's key=value line.
field() { tr ' ' '\n' <"$TMP/$1.out" | sed -n "s/^$2=//p" | head -1; }

# verify TAG IMG: the writer's blocks through both libraries.  A
# librbdlite writer (TAG ends in -lite) must have lost no durable write,
# read through either library.  A librbd writer is the reference: what it
# lost is librbd's own result (librbd 16.2.15 has been seen to complete a
# flush whose early-acknowledged writes a blocklisting or a SIGKILL then
# undid), counted in the table; what is asserted is that librbdlite reads
# the image exactly as librbd does (the same counts).
verify() {
    local tag=$1 img=$2 l out ok=0 rc counts=() rcs=() nz
    for l in lite librbd; do
        # Encrypted: librbd reads a never-written block inside an object
        # that exists as noise, librbdlite as zeros; both mean "not
        # landed", but for librbdlite reading its own writes.
        nz=()
        [[ ${#KOPT[@]} -gt 0 && ( $tag != *-lite || $l != lite ) ]] && nz=(--noise-unlanded)
        out=$(timeout -k 5 120 "$FIO" --lib "$(lib_path "$l")" --pool "$POOL" \
            --image "$img" --state "$TMP/$tag.state" "${KOPT[@]}" "${nz[@]}" verify 2>>"$TMP/$tag.verify.err")
        rc=$?
        echo "$l: $out" >>"$TMP/$tag.verify"
        counts+=("$(grep -o 'checked=[0-9]* lost=[0-9]* bad=[0-9]* unflushed_lost=[0-9]*' <<<"$out" | head -1)")
        rcs+=("$rc")
        if [[ $tag == *-lite ]] && ((rc != 0)); then
            fail "$tag: verified through $l" "$out $(tail -2 "$TMP/$tag.verify.err")"
            ok=1
        fi
    done
    LOST[$tag]=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' "$TMP/$tag.verify" | sort -n | tail -1)
    UNFL[$tag]=$(sed -n 's/.*unflushed_lost=\([0-9]*\).*/\1/p' "$TMP/$tag.verify" | sort -n | tail -1)
    if [[ $tag == *-lite ]]; then
        ((ok == 0)) && pass "$tag: no durable write lost (verified through librbdlite and librbd)"
        return $ok
    fi
    if [[ -n ${counts[0]} && ${counts[0]} == "${counts[1]}" && ${rcs[0]} == "${rcs[1]}" ]]; then
        pass "$tag: librbdlite reads librbd's writes as librbd does (${counts[0]})"
        ((rcs[1] == 0)) || echo "NOTE $tag: the reference, librbd, lost durable writes: ${counts[1]}"
        return 0
    fi
    fail "$tag: librbdlite reads librbd's writes as librbd does" \
        "lite: ${counts[0]:-?} (exit ${rcs[0]}), librbd: ${counts[1]:-?} (exit ${rcs[1]}) $(tail -2 "$TMP/$tag.verify.err")"
    return 1
}

# omap_ok TAG IMG KIND: object map and flags of an object-map image.
omap_ok() {
    [[ $3 == default || $3 == luks ]] || return 0
    rbdl_omap_ok "$1" "$POOL/$2" && pass "$1: object map checks clean"
}

# pool_full SECS yes|no: wait until POOL's full flag is set (yes) or gone.
pool_full() {
    local deadline=$((SECONDS + $1)) f
    while ((SECONDS < deadline)); do
        f=$(ceph osd pool ls detail 2>/dev/null | grep "'$POOL'" | grep -c full)
        [[ $2 == yes && $f != 0 ]] && return 0
        [[ $2 == no && $f == 0 ]] && return 0
        sleep 0.5
    done
    return 1
}

# mkimg NAME KIND: a luks image is a copy of one LUKS2 image formatted
# once (formatting costs seconds of key derivation): the same header and
# key, no data.
LUKS_PASS=fault-passphrase
mkimg() {
    local opt=()
    [[ $2 == layering ]] && opt=(--image-feature layering)
    if [[ $2 == luks ]]; then
        if [[ -z ${LUKS_TMPL:-} ]]; then
            LUKS_TMPL=f-luks-template
            printf '%s' "$LUKS_PASS" >"$TMP/luks.pass"
            rbdl_mkimage "$LUKS_TMPL" 64M &&
                c_rbd encryption format "$POOL/$LUKS_TMPL" luks2 "$TMP/luks.pass" \
                    >>"$TMP/cluster.log" 2>&1 ||
                fail "luks: format the template image" "$(tail -2 "$TMP/cluster.log")"
        fi
        c_rbd cp --no-progress "$POOL/$LUKS_TMPL" "$POOL/$1" >>"$TMP/cluster.log" 2>&1 ||
            fail "luks: copy the template image to $1" "$(tail -2 "$TMP/cluster.log")"
        return
    fi
    rbdl_mkimage "$1" 64M "${opt[@]}"
}

# owner_addr IMG: the address of the client that has the image open
# (the lock owner, or the only watcher of a lock-less image).
owner_addr() {
    c_rbd status --format json "$POOL/$1" 2>/dev/null | python3 -c '
import json, sys
w = json.load(sys.stdin).get("watchers", [])
print(w[0]["address"] if w else "")'
}

declare -A LOST UNFL STALL ERRS OWNER
# errnos ERRORS: "-108:5,-110:1" -> "-108 -110" (which errnos, not how many)
errnos() { tr ',' '\n' <<<"$1" | cut -d: -f1 | sort -u | tr '\n' ' ' | sed 's/ $//'; }
record() {   # record ROWKEY TAG
    STALL[$1]=$(field "$2" max_stall_ms)
    ERRS[$1]=$(field "$2" errors)
    OWNER[$1]="$(field "$2" owner_rc)/$(field "$2" owner)"
}

# run_row ROW LIB KIND: with policy POLICY
run_row() {
    local row=$1 lib=$2 kind=$3 key="$1 $3 $POLICY $2"
    local img="f-$row-$kind-$POLICY-$lib" tag="$row-$kind-$POLICY-$lib"
    KOPT=()
    [[ $kind == luks ]] && KOPT=(--luks "$LUKS_PASS" --bs 512)
    mkimg "$img" "$kind"
    BLOCKS=0
    case $row in
    osd-kill)
        writer "$tag" "$lib" "$img" 0 $((PRE_S + FAULT_S + WRITE_S))
        sleep "$PRE_S"; cl_n osd-kill 1; sleep "$FAULT_S"; cl_n osd-start 1
        ;;
    min-size)
        writer "$tag" "$lib" "$img" 0 $((PRE_S + WRITE_S))
        sleep "$PRE_S"; cl_n osd-kill 1; cl_n osd-kill 2; sleep "$FAULT_S"
        cl_n osd-start 1; cl_n osd-start 2
        BLOCKS=1
        ;;
    mon-kill)
        writer "$tag" "$lib" "$img" 0 $((PRE_S + FAULT_S + WRITE_S))
        sleep "$PRE_S"; cl mon-kill; sleep "$FAULT_S"; cl mon-start
        ;;
    osd-stop)
        writer "$tag" "$lib" "$img" 0 $((PRE_S + WRITE_S))
        sleep "$PRE_S"; cl_n osd-stop 0; sleep "$FAULT_S"; cl_n osd-cont 0
        ;;
    quota)
        # The full flag comes when the manager's statistics catch up, a
        # few seconds after the quota, longer on a loaded machine: the
        # writer runs until told to stop (SIGUSR1), WRITE_S seconds after
        # the quota is lifted, so that the fault falls inside its run.
        writer "$tag" "$lib" "$img" 0 600
        sleep "$PRE_S"
        ceph osd pool set-quota "$POOL" max_bytes 1 >>"$TMP/cluster.log" 2>&1 ||
            fail "$tag: set-quota" "ceph failed"
        # The monitor flags the pool full once the manager's statistics
        # show it over quota (a few seconds).
        if pool_full 60 yes; then
            pass "$tag: the pool is full (quota)"
        else
            fail "$tag: the pool is full (quota)" "no full flag after 60 s"
        fi
        sleep "$FAULT_S"
        ceph osd pool set-quota "$POOL" max_bytes 0 >>"$TMP/cluster.log" 2>&1 ||
            fail "$tag: lift the quota" "ceph failed"
        pool_full 60 no || fail "$tag: the quota is lifted" "still full after 60 s"
        sleep "$WRITE_S"
        kill -USR1 "$WPID" 2>/dev/null
        BLOCKS=1
        ;;
    client-kill)
        writer "$tag" "$lib" "$img" 0 600
        sleep "$PRE_S"
        kill -9 "$WPID"; wait "$WPID" 2>/dev/null; WPID=
        echo "ios=? errors=none first_error=0 max_stall_ms=0 owner_rc=0 owner=1 (killed)" >"$TMP/$tag.out"
        ;;
    blocklist)
        writer "$tag" "$lib" "$img" 0 600 --stop-on-error
        sleep "$PRE_S"
        BL_ADDR=$(owner_addr "$img")
        [[ -n $BL_ADDR ]] || fail "$tag: the writer's address" "rbd status shows no watcher"
        ceph osd blocklist add "$BL_ADDR" >>"$TMP/cluster.log" 2>&1 ||
            fail "$tag: blocklist $BL_ADDR" "ceph failed"
        ;;
    esac
    [[ -z ${WPID:-} ]] || wait_writer "$tag" $((FAULT_S + WRITE_S + 120))
    record "$key" "$tag"
    # Where I/O must block (below min_size, a full pool), the writer saw
    # a stall of most of the fault's length: the fault took effect.
    if ((BLOCKS)); then
        local st=${STALL[$key]%.*}
        ((${st:-0} >= FAULT_S * 500)) && pass "$tag: I/O blocked during the fault (${st} ms)" ||
            fail "$tag: I/O blocked during the fault" "longest stall ${st:-?} ms"
    fi
    case $row in
    client-kill | blocklist)
        # Another client takes the lock over and writes: librbd, then
        # librbdlite, each on blocks of its own.
        local t2 first
        for t2 in librbd lite; do
            first=1024
            [[ $t2 == lite ]] && first=2048
            writer "$tag-then-$t2" "$t2" "$img" "$first" "$TAKE_S"
            # A dead owner's watch lasts 30 s (osd_client_watch_timeout)
            # before either library may break its lock.
            wait_writer "$tag-then-$t2" $((TAKE_S + 120)) &&
                [[ $(field "$tag-then-$t2" errors) == none ]] &&
                pass "$tag: $t2 took over and wrote" ||
                fail "$tag: $t2 took over and wrote" "$(cat "$TMP/$tag-then-$t2.out")"
        done
        ;;
    esac
    if [[ $row == blocklist && -n ${BL_ADDR:-} ]]; then
        ceph osd blocklist rm "$BL_ADDR" >/dev/null 2>&1
    fi
    cl wait-clean || fail "$tag: the cluster is clean again" "$(tail -3 "$TMP/cluster.log")"
    verify "$tag" "$img"
    if [[ $row == client-kill || $row == blocklist ]]; then
        verify "$tag-then-librbd" "$img"
        verify "$tag-then-lite" "$img"
    fi
    omap_ok "$tag" "$img" "$kind"
    case $row in
    blocklist) ;;
    *) [[ ${ERRS[$key]} == none ]] && pass "$tag: no I/O error returned" ||
           fail "$tag: no I/O error returned" "errors ${ERRS[$key]}" ;;
    esac
    rbdl_remove_image "$POOL/$img" $((SECONDS + 60)) >/dev/null 2>&1
}

# kinds_of ROW POLICY: the image kinds ROW runs on with POLICY.
kinds_of() {
    local k rows pols
    for k in $KINDS; do
        case $k in
        layering) rows=$LAYERING_ROWS pols=$LAYERING_POLICIES ;;
        luks) rows=$LUKS_ROWS pols=$LUKS_POLICIES ;;
        *) printf '%s ' "$k"; continue ;;
        esac
        [[ " $rows " == *" $1 "* && " $pols " == *" $2 "* ]] && printf '%s ' "$k"
    done
}

for row in $ROWS; do
    for POLICY in $POLICIES; do
        for kind in $(kinds_of "$row" "$POLICY"); do
            for lib in lite librbd; do
                echo "== $row, $kind image, cache $POLICY, $lib"
                run_row "$row" "$lib" "$kind"
            done
            if [[ $row == blocklist ]]; then
                k1="$row $kind $POLICY lite" k2="$row $kind $POLICY librbd"
                t="blocklist-$kind-$POLICY"
                e1=$(errnos "${ERRS[$k1]:-}") e2=$(errnos "${ERRS[$k2]:-}")
                [[ -n $e1 && $e1 != none && $e1 == "$e2" ]] &&
                    pass "$t: I/O fails with librbd's errno ($e1)" ||
                    fail "$t: I/O fails with librbd's errno" "lite ${ERRS[$k1]:-}, librbd ${ERRS[$k2]:-}"
                [[ ${OWNER[$k1]} == "${OWNER[$k2]}" ]] &&
                    pass "$t: rbd_is_exclusive_lock_owner as librbd (${OWNER[$k1]})" ||
                    fail "$t: rbd_is_exclusive_lock_owner as librbd" "lite ${OWNER[$k1]}, librbd ${OWNER[$k2]}"
            fi
        done
    done
done

echo
printf '%-12s %-9s %-5s | %-5s %-5s %9s %-12s | %-5s %-5s %9s %-12s\n' row image cache \
    lost unfl "stall ms" "lite errors" lost unfl "stall ms" "librbd errors"
for row in $ROWS; do
    for POLICY in $POLICIES; do
        for kind in $(kinds_of "$row" "$POLICY"); do
            t=$row-$kind-$POLICY k="$row $kind $POLICY"
            printf '%-12s %-9s %-5s | %-5s %-5s %9s %-12s | %-5s %-5s %9s %-12s\n' "$row" "$kind" "$POLICY" \
                "${LOST[$t-lite]:-?}" "${UNFL[$t-lite]:-?}" "${STALL[$k lite]:-?}" "${ERRS[$k lite]:-?}" \
                "${LOST[$t-librbd]:-?}" "${UNFL[$t-librbd]:-?}" "${STALL[$k librbd]:-?}" "${ERRS[$k librbd]:-?}"
        done
    done
done
echo "(lost: durable writes lost -- acknowledged with the cache off, covered by a"
echo " completed flush with it on; unfl: early-acknowledged writes no completed"
echo " flush covered that the fault undid; the larger of the two verifications;"
echo " librbd's columns are the reference: asserted are librbdlite's losses and"
echo " that librbdlite reads librbd's writes as librbd does)"
rbdl_summary
