#!/usr/bin/env bash
# test-snapops.sh - rbd_resize, rbd_snap_create/remove/rollback/set of
# librbdlite, judged against the real librbd 16.2 and the rbd CLI.
#
# Differential: every image kind gets two twin images; one script of
# operations (tests/cluster/snapop.c's command language: write, check,
# size, resize, snapc, snaprm, rollback, snapset, expect ERRNO) runs on
# one twin through librbdlite (snapop) and on the other through the real
# librbd (python3 rbd bindings, the same command language).  Each command's
# return value is checked against the script on both sides, so the errnos
# (-ENOENT, -EEXIST, -EBUSY, -EROFS, ...) are librbd's by construction.
# Then the twins must agree exactly, as seen by librbd and the CLI:
#   - content: `rbd export` of HEAD and of every snapshot (md5)
#   - `rbd snap ls` (names and sizes)
#   - `rbd diff` of HEAD and every snapshot, also --from-snap each older one
#   - the RADOS data objects present (trimmed objects removed, none created)
#   - `rbd object-map check` clean on HEAD and every snapshot (object-map
#     images), no snapshot object map left behind after snapshot removal
# Image kinds: plain (layering), striped (1 MiB objects, 64 KiB stripe
# unit, 4 stripes), separate data pool, Pacific default features
# (exclusive-lock, object-map, fast-diff, deep-flatten).
# Shrinks across object-set boundaries (issue 16): the reported case (4 MiB
# objects, 64 KiB x 4, the old end inside an object set) and a sweep on
# small-object striped layouts (stripe count 1, 3, 4, 8; stripe unit below
# and equal to the object size; with and without object map; a snapshot;
# a striped clone with a snapshot): ends inside a set, at a set boundary,
# one byte before and after one, across several sets, after a grow.
# Finally, on a default-feature image, librbd writes continuously (it holds
# the exclusive lock) while librbdlite creates snapshots and resizes: both
# succeed, all data verifies through librbd, and the writer's open image
# sees the new size (HEADER_UPDATE).
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (a running
# cluster); without them the test fails, it never skips.  Also rbd, rados
# and a python3 with the rados and rbd modules.  Prints one line per
# sub-test and "N passed, M failed"; exits non-zero if anything failed.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd rados timeout md5sum
rbdl_find_python || die "no python3 with the rados and rbd modules"

SNAPOP=$BUILDDIR/tests/cluster/snapop
rbdl_need_progs "$SNAPOP"
DPOOL=$DATA_POOL
TMO=300
rbdl_workdir snapops
IMAGES=()
BG=

cleanup() {
    local i
    [[ -n $BG ]] && kill "$BG" 2>/dev/null
    for i in "${IMAGES[@]}"; do
        rbd snap purge --no-progress "$POOL/$i" >/dev/null 2>&1
        rbd snap ls --format json "$POOL/$i" 2>/dev/null |
            "$PY" -c 'import json,sys; [print(s["name"]) for s in json.load(sys.stdin) if s["protected"] == "true"]' 2>/dev/null |
            while read -r s; do rbd snap unprotect "$POOL/$i@$s" >/dev/null 2>&1; done
        rbd snap purge --no-progress "$POOL/$i" >/dev/null 2>&1
        rbd rm --no-progress "$POOL/$i" >/dev/null 2>&1
    done
    rbdl_rm_workdir
}
rbdl_traps

ok() { rbdl_pass "$*"; }
bad() { rbdl_fail "$*"; }

# The snapop command language on the real librbd.
cat >"$TMP/snapop.py" <<'EOF'
import errno, sys, rados, rbd

def num(s):
    m = {'K': 10, 'M': 20, 'G': 30}
    if s[-1] in m:
        return int(s[:-1], 0) << m[s[-1]]
    return int(s, 0)

args = sys.argv[1:]
ro, snap = False, None
while args and args[0].startswith('-') and args[0] in ('-r', '-s'):
    if args[0] == '-r':
        ro, args = True, args[1:]
    else:
        snap, args = args[1], args[2:]
pool, name, cmds = args[0], args[1], args[2:]
cl = rados.Rados(conffile='')
cl.conf_read_file()
cl.connect()
io = cl.open_ioctx(pool)
im = rbd.Image(io, name, snapshot=snap, read_only=ro)
fails, expect, i = 0, 0, 0
CH = 1 << 20
while i < len(cmds):
    c = cmds[i]
    n = 3 if c in ('write', 'check', 'aiowrite') else 1
    a = cmds[i + 1:i + 1 + n]
    i += 1 + n
    if c == 'expect':
        expect = int(a[0])
        continue
    r = 0
    try:
        if c == 'write':
            off, ln, b = num(a[0]), num(a[1]), num(a[2])
            while ln:
                k = min(ln, CH)
                im.write(bytes([b]) * k, off)
                off, ln = off + k, ln - k
        elif c == 'aiowrite':
            # The reference result: librbd orders writes in flight before
            # a following operation, i.e. as if they had completed first.
            # (Python aio racing a resize has crashed the bindings.)
            off, ln, b = num(a[0]), num(a[1]), num(a[2])
            while ln:
                k = min(ln, CH)
                im.write(bytes([b]) * k, off)
                off, ln = off + k, ln - k
        elif c == 'wait':
            pass
        elif c == 'check':
            off, ln, b = num(a[0]), num(a[1]), num(a[2])
            while ln:
                k = min(ln, CH)
                d = im.read(off, k)
                if d != bytes([b]) * k:
                    print('snapop.py: mismatch in [%d, %d)' % (off, off + k),
                          file=sys.stderr)
                    r = -errno.EILSEQ
                    break
                off, ln = off + k, ln - k
        elif c == 'size':
            if im.size() != num(a[0]):
                print('snapop.py: size %d' % im.size(), file=sys.stderr)
                r = -errno.EILSEQ
        elif c == 'resize':
            im.resize(num(a[0]))
        elif c == 'snapc':
            im.create_snap(a[0])
        elif c == 'snaprm':
            im.remove_snap(a[0])
        elif c == 'rollback':
            im.rollback_to_snap(a[0])
        elif c == 'snapset':
            im.set_snap(None if a[0] == '-' else a[0])
        else:
            sys.exit('snapop.py: unknown command ' + c)
    except rbd.Error as e:
        r = -e.errno
    if r != expect:
        print('snapop.py: %s %s: got %d, expected %d' % (c, a[0], r, expect),
              file=sys.stderr)
        fails += 1
    expect = 0
im.close()
io.close()
cl.shutdown()
sys.exit(1 if fails else 0)
EOF

# Writes [0, 8 MiB) in 64 KiB blocks of 'W' in whole passes until file $3
# exists (at most $4 seconds), holding the exclusive lock most of the time;
# then prints the number of passes and the image size it sees (librbd
# refreshes on the HEADER_UPDATE notification of a resize).
cat >"$TMP/writer.py" <<'EOF'
import os, sys, time, rados, rbd
cl = rados.Rados(conffile='')
cl.conf_read_file()
cl.connect()
io = cl.open_ioctx(sys.argv[1])
im = rbd.Image(io, sys.argv[2])
end = time.time() + float(sys.argv[4])
blk = b'W' * 65536
passes = 0
while passes < 2 or (time.time() < end and not os.path.exists(sys.argv[3])):
    for off in range(0, 8 << 20, 65536):
        im.write(blk, off)
    passes += 1
print(passes, im.size())
im.close()
io.close()
cl.shutdown()
EOF

# run_both LITE REF ARGS...: the command script on both twins.
run_both() {
    local l=$1 r=$2 opts=()
    shift 2
    while [[ $1 == -r || $1 == -s ]]; do
        if [[ $1 == -r ]]; then opts+=(-r); shift; else opts+=(-s "$2"); shift 2; fi
    done
    timeout "$TMO" "$SNAPOP" "${opts[@]}" "$POOL" "$l" "$@" || return 1
    timeout "$TMO" "$PY" "$TMP/snapop.py" "${opts[@]}" "$POOL" "$r" "$@" || return 2
}

image_id() {
    rbd info --format json "$POOL/$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}

# Data object numbers present in RADOS (HEAD or clones), sorted.
objects() {
    local pool=$1 prefix
    prefix=$(rbd info --format json "$POOL/$2" |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["block_name_prefix"])')
    rados -p "$pool" ls | sed -n "s/^$prefix\.//p" | sort
}

snaps() {
    rbd snap ls --format json "$POOL/$1" |
        "$PY" -c 'import json,sys; [print(s["name"], s["size"]) for s in json.load(sys.stdin)]'
}

# cli_out ARGS...: what `rbd ARGS` prints on stdout, then its exit status.
# The rbd CLI (librbd 16.2.15) sometimes aborts in its own shutdown
# (std::system_error in io_context_pool) after printing its answer: a run
# killed by a signal is repeated, up to three times.
cli_out() {
    local out rc try
    for try in 1 2 3; do
        out=$(rbd "$@" 2>/dev/null)
        rc=$?
        ((rc < 128)) && break
    done
    printf '%s\nrc=%s\n' "$out" "$rc"
}

# compare_twins KIND LITE REF DATAPOOL OBJMAP: everything librbd and the
# CLI can see must be identical.
compare_twins() {
    local kind=$1 l=$2 r=$3 dpool=$4 om=$5 what bad='' s f a b
    snaps "$l" >"$TMP/snaps.l"
    snaps "$r" >"$TMP/snaps.r"
    cmp -s "$TMP/snaps.l" "$TMP/snaps.r" || bad+=" snap-ls"
    local specs=("") names
    mapfile -t names < <(awk '{print $1}' "$TMP/snaps.l")
    for s in "${names[@]}"; do specs+=("@$s"); done
    for s in "${specs[@]}"; do
        what=${s:-HEAD}
        a=$(rbd export --no-progress "$POOL/$l$s" - 2>/dev/null | md5sum)
        b=$(rbd export --no-progress "$POOL/$r$s" - 2>/dev/null | md5sum)
        [[ $a == "$b" ]] || bad+=" export($what)"
        a=$(cli_out diff --format json "$POOL/$l$s")
        b=$(cli_out diff --format json "$POOL/$r$s")
        [[ $a == "$b" ]] || bad+=" diff($what)"
        for f in "${names[@]}"; do
            [[ "@$f" == "$s" ]] && break
            a=$(cli_out diff --format json --from-snap "$f" "$POOL/$l$s")
            b=$(cli_out diff --format json --from-snap "$f" "$POOL/$r$s")
            if [[ $a != "$b" ]]; then
                bad+=" diff($what from $f)"
                printf '    lite:   %.400s\n    librbd: %.400s\n' "$a" "$b"
            fi
        done
        if [[ $om == yes ]]; then
            rbd object-map check --no-progress "$POOL/$l$s" >"$TMP/omc" 2>&1
            if grep -qi "error\|invalid" "$TMP/omc"; then
                bad+=" object-map-check($what)"
                sed 's/^/    /' "$TMP/omc" | head -5
            fi
            a=$(rbd info --format json "$POOL/$l$s" |
                "$PY" -c 'import json,sys; print(json.load(sys.stdin)["flags"])')
            [[ $a == "[]" ]] || bad+=" flags($what)=$a"
        fi
    done
    # Clones of removed snapshots are trimmed by the OSDs in the background.
    local _
    for _ in $(seq 30); do
        objects "$dpool" "$l" >"$TMP/obj.l"
        objects "$dpool" "$r" >"$TMP/obj.r"
        cmp -s "$TMP/obj.l" "$TMP/obj.r" && break
        sleep 1
    done
    if ! cmp -s "$TMP/obj.l" "$TMP/obj.r"; then
        bad+=" rados-objects(lite: $(tr '\n' ' ' <"$TMP/obj.l"); librbd: $(tr '\n' ' ' <"$TMP/obj.r"))"
    fi
    if [[ $om == yes ]]; then
        local id
        id=$(image_id "$l")
        rados -p "$POOL" ls | grep "^rbd_object_map\.$id\." | sort >"$TMP/maps"
        local want=0
        want=${#names[@]}
        [[ $(wc -l <"$TMP/maps") -eq $want ]] || bad+=" snapshot-object-maps($(wc -l <"$TMP/maps") for $want snapshots)"
    fi
    if [[ -z $bad ]]; then
        return 0
    fi
    echo "    $kind differs:$bad"
    return 1
}

create_pair() {
    local kind=$1 base
    shift
    base=snapops-$kind-$$
    rbd create --no-progress "$@" "$POOL/$base-l" || return 1
    rbd create --no-progress "$@" "$POOL/$base-r" || return 1
    IMAGES+=("$base-l" "$base-r")
}

# 5 MiB + 4097 bytes: cuts an object (and a stripe unit) in the middle.
ODD=$(((5 << 20) + 4097))

one_kind() {
    local kind=$1 dpool=$2 om=$3
    shift 3
    create_pair "$kind" --size 16M "$@" || { bad "$kind: create"; return; }
    local l=snapops-$kind-$$-l r=snapops-$kind-$$-r

    # Shrink with data beyond the new end, grow again: zeros there.
    if run_both "$l" "$r" write 0 16M 65 resize "$ODD" size "$ODD" \
        resize 16M size 16M check "$ODD" $(((16 << 20) - ODD)) 0 \
        check 0 "$ODD" 65 resize 3M resize 9M check 3M 6M 0 &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om"; then
        ok "$kind: resize shrink/grow"
    else
        bad "$kind: resize shrink/grow"
    fi

    # Snapshots: data at snapshot time, snap_set, EROFS at a snapshot,
    # rollback of data and size, error cases.
    if run_both "$l" "$r" write 0 2M 66 snapc s1 write 1M 4M 67 \
        write 7M 1M 68 snapset s1 check 0 1M 66 check 1M 1M 66 \
        check 3M 6M 0 size 9M expect -30 write 0 1 1 expect -30 resize 1M \
        expect -30 rollback s1 snapset - check 1M 4M 67 resize 7M snapc s2 \
        resize "$ODD" snapc s3 resize 12M write 10M 1M 69 rollback s2 size 7M \
        check 1M 4M 67 rollback s1 size 9M check 0 1M 66 check 1M 1M 66 \
        check 2M 1M 65 check 3M 6M 0 write 8M 512K 70 \
        expect -17 snapc s1 expect -2 snaprm nope expect -2 rollback nope \
        expect -2 snapset nope &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om"; then
        ok "$kind: snapshot create/set/rollback"
    else
        bad "$kind: snapshot create/set/rollback"
    fi

    # Writes in flight when an operation starts are part of its result
    # (librbd blocks and drains writes first); writes after it see it.
    if run_both "$l" "$r" aiowrite 0 3M 72 snapc s4 aiowrite 3M 2M 73 \
        resize 4M aiowrite 1M 1M 74 snapset s4 check 0 3M 72 snapset - \
        check 0 1M 72 check 3M 1M 73 resize 9M check 4M 5M 0 wait x \
        check 1M 1M 74 rollback s4 check 0 3M 72 snaprm s4 &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om"; then
        ok "$kind: operations with writes in flight"
    else
        bad "$kind: operations with writes in flight"
    fi

    # Read-only and snapshot opens.
    if run_both "$l" "$r" -r expect -30 resize 1M expect -30 snapc x \
        expect -30 rollback s1 expect -30 snaprm s1 expect -2 snaprm nope \
        snapset s1 check 1M 1M 66 snapset - &&
        run_both "$l" "$r" -s s2 size 7M expect -30 write 0 1 1 \
        check 1M 4M 67 snapset - size 9M write 0 4K 71 &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om"; then
        ok "$kind: read-only and snapshot opens"
    else
        bad "$kind: read-only and snapshot opens"
    fi

    # Removal: protected (EBUSY), then all; nothing left behind.
    local rc=0
    rbd snap protect "$POOL/$l@s2" && rbd snap protect "$POOL/$r@s2" || rc=1
    run_both "$l" "$r" expect -16 snaprm s2 || rc=1
    rbd snap unprotect "$POOL/$l@s2" && rbd snap unprotect "$POOL/$r@s2" || rc=1
    if [[ $rc == 0 ]] && run_both "$l" "$r" snaprm s2 &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om" &&
        run_both "$l" "$r" snaprm s1 snaprm s3 expect -2 snaprm s1 &&
        compare_twins "$kind" "$l" "$r" "$dpool" "$om" &&
        [[ -z $(rbd snap ls "$POOL/$l") ]]; then
        ok "$kind: snapshot remove"
    else
        bad "$kind: snapshot remove"
    fi
}

# RBDLITE_SNAPOPS_KINDS="plain default ..." runs a subset (default: all).
KINDS=" ${RBDLITE_SNAPOPS_KINDS-plain striped datapool default default-striped shrink16 shrink-sweep shrink-clone contend grpsnaps} "
want() { [[ $KINDS == *" $1 "* ]]; }

want plain && one_kind plain "$POOL" no --image-feature layering
want striped && one_kind striped "$POOL" no --image-feature layering,striping \
    --object-size 1M --stripe-unit 64K --stripe-count 4
want datapool && one_kind datapool "$DPOOL" no --image-feature layering,data-pool --data-pool "$DPOOL"
want default && one_kind default "$POOL" yes --image-feature layering,exclusive-lock,object-map,fast-diff,deep-flatten
want default-striped && one_kind default-striped "$POOL" yes \
    --image-feature layering,striping,exclusive-lock,object-map,fast-diff,deep-flatten \
    --object-size 1M --stripe-unit 64K --stripe-count 4

# ---- shrinks across object-set boundaries (issue 16)
# librbd's trim removes every object wholly past the new end: the whole
# object sets past it and, in the last set still in use, each object whose
# part of [new size, old end) starts at object offset 0, however short that
# part is (the old end may lie inside the set); only objects that keep data
# below the new end are truncated or zeroed.  Then the header takes the new
# size and the object map shrinks (cls object_map_resize refuses, -ESTALE,
# while an object it drops is not NONEXISTENT).
OMFEAT=layering,striping,exclusive-lock,object-map,fast-diff

# The reported case: 4 MiB objects, 64 KiB x 4, the old end 109 stripe
# units into object set 3, one byte in object 14, which lies wholly past
# the new end with a 27-unit part of the cut.
shrink16() {
    local kind=shrink16 l r
    create_pair "$kind" --size 57475072B --image-feature "$OMFEAT" \
        --stripe-unit 64K --stripe-count 4 || { bad "$kind: create"; return; }
    l=snapops-$kind-$$-l r=snapops-$kind-$$-r
    if run_both "$l" "$r" write $(((48 << 20) + (130 << 10))) 1 1 \
        resize 50458624 size 50458624 check 48M 126976 0 &&
        compare_twins "$kind" "$l" "$r" "$POOL" yes; then
        ok "$kind: striped object-map image shrunk with the old end inside an object set"
    else
        bad "$kind: striped object-map image shrunk with the old end inside an object set"
    fi
}

# sweep_step KIND L R OM WHAT CMD...: one chunk of a sweep on both twins,
# then the twins compared.
sweep_step() {
    local kind=$1 l=$2 r=$3 om=$4 what=$5
    shift 5
    if run_both "$l" "$r" "$@" && compare_twins "$kind" "$l" "$r" "$POOL" "$om"; then
        ok "$kind: $what"
    else
        bad "$kind: $what"
    fi
}

# shrink_sweep KIND OBJMAP OBJECT_SIZE STRIPE_UNIT STRIPE_COUNT FEATURES
#              [SNAPSHOT]
# With p the object-set size and u the stripe unit: from 3 units before
# the end of set 3 down to 3p + 2u (a unit boundary inside the set), 3p +
# u + 100, 3p (a set boundary), 3p - 1, 2p + 1; grown to 4p + u/2 (data
# written there) and shrunk across three sets to p + 3u + 7; to u - 1;
# grown to 2p - 2u + 3 (rewritten) and shrunk to p + u, then p.  SNAPSHOT
# "snap" takes a snapshot after the first write.
shrink_sweep() {
    local kind=$1 om=$2 o=$3 u=$4 c=$5 feat=$6 snap=${7:-} l r p s0 g1 g2 sc=()
    p=$((o * c))
    s0=$((4 * p - 3 * u + 5))
    g1=$((4 * p + u / 2))
    g2=$((2 * p - 2 * u + 3))
    [[ $snap == snap ]] && sc=(snapc a)
    create_pair "$kind" --size "${s0}B" --image-feature "$feat" --object-size "$o" \
        --stripe-unit "$u" --stripe-count "$c" || { bad "$kind: create"; return; }
    l=snapops-$kind-$$-l r=snapops-$kind-$$-r
    sweep_step "$kind" "$l" "$r" "$om" "shrinks inside and to the end of an object set" \
        write 0 "$s0" 65 "${sc[@]}" resize $((3 * p + 2 * u)) \
        resize $((3 * p + u + 100)) size $((3 * p + u + 100)) \
        resize $((3 * p)) resize $((3 * p - 1)) check 0 $((3 * p - 1)) 65
    sweep_step "$kind" "$l" "$r" "$om" "shrinks one byte past a set boundary and across sets" \
        resize $((2 * p + 1)) check 0 $((2 * p + 1)) 65 resize "$g1" \
        check $((2 * p + 1)) $((g1 - 2 * p - 1)) 0 \
        write $((2 * p + 1)) $((g1 - 2 * p - 1)) 66 \
        resize $((p + 3 * u + 7)) size $((p + 3 * u + 7)) check 0 $((p + 3 * u + 7)) 65
    sweep_step "$kind" "$l" "$r" "$om" "grow, then shrinks inside the first sets" \
        resize $((u - 1)) resize "$g2" check $((u - 1)) $((g2 - u + 1)) 0 \
        write 0 "$g2" 67 resize $((p + u)) check 0 $((p + u)) 67 resize "$p" \
        size "$p"
}

# A clone with a snapshot: objects wholly past the new end that still
# show parent data are copied up (the snapshot keeps it) before they go.
shrink_clone() {
    local kind=shrink-clone o=65536 u=16384 c=4 p s0 base par l r
    p=$((o * c))
    s0=$((4 * p - 3 * u + 5))
    base=snapops-$kind-$$
    par=$base-p l=$base-l r=$base-r
    rbd create --no-progress --size "${s0}B" --image-feature "$OMFEAT" \
        --object-size "$o" --stripe-unit "$u" --stripe-count "$c" \
        "$POOL/$par" || { bad "$kind: create"; return; }
    # Children first: the parent's snapshot can go only after them.
    IMAGES=("$l" "$r" "${IMAGES[@]}" "$par")
    if ! timeout "$TMO" "$PY" "$TMP/snapop.py" "$POOL" "$par" write 0 "$s0" 81 ||
        ! rbd snap create --no-progress "$POOL/$par@base" ||
        ! rbd snap protect "$POOL/$par@base" ||
        ! rbd clone --image-feature "$OMFEAT" "$POOL/$par@base" "$POOL/$l" ||
        ! rbd clone --image-feature "$OMFEAT" "$POOL/$par@base" "$POOL/$r"; then
        bad "$kind: create"
        return
    fi
    sweep_step "$kind" "$l" "$r" yes "striped clone with a snapshot shrunk inside and across object sets" \
        snapc s0 write $((2 * p - 5)) 100 82 resize $((3 * p + 2 * u)) \
        resize $((3 * p + u + 100)) check $((2 * p + 95)) 10 81 \
        resize $((2 * p + 1)) check 0 5 81 check $((2 * p - 5)) 6 82 \
        resize $((u - 1)) resize $((2 * p)) \
        check $((u - 1)) $((2 * p - u + 1)) 0
}

want shrink16 && shrink16
if want shrink-sweep; then
    shrink_sweep sweep-64k-su16k-sc4 yes 65536 16384 4 "$OMFEAT"
    shrink_sweep sweep-128k-su32k-sc3 yes 131072 32768 3 "$OMFEAT" snap
    shrink_sweep sweep-64k-su64k-sc8 yes 65536 65536 8 "$OMFEAT"
    shrink_sweep sweep-64k-su8k-sc1 yes 65536 8192 1 "$OMFEAT"
    shrink_sweep sweep-nomap-128k-su32k-sc3 no 131072 32768 3 layering,striping
fi
want shrink-clone && shrink_clone

# librbd holds the lock and keeps writing while librbdlite snapshots and
# resizes the image.
contend() {
    local img=snapops-lock-$$ passes
    rbd create --no-progress --size 16M "$POOL/$img" || return 1
    IMAGES+=("$img")
    timeout "$TMO" "$PY" "$TMP/writer.py" "$POOL" "$img" "$TMP/lite-done" 120 \
        >"$TMP/writer.out" 2>"$TMP/writer.err" &
    BG=$!
    # Start once librbd owns the lock.
    for _ in $(seq 60); do
        [[ -n $(rbd lock ls "$POOL/$img" 2>/dev/null) ]] && break
        sleep 0.5
    done
    timeout "$TMO" "$SNAPOP" "$POOL" "$img" snapc c1 resize 32M write 12M 1M 88 \
        snapc c2 resize 24M || { echo "    librbdlite side failed"; touch "$TMP/lite-done"; wait "$BG"; BG=; return 1; }
    touch "$TMP/lite-done"
    wait "$BG" || { echo "    librbd writer failed: $(cat "$TMP/writer.err")"; BG=; return 1; }
    BG=
    read -r passes size <"$TMP/writer.out"
    [[ $passes -ge 2 ]] || { echo "    writer: $(cat "$TMP/writer.out")"; return 1; }
    [[ $size == $((24 << 20)) ]] || { echo "    the writer's open image has size $size: $(cat "$TMP/writer.out")"; return 1; }
    timeout "$TMO" "$PY" "$TMP/snapop.py" "$POOL" "$img" size 24M check 0 8M 87 \
        check 8M 4M 0 check 12M 1M 88 check 13M 11M 0 || return 1
    [[ $(snaps "$img" | tr '\n' ' ') == "c1 16777216 c2 33554432 " ]] || { echo "    snapshots: $(snaps "$img")"; return 1; }
    local s
    for s in "" @c1 @c2; do
        rbd object-map check --no-progress "$POOL/$img$s" >"$TMP/omc" 2>&1
        if grep -qi "error\|invalid" "$TMP/omc"; then
            echo "    object-map check $s:"; head -3 "$TMP/omc"; return 1
        fi
    done
    [[ -z $(rbd lock ls "$POOL/$img") ]] || return 1
}
if ! want contend; then
    :
elif contend; then
    ok "librbd writing (holds the lock) while librbdlite snapshots and resizes"
else
    bad "librbd writing (holds the lock) while librbdlite snapshots and resizes"
fi

# rbd_snap_list lists every snapshot namespace, as librbd's does: a group
# snapshot shows up between the user snapshots, and rbd_snap_exists sees
# only user snapshots.  Twin images, one read through each library
# (cloneop "snaps"), outputs compared.
grpsnaps() {
    local s base=snapops-grp-$$ rc=0
    local lite=$BUILDDIR/tests/cluster/cloneop-lite ref=$BUILDDIR/tests/cluster/cloneop-librbd
    rbdl_need_progs "$lite" "$ref"
    for s in l r; do
        IMAGES+=("$base-$s")
        { rbd create --no-progress --size 8M "$POOL/$base-$s" &&
            rbd snap create --no-progress "$POOL/$base-$s@u1" &&
            rbd group create "$POOL/$base-g$s" &&
            rbd group image add "$POOL/$base-g$s" "$POOL/$base-$s" &&
            rbd group snap create "$POOL/$base-g$s@gs" &&
            rbd snap create --no-progress "$POOL/$base-$s@u2"; } >"$TMP/grp.log" 2>&1 ||
            { echo "    setup failed:"; sed 's/^/    | /' "$TMP/grp.log"; rc=1; }
    done
    if ((rc == 0)); then
        timeout "$TMO" "$ref" "$POOL" "$base-r" snaps >"$TMP/grp.r" 2>&1 &&
            timeout "$TMO" "$lite" "$POOL" "$base-l" snaps >"$TMP/grp.l" 2>&1 || rc=1
        grep -q '^  \.group\.\* ' "$TMP/grp.r" || { echo "    librbd lists no group snapshot"; rc=1; }
        cmp -s "$TMP/grp.r" "$TMP/grp.l" ||
            { echo "    outputs differ (< librbd, > librbdlite):"; diff "$TMP/grp.r" "$TMP/grp.l" | sed 's/^/    /'; rc=1; }
    fi
    for s in l r; do
        rbd group rm "$POOL/$base-g$s" >/dev/null 2>&1
    done
    return "$rc"
}
if ! want grpsnaps; then
    :
elif grpsnaps; then
    ok "rbd_snap_list lists group snapshots as librbd does"
else
    bad "rbd_snap_list lists group snapshots as librbd does"
fi

rbdl_summary
