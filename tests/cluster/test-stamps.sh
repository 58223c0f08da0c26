#!/usr/bin/env bash
# test-stamps.sh - the header's access and modify timestamps, updated by
# I/O as librbd 16.2 updates them: a read stamps the access time, a
# write the modify time, once rbd_atime_update_interval /
# rbd_mtime_update_interval seconds (default 60, 0: never) have passed
# since the last stamp, counted from the stamps the header holds at open.
#
# Twin images, one driven by cloneop-lite and one by cloneop-librbd, in
# parallel, through the same steps; after each step the header's two
# timestamps (rados getomapval, whole seconds) are compared with those
# before it and printed as "same" or "newer":
#   a  default intervals, right after the image was created: a write and
#      a read stamp nothing (the creation stamps are younger than 60 s);
#   b  intervals of 1 s, 2 s later: a write stamps the modify time only;
#   c  the same, 2 s later: a read stamps the access time only;
#   d  intervals of 1 s, one open: a write, 2 s inside the process, a
#      write: the modify time is that of the second write (the open's own
#      timer made it due again), at least 2 s after the run began;
#   e  intervals of 0, 2 s later: a write and a read stamp nothing;
#   f  intervals of 1 s, a clone of a snapshot of the image (made at the
#      start, with data in its first object): a read of the clone's first
#      object, which the clone has not written, reads the parent and
#      stamps the parent's access time; 2 s later a write to that object
#      copies it up, whose read of the parent stamps it again; 2 s later
#      a read of the object, now the clone's own, stamps nothing of the
#      parent.
# Both libraries' lines must be equal, and librbdlite's as listed.
#
# Needs CEPH_CONF and RBDLITE_TEST_POOL (fails, never skips, without
# them), rbd and rados.  Prints "N passed, M failed" last; exits non-zero
# on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_need_cmds rbd rados timeout od
rbdl_twins cloneop
rbdl_need_progs "$LITE" "$REF"
rbdl_workdir stamps
T=ts$$
rbdl_images_cleanup 90 "$POOL/"

IV1="--rbd_atime_update_interval=1 --rbd_mtime_update_interval=1"
IV0="--rbd_atime_update_interval=0 --rbd_mtime_update_interval=0"

# stamps ID OUT: the header's access and modify seconds, "A M" (or
# "? ?" when unreadable, noted in OUT.err).
stamps() {
    local k v
    for k in access_timestamp modify_timestamp; do
        if rados -p "$POOL" getomapval "rbd_header.$1" "$k" "$2.bin" \
            >>"$2.err" 2>&1; then
            v=$(od -An -tu4 -N4 "$2.bin" | tr -d ' ')
        else
            v='?'
        fi
        printf '%s ' "$v"
    done
}

# cmp_stamps OLD NEW: "access=same|newer|older modify=..." (the words of
# two "A M" pairs).
cmp_stamps() {
    local -a o n
    local i w out=
    read -ra o <<<"$1"
    read -ra n <<<"$2"
    for i in 0 1; do
        if [[ ${o[i]} == '?' || ${n[i]} == '?' ]]; then w=unreadable
        elif ((n[i] == o[i])); then w=same
        elif ((n[i] > o[i])); then w=newer
        else w=older; fi
        out+="$([[ $i == 0 ]] && echo access || echo " modify")=$w"
    done
    echo "$out"
}

# step OUT ID LABEL ARGS CMD...: run CMD... through the tool with CEPH_ARGS
# set to ARGS, then print LABEL and how the stamps moved.
step() {
    local out=$1 id=$2 label=$3 args=$4 before after rc
    shift 4
    before=$(stamps "$id" "$out")
    CEPH_ARGS=$args timeout -k 5 60 "$BINARY" "$POOL" "$IMG" "$@" \
        >>"$out.log" 2>>"$out.err"
    rc=$?
    after=$(stamps "$id" "$out")
    echo "$label: exit $rc $(cmp_stamps "$before" "$after")" >>"$out"
    LAST=$after
}

# run BIN IMG OUT: every step on one image.
run() {
    local id t0 m
    BINARY=$1 IMG=$2
    local out=$3
    id=$(rbdl_info "$IMG" 'd["id"]')
    step "$out" "$id" a "" write 0 4K 1 read 0 4K
    sleep 2
    step "$out" "$id" b "$IV1" write 0 4K 2
    sleep 2
    step "$out" "$id" c "$IV1" read 0 4K
    sleep 2
    t0=$(date +%s)
    step "$out" "$id" d "$IV1" write 0 4K 3 \
        expect -110 waitfile "$TMP/never" 2 write 4K 4K 4
    m=${LAST#* }
    m=${m% }
    if ((m >= t0 + 2)); then
        echo "d: the second write stamped" >>"$out"
    else
        echo "d: modify stamp $m, run began at $t0: not the second write's" >>"$out"
    fi
    sleep 2
    step "$out" "$id" e "$IV0" write 0 4K 5 read 0 4K
    sleep 2
    IMG=$IMG-c
    step "$out" "$id" "f read" "$IV1" read 1M 4K
    sleep 2
    step "$out" "$id" "f copy-up" "$IV1" write 2M 4K 6
    sleep 2
    step "$out" "$id" "f own" "$IV1" read 3M 4K
}

# clone_of NAME: a snapshot of NAME (with data at 1 MiB and 3 MiB) and
# the clone NAME-c of it.
clone_of() {
    local log=$TMP/clone-$1.log
    { CEPH_ARGS= "$REF" "$POOL" "$1" write 1M 4K 7 write 3M 4K 8 &&
        c_rbd snap create --no-progress "$POOL/$1@s" &&
        c_rbd snap protect "$POOL/$1@s" &&
        c_rbd clone "$POOL/$1@s" "$POOL/$1-c"; } >"$log" 2>&1 ||
        { show_log "$log"; die "cannot make the clone of $1"; }
    IMAGES+=("$1-c")
}

rbdl_mkimage "$T-r" 16M
rbdl_mkimage "$T-l" 16M
clone_of "$T-r"
clone_of "$T-l"
run "$REF" "$T-r" "$TMP/r.out" &
BG+=($!)
run "$LITE" "$T-l" "$TMP/l.out" &
BG+=($!)
wait "${BG[@]}"
BG=()

expected='a: exit 0 access=same modify=same
b: exit 0 access=same modify=newer
c: exit 0 access=newer modify=same
d: exit 0 access=same modify=newer
d: the second write stamped
e: exit 0 access=same modify=same
f read: exit 0 access=newer modify=same
f copy-up: exit 0 access=newer modify=same
f own: exit 0 access=same modify=same'

if cmp -s "$TMP/r.out" "$TMP/l.out"; then
    pass "timestamps move as librbd's do in every step"
else
    fail "timestamps move as librbd's do in every step"
    diff "$TMP/r.out" "$TMP/l.out" | sed 's/^/    /'
    show_log "$TMP/l.out.err"
fi
for side in l r; do
    name=librbdlite
    [[ $side == r ]] && name="librbd (the reference)"
    if [[ $(cat "$TMP/$side.out") == "$expected" ]]; then
        pass "$name: the steps give what the header comment lists"
    else
        fail "$name: the steps give what the header comment lists"
        diff <(echo "$expected") "$TMP/$side.out" | sed 's/^/    /'
        show_log "$TMP/$side.out.err"
    fi
done

rbdl_summary
