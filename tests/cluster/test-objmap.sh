#!/usr/bin/env bash
# test-objmap.sh - what a write does when the object map cannot be
# updated, librbdlite against the real librbd 16.2.
#
# An image with exclusive-lock, object-map and fast-diff is opened by
# cloneop-lite and cloneop-librbd (one twin each); each writes its first
# object (taking the lock and loading the map), then waits while this
# script removes the object map object (rbd_object_map.ID) behind its
# back, so that every later map update fails (-ENOENT).  librbd then
# flags the map invalid in the header and carries on.
#   (a) the flag can be written: every later write succeeds;
#   (b) the flag cannot be written either (the header's "flags" key is
#       made undecodable, so rbd.set_flags fails with -EIO): the write
#       whose update failed first fails with -EIO, and every later one
#       goes ahead (the flag is set in memory already).
# The two tools' outputs (each call's return value, read checksums) must
# be equal line for line; then (the header's flags restored in (b))
# `rbd info` must show both maps flagged invalid, and `rbd export` give
# the same bytes for both twins, and `rbd diff` the same extents.
#
# Needs CEPH_CONF and RBDLITE_TEST_POOL (fails, never skips, without
# them), rbd and rados.  Prints "N passed, M failed" last; exits non-zero
# on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_need_cmds rbd rados timeout md5sum
rbdl_twins cloneop
rbdl_need_progs "$LITE" "$REF"
rbdl_workdir objmap
T=om$$
rbdl_images_cleanup 90 "$POOL/"

M=$((1 << 20))
CMDS=(write 4M 4K 2 write 8M 4M 3 discard 8M 4M write 12M 8K 4
    read 0 4K read 4M 4K read 8M 4M read 12M 8K)

# put_flags ID BYTES OUT WHAT: the header's "flags" omap value becomes
# BYTES (printf %b escapes); a failure is noted in OUT ("rados setomapval
# WHAT failed").
put_flags() {
    printf '%b' "$2" >"$3.flags"
    rados -p "$POOL" setomapval "rbd_header.$1" flags \
        --input-file "$3.flags" >>"$3.err" 2>&1 ||
        echo "rados setomapval$4 failed" >>"$3"
}

# run BIN IMG BADFLAGS OUT: write the first object, break the map (and the
# header's flags if BADFLAGS), then the rest of CMDS.
run() {
    local bin=$1 img=$2 bad=$3 out=$4 go=$4.go id pid
    rm -f "$go" "$out" # no earlier "waiting" line (rbdl_await_waiting)
    rbdl_mkimage "$img" 16M --image-feature \
        layering,exclusive-lock,object-map,fast-diff
    id=$(rbdl_info "$img" 'd["id"]')
    timeout -k 5 120 "$bin" "$POOL" "$img" write 0 4K 1 \
        waitfile "$go" 90 "${CMDS[@]}" >"$out" 2>"$out.err" &
    pid=$!
    BG+=("$pid")
    rbdl_await_waiting "$out" "$pid"
    rados -p "$POOL" rm "rbd_object_map.$id" >>"$out.err" 2>&1 ||
        echo "rados rm failed" >>"$out"
    ((bad)) && put_flags "$id" '\001\000\000' "$out" ""   # undecodable
    touch "$go"
    wait "$pid"
    echo "exit $?" >>"$out"
    # The header readable again (both flags set, as librbd's would be):
    # the rbd CLI can judge and remove the image.
    ((bad)) && put_flags "$id" '\003\000\000\000\000\000\000\000' "$out" " (restore)"
    sed -i "s|$go|GO|" "$out"
}

# same LABEL: the two outputs are equal.
same() {
    if cmp -s "$TMP/r.out" "$TMP/l.out"; then
        pass "$1: the same results as librbd"
        return 0
    fi
    fail "$1: the same results as librbd"
    diff "$TMP/r.out" "$TMP/l.out" | sed 's/^/    /' | head -20
    show_log "$TMP/l.out.err"
    return 1
}

# twins_equal LABEL REF-IMG LITE-IMG: both maps flagged invalid in the
# header; the same bytes (rbd export) and extents (rbd diff).
twins_equal() {
    local img
    for img in "$2" "$3"; do
        if c_rbd info "$POOL/$img" | grep -q 'flags: object map invalid, fast diff invalid'; then
            pass "$1: $img's map is flagged invalid in the header"
        else
            fail "$1: $img's map is flagged invalid in the header"
        fi
        c_rbd export --no-progress "$POOL/$img" - 2>/dev/null | md5sum >"$TMP/$img.md5"
        c_rbd diff "$POOL/$img" >"$TMP/$img.diff" 2>&1
    done
    rbdl_expect "$1: rbd export of both twins" "md5" \
        "$(cat "$TMP/$3.md5")" "$(cat "$TMP/$2.md5")" &&
        pass "$1: rbd export gives the same bytes for both twins"
    rbdl_expect "$1: rbd diff of both twins" "extents" \
        "$(cat "$TMP/$3.diff")" "$(cat "$TMP/$2.diff")" &&
        pass "$1: rbd diff gives the same extents for both twins"
}

# ---- a. the invalid flag is written
run "$REF" "$T-ar" 0 "$TMP/r.out"
run "$LITE" "$T-al" 0 "$TMP/l.out"
same "a: map update fails, flag written"
if grep -q "^write 12M 8K 4 = 8192$" "$TMP/l.out"; then
    pass "a: writes go ahead after the failed update"
else
    fail "a: writes go ahead after the failed update"
    show_log "$TMP/l.out"
fi
twins_equal a "$T-ar" "$T-al"

# ---- b. neither the update nor the flag can be written
run "$REF" "$T-br" 1 "$TMP/r.out"
run "$LITE" "$T-bl" 1 "$TMP/l.out"
same "b: map update and flag both fail"
if grep -q "^write 4M 4K 2 = -5$" "$TMP/l.out" &&
    grep -q "^write 8M 4M 3 = 4194304$" "$TMP/l.out"; then
    pass "b: the first write fails with -EIO, the next go ahead"
else
    fail "b: the first write fails with -EIO, the next go ahead"
    show_log "$TMP/l.out"
fi
twins_equal b "$T-br" "$T-bl"

rbdl_summary
