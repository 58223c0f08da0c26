#!/usr/bin/env bash
# test-diff.sh - rbd_diff_iterate2, rbd_lock_get_owners, rbd_lock_break and
# rbd_update_watch of librbdlite against the real librbd 16.2.
#
# diff: images are made with the rbd CLI (plain; striped 64 KiB x 4;
# exclusive-lock + object-map + fast-diff; a data pool), written and discarded through
# the python bindings with snapshots @s1 and @s2 (rbd CLI) in between.
# difftool-librbd and difftool-lite then make the same rbd_diff_iterate2
# calls on the same image (HEAD and @s2 opens; from nothing, @s1, @s2;
# whole_object 0 and 1; whole, partial and past-the-end ranges; a callback
# that stops the walk; an unknown snapshot) and every output must be equal,
# line for line.  The fast-diff image is then diffed again with its object
# map flagged invalid (both libraries fall back to inspecting objects).
#
# locks: owners listed by both libraries while librbd and then librbdlite
# holds the lock, the -ERANGE/-EINVAL/-EBUSY/-ENOENT answers, breaking a
# live owner (its next write must fail: it is blocklisted) and a killed one.
#
# update watch: a callback must arrive after `rbd resize` and after
# `rbd snap create` run by another process, for both libraries;
# librbdlite-only: -ENOENT for an unknown handle, closing with a watch
# still registered (librbd 16.2.15 aborts on both), read-only opens.
#
# Data written here is always fresh (no rewrite of identical bytes, no
# discard of ranges that are already holes, no truncation of an object
# after a snapshot): those are the documented cases where librbdlite's
# per-object diff (it has no list_snaps) may report less than librbd.
#
# migration: the destination of a live migration, prepared and then
# executed, reads (rbd export with librbdlite preloaded) and diffs as with
# librbd; writes to it are refused.
#
# qemu: `qemu-img map` (qemu's block status is rbd_diff_iterate2 from
# nothing, whole objects) prints the same with librbdlite preloaded.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (fails,
# never skips, without them), python3 with the rados and rbd modules,
# qemu-img.  Prints "N passed, M
# failed" last; exits non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_twins difftool
TMO=${RBDLITE_DIFF_TIMEOUT:-120}
rbdl_images_cleanup 90 "$POOL/"

finish() {
    rbdl_summary
    exit
}

rbdl_need_progs "$LITE" "$REF"
rbdl_find_python || die "no python3 with the rados and rbd modules"

rbdl_workdir diff

# py IMAGE OPS...: apply ops "w:OFF:LEN" (fresh data) and "d:OFF:LEN"
# (discard) with librbd.
py() {
    "$PY" - "$POOL" "$@" <<'EOF'
import os, sys, rados, rbd
pool, name, ops = sys.argv[1], sys.argv[2], sys.argv[3:]
c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()
io = c.open_ioctx(pool)
img = rbd.Image(io, name)
for op in ops:
    k, off, ln = op.split(':')
    off, ln = int(off, 0), int(ln, 0)
    if k == 'w':
        img.write(os.urandom(ln), off)
    else:
        img.discard(off, ln)
img.close(); io.close(); c.shutdown()
EOF
}

M=$((1 << 20))
K=1024

# mkimg NAME RBD-CREATE-OPTIONS...: 32 MiB, 4 MiB objects, writes and
# discards around two snapshots.
mkimg() {
    local name=$1
    shift
    IMAGES+=("$name")
    rbd create --size 32M --object-size 4M "$@" "$POOL/$name" &&
        py "$name" w:0:$((4 * K)) w:$((5 * M)):$((8 * K)) \
            w:$((9 * M + 512 * K)):$M w:$((20 * M)):$((256 * K)) \
            w:$((26 * M)):$((64 * K)) &&
        rbd snap create --no-progress "$POOL/$name@s1" &&
        py "$name" w:$((5 * M + 4 * K)):$((4 * K)) w:$((13 * M)):$((4 * K)) \
            d:$((8 * M)):$((4 * M)) d:$((20 * M + 64 * K)):$((64 * K)) \
            d:$((24 * M)):$((4 * M)) w:$((30 * M)):$((12 * K)) &&
        rbd snap create --no-progress "$POOL/$name@s2" &&
        py "$name" w:$((1 * M)):$((4 * K)) w:$((17 * M)):$((16 * K)) \
            d:$((13 * M)):$((4 * M))
}

# covered A B: every extent of B (lines "off len exists") lies inside the
# union of A's extents, and B has extents if A has.
covered() {
    "$PY" - "$1" "$2" <<'EOF'
import sys
def load(f):
    return [tuple(map(int, l.split()[:2])) for l in open(f)
            if len(l.split()) == 3]
a, b = load(sys.argv[1]), load(sys.argv[2])
if a and not b:
    sys.exit(1)
for off, ln in b:
    pos = off
    while pos < off + ln:
        hit = [e for e in a if e[0] <= pos < e[0] + e[1]]
        if not hit:
            print("not covered:", off, ln); sys.exit(1)
        pos = hit[0][0] + hit[0][1]
EOF
}

# sufficient OUT IMAGE SNAP FROM OFS LEN: the extents in OUT cover every
# 512-byte block of [OFS, OFS + LEN) whose content differs between FROM
# and SNAP ("-": HEAD), and the extents reported as holes read as zeros.
sufficient() {
    "$PY" - "$POOL" "$@" <<'EOF'
import os, sys, rados, rbd
pool, out, name, snap, frm, ofs, ln = sys.argv[1:8]
ofs, ln = int(ofs), int(ln)
ext = [tuple(map(int, l.split())) for l in open(out) if len(l.split()) == 3]
c = rados.Rados(conffile=os.environ['CEPH_CONF']); c.connect()
io = c.open_ioctx(pool)
def content(s):
    img = rbd.Image(io, name, snapshot=None if s == '-' else s, read_only=True)
    size = img.size()
    n = max(0, min(ofs + ln, size) - ofs)
    d = img.read(ofs, n) if n else b''
    img.close()
    return d + bytes(ln - len(d)), size
new, size = content(snap)
old, _ = content(frm)
end = min(ofs + ln, size)
for b in range(ofs, end, 512):
    e = min(b + 512, end)
    if old[b - ofs:e - ofs] != new[b - ofs:e - ofs] and \
       not any(o <= b and e <= o + l for o, l, x in ext):
        print("changed block", b, "not reported"); sys.exit(1)
for o, l, x in ext:
    if not x and any(new[max(o, ofs) - ofs:min(o + l, end) - ofs]):
        print("hole", o, l, "has data"); sys.exit(1)
EOF
}

# cmp_diff LABEL IMAGE SNAP FROM OFS LEN WHOLE [STOP]
# Outputs must be equal; with STOP, the first STOP callbacks and the
# return value (librbd may already have issued more callbacks for
# requests in flight when the callback asks to stop; librbdlite stops at
# once).  Exact mode from a snapshot (the documented difference, see
# diff.c): librbdlite's extents must lie within librbd's and cover every
# block whose content changed; same result.
cmp_diff() {
    local label=$1
    shift
    local a=$WORK/ref.out b=$WORK/lite.out
    timeout -k 5 "$TMO" "$REF" "$POOL" diff "$@" >"$a" 2>"$a.err"
    timeout -k 5 "$TMO" "$LITE" "$POOL" diff "$@" >"$b" 2>"$b.err"
    if [[ -n ${7:-} ]]; then
        { head -n "$7" "$a"; grep -e '^ret=' -e '^close=' "$a"; } >"$a.p"
        mv "$a.p" "$a"
    fi
    if ! grep -q '^ret=' "$a"; then
        fail "$label: librbd did not finish ($(head -c 200 "$a.err"))"
    elif [[ $3 != - && $6 == 0 ]] &&
        [[ $(grep '^ret=' "$a") == $(grep '^ret=' "$b") ]] &&
        covered "$a" "$b" && { [[ -n ${7:-} ]] || sufficient "$b" "$@"; }; then
        pass "$label ($(grep '^ret=' "$a"), within librbd's extents$(
            cmp -s "$a" "$b" && echo ", equal"))"
    elif cmp -s "$a" "$b"; then
        pass "$label ($(grep '^ret=' "$a"), $(($(wc -l <"$a") - 2)) extents)"
    else
        fail "$label"
        diff "$a" "$b" | head -20 | sed 's/^/    | /'
    fi
}

diff_matrix() {
    local img=$1 tag=$2 snap from whole range ofs len
    for snap in - s2; do
        for from in - s1 s2; do
            [[ $snap == s2 && $from == s2 ]] && continue
            for whole in 0 1; do
                for range in "0:$((32 * M))" "$((3 * M)):$((10 * M + 123))" \
                    "$((30 * M)):$((4 * M))"; do
                    ofs=${range%%:*}
                    len=${range#*:}
                    cmp_diff "$tag snap=$snap from=$from whole=$whole" \
                        "$img" "$snap" "$from" "$ofs" "$len" "$whole"
                done
            done
        done
    done
    cmp_diff "$tag stop after 2" "$img" - - 0 $((32 * M)) 1 2
    cmp_diff "$tag stop after 1 exact" "$img" - s1 0 $((32 * M)) 0 1
    cmp_diff "$tag offset at the end" "$img" - - $((32 * M)) 1 0
    cmp_diff "$tag offset past the end" "$img" - - $((40 * M)) 1 1
    cmp_diff "$tag wrapping offset" "$img" - - 18446744073709547520 4096 0
    cmp_diff "$tag unknown from-snapshot" "$img" - nosuch 0 $M 1
    cmp_diff "$tag from a newer snapshot" "$img" s1 s2 0 $M 1
    cmp_diff "$tag from a newer snapshot, len 0" "$img" s1 s2 0 0 0
    cmp_diff "$tag unknown from-snapshot, len 0" "$img" - nosuch 0 0 0
    cmp_diff "$tag len 0" "$img" - s1 $M 0 0
}

IP=diff-$$-plain
IS=diff-$$-striped
IO=diff-$$-om
ID=diff-$$-datapool
if mkimg "$IP" --image-feature layering >"$WORK/mk.log" 2>&1 &&
    mkimg "$ID" --image-feature layering,exclusive-lock,object-map \
        --data-pool "$RBDLITE_TEST_DATA_POOL" >>"$WORK/mk.log" 2>&1 &&
    mkimg "$IS" --image-feature layering,striping --stripe-unit 64K \
        --stripe-count 4 >>"$WORK/mk.log" 2>&1 &&
    mkimg "$IO" --image-feature layering,exclusive-lock,object-map,fast-diff \
        >>"$WORK/mk.log" 2>&1; then
    pass "create images"
else
    sed 's/^/    | /' "$WORK/mk.log"
    fail "create images"
    finish
fi

diff_matrix "$IP" plain
diff_matrix "$IS" striped
diff_matrix "$IO" fast-diff
# Data objects in a separate pool, object map without fast-diff.
for from in - s1; do
    for whole in 0 1; do
        cmp_diff "data pool from=$from whole=$whole" "$ID" - "$from" \
            0 $((32 * M)) "$whole"
    done
done

# qemu's block status: rbd_diff_iterate2(image, NULL, off, len, 1, 1, ...)
# (qemu calls it on fast-diff images); `qemu-img map` with librbdlite
# preloaded must print what it prints with librbd.
qemu_map() {
    local label=$1 img=$2 spec="rbd:$POOL/$2:conf=$CEPH_CONF"
    # The map is stdout; stderr (a sanitizer runtime's notes) is shown
    # on failure only.
    timeout -k 5 "$TMO" qemu-img map --output=json -f raw "$spec" \
        >"$WORK/map-ref" 2>"$WORK/map-ref.err"
    timeout -k 5 "$TMO" env LD_PRELOAD="$PRELOAD" "${SAN_ENV[@]}" \
        RBDLITE_QUIET=1 qemu-img map --output=json -f raw "$spec" \
        >"$WORK/map-lite" 2>"$WORK/map-lite.err"
    if grep -q '"start"' "$WORK/map-ref" &&
        cmp -s "$WORK/map-ref" "$WORK/map-lite"; then
        pass "qemu-img map $label ($(grep -o '"start"' "$WORK/map-ref" |
            wc -l) entries)"
    else
        fail "qemu-img map $label"
        diff "$WORK/map-ref" "$WORK/map-lite" | head -10 | sed 's/^/    | /'
        head -5 "$WORK/map-ref.err" "$WORK/map-lite.err" | sed 's/^/    | /'
    fi
}
# shellcheck source=preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env qemu-img
qemu_map plain "$IP"
qemu_map striped "$IS"
qemu_map fast-diff "$IO"

# The same with HEAD's object map flagged invalid (flags key of the
# header: OBJECT_MAP_INVALID | FAST_DIFF_INVALID).
id=$(rbd info "$POOL/$IO" | sed -n 's/.*id: //p')
printf '\003\000\000\000\000\000\000\000' >"$WORK/flags"
if rados -p "$POOL" setomapval "rbd_header.$id" flags \
    --input-file "$WORK/flags" 2>"$WORK/f.err" &&
    rbd info "$POOL/$IO" | grep -q 'flags: object map invalid'; then
    pass "object map flagged invalid"
    for whole in 0 1; do
        for from in - s1 s2; do
            cmp_diff "invalid map from=$from whole=$whole" "$IO" - "$from" \
                0 $((32 * M)) "$whole"
        done
    done
    qemu_map "fast-diff, invalid map" "$IO"
else
    sed 's/^/    | /' "$WORK/f.err"
    fail "object map flagged invalid"
fi

# ---- lock owners and lock break ----------------------------------------

IL=diff-$$-lock
IN=diff-$$-nolock
IMAGES+=("$IL" "$IN")
rbd create --size 16M --image-feature layering,exclusive-lock "$POOL/$IL" &&
    rbd create --size 16M --image-feature layering "$POOL/$IN" ||
    fail "create lock images"

# expect LABEL WANT CMD...: the output of CMD must be WANT (one line).
expect() {
    local label=$1 want=$2 got
    shift 2
    got=$(timeout -k 5 "$TMO" "$@" 2>&1 | grep -v '^close=')
    if [[ $got == "$want" ]]; then
        pass "$label: $got"
    else
        fail "$label: got '$got', want '$want'"
    fi
}

# hold LIB: a process of LIB holding the lock until the file $HGO exists
# (release: touch "$HGO"); sets HOLDER (pid), HOUT (its output file),
# HGO and OWNER (its address).
hold() {
    local bin=$REF
    [[ $1 == lite ]] && bin=$LITE
    HOUT=$WORK/hold-$1-$RANDOM.out
    HGO=$HOUT.go
    "$bin" "$POOL" write-hold "$IL" "$HGO" >"$HOUT" 2>&1 &
    HOLDER=$!
    BG+=("$HOLDER")
    OWNER=
    for _ in $(seq 100); do
        OWNER=$(sed -n 's/^locked //p' "$HOUT" 2>/dev/null)
        [[ -n $OWNER ]] && return 0
        sleep 0.1
    done
    return 1
}

for lib in librbd lite; do
    if hold $lib; then
        expect "owners of a $lib holder (librbd)" "ret=0 n=1 mode=0 owner=$OWNER" \
            "$REF" "$POOL" owners "$IL"
        expect "owners of a $lib holder (lite)" "ret=0 n=1 mode=0 owner=$OWNER" \
            "$LITE" "$POOL" owners "$IL"
        expect "owners, no room (lite)" "ret=-34 n=1" "$LITE" "$POOL" owners "$IL" 0
        expect "break of someone else (librbd)" "ret=-16" \
            "$REF" "$POOL" break "$IL" 127.0.0.1:0/1
        expect "break of someone else (lite)" "ret=-16" \
            "$LITE" "$POOL" break "$IL" 127.0.0.1:0/1
        touch "$HGO"
        wait "$HOLDER"
        grep -q '^write2=0$' "$HOUT" && pass "$lib holder unharmed" ||
            fail "$lib holder unharmed: $(cat "$HOUT")"
    else
        fail "$lib holder took the lock: $(cat "$HOUT")"
    fi
done
expect "owners unlocked (librbd)" "ret=-2 n=4" "$REF" "$POOL" owners "$IL"
expect "owners unlocked (lite)" "ret=-2 n=4" "$LITE" "$POOL" owners "$IL"
expect "break unlocked (librbd)" "ret=-2" "$REF" "$POOL" break "$IL" 127.0.0.1:0/1
expect "break unlocked (lite)" "ret=-2" "$LITE" "$POOL" break "$IL" 127.0.0.1:0/1
for lib in librbd lite; do
    bin=$REF
    [[ $lib == lite ]] && bin=$LITE
    expect "owners on a read-only open ($lib)" "ret=-22 n=4" \
        env DIFFTOOL_READ_ONLY=1 "$bin" "$POOL" owners "$IL"
    expect "break on a read-only open ($lib)" "ret=-30" \
        env DIFFTOOL_READ_ONLY=1 "$bin" "$POOL" break "$IL" x
done
expect "owners without the feature (librbd)" "ret=-22 n=4" "$REF" "$POOL" owners "$IN"
expect "owners without the feature (lite)" "ret=-22 n=4" "$LITE" "$POOL" owners "$IN"
expect "break without the feature (librbd)" "ret=-22" "$REF" "$POOL" break "$IN" x
expect "break without the feature (lite)" "ret=-22" "$LITE" "$POOL" break "$IN" x

# Break live owners: a librbd one by librbdlite, a librbdlite one by
# librbd; the broken owner is blocklisted, its next write fails.
for pair in "librbd $LITE" "lite $REF"; do
    lib=${pair%% *}
    breaker=${pair#* }
    if hold "$lib"; then
        expect "break a live $lib owner" "ret=0" "$breaker" "$POOL" break "$IL" -
        expect "owners after the break" "ret=-2 n=4" "$LITE" "$POOL" owners "$IL"
        touch "$HGO"
        wait "$HOLDER"
        if grep -q '^write2=-' "$HOUT"; then
            pass "broken $lib owner is fenced ($(grep write2 "$HOUT"))"
        else
            fail "broken $lib owner is fenced: $(cat "$HOUT")"
        fi
    else
        fail "$lib holder took the lock"
    fi
done
# A killed owner.
if hold librbd; then
    kill -9 "$HOLDER"
    wait "$HOLDER" 2>/dev/null
    expect "owners of a killed holder" "ret=0 n=1 mode=0 owner=$OWNER" \
        "$LITE" "$POOL" owners "$IL"
    expect "break a killed owner" "ret=0" "$LITE" "$POOL" break "$IL" "$OWNER"
    expect "owners after breaking a killed owner" "ret=-2 n=4" \
        "$LITE" "$POOL" owners "$IL"
    expect "break it again" "ret=-2" "$LITE" "$POOL" break "$IL" "$OWNER"
else
    fail "librbd holder took the lock"
fi

# ---- a migrating image ----------------------------------------------------
# The destination of a live migration opens with writes refused (-EROFS):
# prepared, it reads what is not copied yet from the source; executed, it
# has everything.

MS=diff-$$-migsrc
MD=diff-$$-migdst
IMAGES+=("$MD")
# mig_check STATE [FROM...]: the destination $MD reads (rbd export with
# librbdlite preloaded) and diffs (from nothing and from each FROM) as
# with librbd, and refuses writes.
mig_check() {
    local state=$1 whole from
    shift
    rbd export --no-progress "$POOL/$MD" "$WORK/mig-ref" >/dev/null 2>&1
    env LD_PRELOAD="$PRELOAD" "${SAN_ENV[@]}" RBDLITE_QUIET=1 \
        rbd export --no-progress "$POOL/$MD" "$WORK/mig-lite" >/dev/null 2>&1
    if [[ -s $WORK/mig-ref ]] && cmp -s "$WORK/mig-ref" "$WORK/mig-lite"; then
        pass "$state migration destination reads as with librbd"
    else
        fail "$state migration destination reads as with librbd"
    fi
    for whole in 0 1; do
        cmp_diff "$state migration whole=$whole" "$MD" - - 0 $((16 * M)) \
            "$whole"
        for from in "$@"; do
            cmp_diff "$state migration from=$from whole=$whole" "$MD" - \
                "$from" 0 $((16 * M)) "$whole"
        done
    done
    expect "$state migration destination: writes refused" \
        "write/owners failed: -30" env RBDLITE_QUIET=1 "$LITE" "$POOL" \
        write-hold "$MD" 0
}
if rbd create --size 16M --image-feature layering,exclusive-lock,object-map \
    "$POOL/$MS" >"$WORK/mig.log" 2>&1 &&
    py "$MS" w:0:$((4 * K)) w:$((9 * M)):$((64 * K)) >>"$WORK/mig.log" 2>&1 &&
    rbd snap create --no-progress "$POOL/$MS@m1" >>"$WORK/mig.log" 2>&1 &&
    py "$MS" w:$((13 * M)):$((8 * K)) >>"$WORK/mig.log" 2>&1 &&
    rbd migration prepare "$POOL/$MS" "$POOL/$MD" >>"$WORK/mig.log" 2>&1; then
    # Prepared, not executed: what is not copied yet reads from the
    # source, in data and in diffs; writes are refused.
    mig_check prepared
    if rbd migration execute --no-progress "$POOL/$MD" >>"$WORK/mig.log" 2>&1; then
        mig_check executed m1
        rbd migration commit --no-progress "$POOL/$MD" >>"$WORK/mig.log" 2>&1 ||
            fail "migration commit: $(tail -2 "$WORK/mig.log")"
    else
        sed 's/^/    | /' "$WORK/mig.log"
        fail "migration execute"
    fi
else
    IMAGES+=("$MS")
    sed 's/^/    | /' "$WORK/mig.log"
    fail "migration prepare"
fi

# ---- update watch --------------------------------------------------------

IW=diff-$$-watch
IMAGES+=("$IW")
rbd create --size 16M --image-feature layering,exclusive-lock,object-map \
    "$POOL/$IW" || fail "create watch image"
size=16
# watch LIB ACTION EXTRA: register, run ACTION from another process, check.
watch_test() {
    local lib=$1 action=$2 extra=${3:-} bin=$REF out ro=
    [[ $lib == lite* ]] && bin=$LITE
    [[ $lib == *-ro ]] && ro=1
    out=$WORK/watch-$lib-$RANDOM.out
    DIFFTOOL_READ_ONLY=$ro "$bin" "$POOL" watch "$IW" 1 30 $extra >"$out" 2>&1 &
    local pid=$!
    BG+=("$pid")
    for _ in $(seq 100); do
        grep -q registered "$out" 2>/dev/null && break
        sleep 0.1
    done
    if [[ $action == resize ]]; then
        size=$((size + 4))
        rbd resize --no-progress --size ${size}M "$POOL/$IW" >/dev/null 2>&1
    else
        rbd snap create --no-progress "$POOL/$IW@w$RANDOM" >/dev/null 2>&1
    fi
    wait "$pid"
    local want="registered
callbacks>=1
unwatch=0"
    [[ -n $extra ]] && want="$want
again=-2
watch2=0"
    want="$want
close=0"
    if [[ $(cat "$out") == "$want" ]]; then
        pass "update watch $lib after $action $extra"
    else
        fail "update watch $lib after $action $extra: $(tr '\n' ' ' <"$out")"
    fi
}
watch_test librbd resize
watch_test lite resize
watch_test librbd snap
watch_test lite snap
watch_test lite resize keep
# librbdlite also calls back on read-only opens (librbd 16.2.15 does not
# watch the header of those, so it never does).
watch_test lite-ro resize
watch_test lite-ro snap keep

# One callback per header update another handle makes, also for a resize
# to the current size (librbd notifies it too): the same count from both.
for lib in librbd lite; do
    bin=$REF
    [[ $lib == lite ]] && bin=$LITE
    "$bin" "$POOL" watchresize "$IW" $((size << 20)) $(((size + 1) << 20)) \
        $(((size + 2) << 20)) $(((size + 2) << 20)) $(((size + 3) << 20)) \
        >"$WORK/wr-$lib.out" 2>&1
    size=$((size + 3))
done
if cmp -s "$WORK/wr-librbd.out" "$WORK/wr-lite.out" &&
    grep -qx "callbacks=5" "$WORK/wr-lite.out"; then
    pass "update watch: one callback per resize, no-op ones too (5, as librbd)"
else
    fail "update watch: one callback per resize, no-op ones too" \
        "librbd: $(tr '\n' ' ' <"$WORK/wr-librbd.out") lite: $(tr '\n' ' ' <"$WORK/wr-lite.out")"
fi

finish
