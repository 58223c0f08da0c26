#!/usr/bin/env bash
# test-delegate.sh - the calls librbdlite forwards to the system's librbd
# (lib/api/rbd_delegated.c: namespaces, pool metadata, trash, groups,
# mirroring of a pool and of an open image, configuration lists,
# migration with librbdlite's own options object), in every way a program
# can get librbdlite:
#
#  1. tests/cluster/delegate.c runs as delegate-librbd (the reference: the
#     real librbd alone), as delegate-lite (linked with librbdlite: the real
#     librbd is dlopen'ed by path), as delegate-librbd with librbdlite
#     preloaded (the real librbd is the next definition) and with the
#     substitute librbd.so.1 in LD_LIBRARY_PATH (dlopen'ed by path beside
#     the substitute); the four transcripts must be identical.  Between the
#     forwarded mirroring calls, librbdlite's handle writes to the image it
#     holds the exclusive lock of (the real handle takes the lock over and
#     gives it back).
#  2. Without a loadable real librbd (RBDLITE_SYSTEM_LIBRBD pointing at
#     nothing), delegate-lite gets -EOPNOTSUPP from every forwarded call,
#     each with a one-line "librbdlite:" diagnostic naming the function
#     (RBDLITE_DEBUG=1: not printed by default), and
#     its native calls still work.
#  3. RBDLITE_SYSTEM_LIBRBD pointing at librbdlite itself is refused the
#     same way (never forwarding to ourselves).
#
# Needs CEPH_CONF and RBDLITE_TEST_POOL (fails, never skips, without
# them).  Prints "N passed, M failed" last; exits non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_twins delegate
rbdl_need_progs "$LITE" "$REF"
rbdl_workdir delegate
SUBDIR=$BUILDDIR/lib/librbd1/.libs
LIBLITE=$BUILDDIR/lib/.libs/librbdlite.so
TAG=dg$$

cleanup() {
    rbdl_rm_workdir
}
rbdl_traps

# The mirroring calls need an initialised pool.
c_rbd pool init "$POOL" >/dev/null 2>&1

run() { # name out cmd...
    local name=$1 out=$2
    shift 2
    rbdl_run_prog "$name" "$out" 300 "$@"
}
run "reference (real librbd)" "$TMP/ref" "$REF" "$POOL" "$TAG-r"
run "linked librbdlite" "$TMP/lite" "$LITE" "$POOL" "$TAG-l"
run "librbd program, librbdlite preloaded" "$TMP/pre" \
    env LD_PRELOAD="$LIBLITE" "$REF" "$POOL" "$TAG-p"
run "librbd program, substitute librbd.so.1" "$TMP/sub" \
    env LD_LIBRARY_PATH="$SUBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$REF" "$POOL" "$TAG-s"

lines=$(wc -l <"$TMP/ref")
((lines >= 50)) || fail "the reference transcript is short ($lines lines)"
for m in lite pre sub; do
    if diff -u "$TMP/ref" "$TMP/$m" >"$TMP/$m.diff"; then
        pass "$m transcript equals the real librbd's ($lines calls)"
    else
        fail "$m transcript differs from the real librbd's:"
        head -n 30 "$TMP/$m.diff" | sed 's/^/    | /'
    fi
done

# 2. No real librbd to forward to.
no_real() { # label path
    local label=$1 path=$2 out=$TMP/none-$1
    RBDLITE_DEBUG=1 RBDLITE_SYSTEM_LIBRBD=$path timeout -k 10 300 "$LITE" "$POOL" "$TAG-$label" >"$out" 2>"$out.err"
    local rc=$?
    ((rc == 0)) || { fail "$label: delegate-lite exited with $rc"; show_log "$out.err"; return; }
    local want
    for want in "namespace_create -95" "pool_metadata_set -95" "trash_move -95" \
        "group_create -95" "mirror_mode_set -95" "mirror_image_enable2 -95" \
        "config_pool_list -95" "migration_prepare -95" "create 0" "open 0" "write 4096"; do
        if grep -qx -- "$want.*" "$out" || grep -q -- "^$want" "$out"; then
            pass "$label: '$want'"
        else
            fail "$label: no line '$want' in the transcript"
        fi
    done
    local fn
    for fn in rbd_namespace_create rbd_trash_move rbd_mirror_image_enable2 rbd_migration_prepare; do
        n=$(grep -c "^librbdlite: $fn is forwarded to the system's librbd, which is not available" "$out.err")
        if ((n == 1)); then
            pass "$label: one diagnostic naming $fn"
        else
            fail "$label: $n diagnostics naming $fn (want 1)"
            show_log "$out.err"
        fi
    done
}
no_real missing /nonexistent/librbd.so.1
no_real self "$LIBLITE"

# Leftovers of the runs without a real librbd: their images were made
# natively, so remove them natively.
for i in $(c_rbd ls "$POOL" 2>/dev/null | grep "^$TAG-"); do
    c_rbd rm "$POOL/$i" >/dev/null 2>&1 || c_rbd snap purge "$POOL/$i" >/dev/null 2>&1
done
rbdl_summary
