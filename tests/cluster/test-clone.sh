#!/usr/bin/env bash
# test-clone.sh - clones (layered images) through librbdlite, judged
# against the real librbd 16.2 and the rbd CLI.
#
# Differential: every case makes a parent image (seeded data in several
# extents, the last partial object included, holes left), snapshots it and
# makes twin clones with `rbd clone`.  One command script
# (tests/cluster/cloneop.c: write, aiowrite, read, readall, discard, zero,
# writesame, cmpwrite, snapc, snapset, resize, parent, diff, waitfile)
# runs on one twin through cloneop-lite (librbdlite) and on the other
# through cloneop-librbd (librbd): the outputs (return values, checksums
# of reads, parent info and overlap, rbd_diff_iterate2 extents with
# include_parent 0/1 and whole_object 0/1) must be equal.  Then the twins
# must be identical as seen by librbd and the rbd CLI:
#   - `rbd export` of HEAD and of every child snapshot (md5)
#   - `rbd diff` of HEAD and every snapshot, also --from-snap each older
#     snapshot, each with and without --whole-object
#   - `rbd info --format json` (minus names, ids and timestamps: size,
#     features, flags, parent and overlap, striping, data pool), also at
#     every snapshot; `rbd object-map check` on object-map images
#   - the RADOS data objects of each twin (names after the prefix) and
#     their sizes
#   - reads: librbdlite and librbd read both twins (HEAD and every
#     snapshot, opened at the snapshot and through rbd_snap_set) in
#     unaligned pieces, and all four must be equal.
# Cases (parents keep changing after their snapshot; clones read them at
# the snapshot; the overlap ends inside an object):
#  (a) clone v2, default features, same pool: reads through the overlap,
#      copy-up by partial writes, whole-object writes, discard and
#      write-zeroes inside and beyond the overlap, writesame,
#      compare-and-write, aio writes in flight;
#  (b) child snapshots before the writes (deep copy-up), snapshot opens,
#      rollback over copy-ups and a shrink;
#  (c) parent with a data pool, children in another pool (1 MiB objects
#      striped 64 KiB x 4) and in a namespace (2 MiB objects); a parent in
#      a namespace, children in another pool;
#  (d) a clone of a clone (3 levels); a clone v1;
#  (e) layering only (no lock, no object map);
#  (f) shrink below the overlap and grow back (zeros there), with child
#      snapshots from before and after;
#  (g) `rbd flatten` while the tool holds the image open, then I/O;
#  (h) the destination of a prepared (not executed) migration of a source
#      with a snapshot: reads equal librbd's, writes through librbdlite
#      fail with -EROFS and change nothing (librbd's copy-up would fill in
#      the snapshot history); then again after execute and commit; and
#      twin destinations of sources without snapshots, written through
#      librbdlite and librbd alike (copy-ups from the source), judged as
#      twins, then executed and committed (judged again) or aborted (the
#      sources, which the abort gives the writes back to, judged);
#  (i) rbd_remove of clones v2 and v1, in the parent's pool and another:
#      the parent no longer lists them, no object is left, and the parent
#      snapshot can be unprotected.
#
# RBDLITE_CLONE_REFERENCE=1 runs the "lite" side with cloneop-librbd too
# (validates the test itself against librbd; the librbdlite-only -EROFS
# check of (h) is then not made).  RBDLITE_CLONE_CASES="a b ..." runs a
# subset.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (fails,
# never skips, without them), rbd, rados and python3 with the rados and
# rbd modules.  Prints "N passed, M failed" last; exits non-zero on any
# failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd rados timeout md5sum
rbdl_find_python || die "no python3 with the rados and rbd modules"
rbdl_twins cloneop
REFERENCE=${RBDLITE_CLONE_REFERENCE:-0}
((REFERENCE)) && LITE=$REF
rbdl_need_progs "$LITE" "$REF"
TMO=${RBDLITE_CLONE_TIMEOUT:-120}
CASES=" ${RBDLITE_CLONE_CASES-a b c d e f g h i} "
want() { [[ $CASES == *" $1 "* ]]; }
rbdl_workdir clone
NS=clonens$$
NS_MADE=0
MIG=
MIGS=()
IMAGES=() # specs pool[/ns]/name, removed in reverse order
BG=()

cleanup() {
    rbdl_kill_bg
    [[ -n $MIG ]] && rbd migration abort --no-progress "$MIG" >/dev/null 2>&1
    for m in "${MIGS[@]}"; do
        rbd migration abort --no-progress "$m" >/dev/null 2>&1
    done
    rbdl_remove_images 90
    ((NS_MADE)) && rbd namespace remove "$POOL/$NS" >/dev/null 2>&1
    rbdl_rm_workdir
}
rbdl_traps

K=1024
M=$((1 << 20))
# Parent size: the last object is partial, and so is the overlap.
PSIZE=$((10 * M + 12345))
STEP=$((M + 4097)) # unaligned read pieces

# read_opts ARGS...: the leading "-r" and "-s SNAP" options of ARGS into
# OPTS; NOPT is how many words they take.
read_opts() {
    OPTS=() NOPT=0
    while [[ ${1-} == -r || ${1-} == -s ]]; do
        if [[ $1 == -r ]]; then
            OPTS+=(-r)
            shift
            ((NOPT += 1))
        else
            OPTS+=(-s "$2")
            shift 2
            ((NOPT += 2))
        fi
    done
}

# op BIN [-r] [-s SNAP] SPEC CMD...: cloneop on the image pool[/ns]/name.
op() {
    local bin=$1 opts a b c
    shift
    read_opts "$@"
    opts=("${OPTS[@]}")
    shift "$NOPT"
    IFS=/ read -r a b c <<<"$1"
    shift
    if [[ -n $c ]]; then
        timeout -k 5 "$TMO" "$bin" "${opts[@]}" -n "$b" "$a" "$c" "$@"
    else
        timeout -k 5 "$TMO" "$bin" "${opts[@]}" "$a" "$b" "$@"
    fi
}

show() { head -n "${2:-20}" "$1" | sed 's/^/    | /'; }

# run_both LABEL LITE-SPEC REF-SPEC [-r] [-s SNAP] CMD...: the script on
# both twins; both must succeed with equal output.
run_both() {
    local label=$1 l=$2 r=$3 opts
    shift 3
    read_opts "$@"
    opts=("${OPTS[@]}")
    shift "$NOPT"
    op "$LITE" "${opts[@]}" "$l" "$@" >"$TMP/l.out" 2>"$TMP/l.err"
    local rl=$?
    op "$REF" "${opts[@]}" "$r" "$@" >"$TMP/r.out" 2>"$TMP/r.err"
    local rr=$?
    if ((rr != 0)); then
        fail "$label: librbd side exit $rr"
        show "$TMP/r.err"
        show "$TMP/r.out" 10
    elif ((rl != 0)); then
        fail "$label: librbdlite side exit $rl"
        show "$TMP/l.err"
        diff "$TMP/r.out" "$TMP/l.out" | show - 20
    elif ! cmp -s "$TMP/l.out" "$TMP/r.out"; then
        fail "$label: outputs differ (< librbd, > librbdlite)"
        diff "$TMP/r.out" "$TMP/l.out" | show - 30
    else
        pass "$label ($(wc -l <"$TMP/l.out") lines equal)"
    fi
}

jq_py() { "$PY" -c "import json,sys; d=json.load(sys.stdin); $1"; }

# info SPEC[@SNAP]: rbd info without what differs between twins.
info() {
    rbd info --format json "$1" 2>&1 | jq_py '
for k in ("name", "id", "block_name_prefix", "create_timestamp",
          "access_timestamp", "modify_timestamp"):
    d.pop(k, None)
print(json.dumps(d, sort_keys=True))'
}

# objects SPEC: "suffix size" of every data object of the image.
objects() {
    rbd info --format json "$1" >"$TMP/info.json" || return 1
    "$PY" - "$1" "$POOL" "$TMP/info.json" <<'EOF'
import json, subprocess, sys, rados
spec, pool, info = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
parts = spec.split('/')
ns = parts[1] if len(parts) == 3 else ''
dpool = info.get('data_pool', parts[0])
prefix = info['block_name_prefix'] + '.'
c = rados.Rados(conffile=''); c.conf_read_file(); c.connect()
io = c.open_ioctx(dpool)
io.set_namespace(ns)
out = []
for o in io.list_objects():
    if o.key.startswith(prefix):
        try:
            size = str(io.stat(o.key)[0])
        except rados.ObjectNotFound:
            # No head: list the snapshot clones left (id-free: sizes).
            # An entry with no clones either is invisible to every reader
            # (librbd's remove of an absent object under a snapshot
            # context can leave one): skip it.
            ls = subprocess.run(['rados', '-p', dpool, '-N', ns,
                                 'listsnaps', o.key], capture_output=True,
                                text=True).stdout.splitlines()
            clones = [l.split()[2] for l in ls[2:] if l.split()
                      and l.split()[0] != 'head']
            if not clones:
                continue
            size = 'no-head clones=' + ','.join(clones)
        out.append('%s %s' % (o.key[len(prefix):], size))
print('\n'.join(sorted(out)))
io.close(); c.shutdown()
EOF
}

# omc_norm LOG: what `rbd object-map check` complained about, without
# image-specific names (object numbers and states only).
omc_norm() {
    sed -n 's/.*object rbd_data\.[0-9a-f]*\.\([0-9a-f]*\) \(marked as .*\)/\1 \2/p
s/.*\(failed\|error\).*: \(.*\)$/\1: \2/p' "$1" | sort -u
}

snapnames() {
    rbd snap ls --format json "$1" | jq_py '[print(s["name"], s["size"]) for s in d]'
}

# compare_twins LABEL LITE REF OM: everything librbd and the CLI see.
compare_twins() {
    local label=$1 l=$2 r=$3 om=$4 bad='' s f w a b names=() specs=("")
    snapnames "$l" >"$TMP/sn.l" 2>&1
    snapnames "$r" >"$TMP/sn.r" 2>&1
    cmp -s "$TMP/sn.l" "$TMP/sn.r" || bad+=" snap-ls"
    mapfile -t names < <(awk '{print $1}' "$TMP/sn.r")
    for s in "${names[@]}"; do specs+=("@$s"); done
    for s in "${specs[@]}"; do
        local what=${s:-HEAD}
        a=$(rbd export --no-progress "$l$s" - 2>/dev/null | md5sum)
        b=$(rbd export --no-progress "$r$s" - 2>/dev/null | md5sum)
        [[ $a == "$b" ]] || bad+=" export($what)"
        for f in "" --whole-object; do
            a=$(rbd diff --format json $f "$l$s" 2>&1)
            b=$(rbd diff --format json $f "$r$s" 2>&1)
            [[ $a == "$b" ]] || bad+=" diff($what$f)"
        done
        for f in "${names[@]}"; do
            [[ "@$f" == "$s" ]] && break
            for w in "" --whole-object; do
                a=$(rbd diff --format json $w --from-snap "$f" "$l$s" 2>&1)
                b=$(rbd diff --format json $w --from-snap "$f" "$r$s" 2>&1)
                [[ $a == "$b" ]] || bad+=" diff($what from $f$w)"
            done
        done
        a=$(info "$l$s")
        b=$(info "$r$s")
        if [[ $a != "$b" ]]; then
            bad+=" info($what)"
            printf '    lite:   %s\n    librbd: %s\n' "$a" "$b"
        fi
        if [[ $om == yes ]]; then
            # Both twins' maps must check the same: clean, or with the
            # same complaints (librbd's own rollback leaves EXISTS_CLEAN
            # entries that `object-map check` flags).
            rbd object-map check --no-progress "$l$s" >"$TMP/omc" 2>&1
            rbd object-map check --no-progress "$r$s" >"$TMP/omc.r" 2>&1
            omc_norm "$TMP/omc" >"$TMP/omc.n"
            omc_norm "$TMP/omc.r" >"$TMP/omc.rn"
            if ! cmp -s "$TMP/omc.n" "$TMP/omc.rn"; then
                bad+=" object-map-check($what)"
                show "$TMP/omc" 5
            fi
        fi
    done
    objects "$l" >"$TMP/obj.l" 2>&1
    objects "$r" >"$TMP/obj.r" 2>&1
    if ! cmp -s "$TMP/obj.l" "$TMP/obj.r"; then
        bad+=" rados-objects"
        diff "$TMP/obj.r" "$TMP/obj.l" | show - 10
    fi
    if [[ -z $bad ]]; then
        pass "$label: twins identical (${#specs[@]} exports, $(wc -l <"$TMP/obj.r") objects)"
    else
        fail "$label: twins differ:$bad"
    fi
}

# xread LABEL LITE REF: librbdlite and librbd read both twins (HEAD, each
# snapshot opened directly and through rbd_snap_set): all equal.
xread() {
    local label=$1 l=$2 r=$3 names=() s bad='' set=()
    mapfile -t names < <(snapnames "$r" | awk '{print $1}')
    for s in "${names[@]}"; do set+=(snapset "$s" readall "$STEP"); done
    for s in - "${names[@]}"; do
        local o=() cmds=(readall "$STEP")
        [[ $s == - ]] || o=(-s "$s")
        [[ $s == - ]] && cmds+=("${set[@]}" snapset - readall "$STEP")
        op "$REF" -r "${o[@]}" "$r" "${cmds[@]}" >"$TMP/x.rr" 2>&1
        op "$REF" -r "${o[@]}" "$l" "${cmds[@]}" >"$TMP/x.rl" 2>&1
        op "$LITE" -r "${o[@]}" "$r" "${cmds[@]}" >"$TMP/x.lr" 2>&1
        op "$LITE" -r "${o[@]}" "$l" "${cmds[@]}" >"$TMP/x.ll" 2>&1
        if ! grep -q '^close = 0' "$TMP/x.rr"; then
            bad+=" librbd-read($s)"
            show "$TMP/x.rr" 5
            continue
        fi
        for f in rl lr ll; do
            if ! cmp -s "$TMP/x.rr" "$TMP/x.$f"; then
                bad+=" $f($s)"
                diff "$TMP/x.rr" "$TMP/x.$f" | show - 6
            fi
        done
    done
    if [[ -z $bad ]]; then
        pass "$label: reads by librbdlite and librbd of both twins equal ($((${#names[@]} + 1)) heads/snapshots)"
    else
        fail "$label: reads differ (rl: librbd on the lite twin, lr/ll: librbdlite on the librbd/lite twin):$bad"
    fi
}

# mkparent SPEC OPTS...: a PSIZE image with seeded extents (written by
# librbd): crossing object boundaries, a whole 1 MiB range, the end of the
# last (partial) object; holes in between.  Snapshot @p, then the parent's
# HEAD changes (clones must read the parent at @p).
mkparent() {
    local spec=$1
    shift
    IMAGES+=("$spec")
    rbd create --no-progress --size 16M "$@" "$spec" >>"$TMP/mk.log" 2>&1 || return 1
    op "$REF" "$spec" resize "$PSIZE" write 0 64K 11 \
        write $((M - 4 * K)) 8K 12 write $((2 * M + 100)) 300K 13 \
        write 4M 1M 14 write $((6 * M + 512 * K)) 1M 15 \
        write $((PSIZE - 20000)) 20000 16 >>"$TMP/mk.log" 2>&1 &&
        rbd snap create --no-progress "$spec@p" >>"$TMP/mk.log" 2>&1 &&
        op "$REF" "$spec" write 0 8K 17 write $((3 * M)) 4K 18 \
            discard 4M 512K write $((PSIZE - 100)) 100 19 >>"$TMP/mk.log" 2>&1
}

# twins PARENT@SNAP LITE REF OPTS...: two clones.
twins() {
    local p=$1 l=$2 r=$3
    shift 3
    IMAGES+=("$l" "$r") # a failed clone may leave a half-made image
    rbd clone "$@" "$p" "$l" >>"$TMP/mk.log" 2>&1 &&
        rbd clone "$@" "$p" "$r" >>"$TMP/mk.log" 2>&1
}

setup_ok() {
    if "$@" >>"$TMP/mk.log" 2>&1; then
        return 0
    fi
    fail "set-up: $*"
    tail -n 12 "$TMP/mk.log" | show -
    return 1
}

DIFFS=(diff - 0 size 1 0 diff - 0 size 1 1 diff - 0 size 0 0 diff - 0 size 0 1)

# The I/O script of cases a and e: reads through the overlap, copy-up by
# partial writes, whole-object writes, discard / write-zeroes of whole and
# partial objects inside and beyond the overlap, writesame,
# compare-and-write (matching parent data, not matching, crossing a
# sector: -EINVAL in librbd 16.2), aio writes in flight.
IO_A=(parent read 0 64K read $((M - 5000)) 10000 read $((2 * M)) $((3 * M + 7))
    readall "$STEP" "${DIFFS[@]}"
    write $((2 * M + 200 * K)) 4K 21 write 5M 1M 22 write 4M 1M 23
    write $((9 * M + 4000)) 100 24 resize 14M write 12M 64K 25
    discard 6M 1M discard $((7 * M + 100 * K)) 200K discard $((12 * M + 16 * K)) 16K
    zero 1M 1M zero 10M 4K zero $((10 * M + 8 * K)) 8K zero 13M 1M
    writesame $((3 * M + 1000)) 64K 512 26
    cmpwrite 0 512 11 27 expect -84 cmpwrite $((64 * K - 256)) 256 12 28
    expect -22 cmpwrite $((64 * K - 256)) 512 11 28
    cmpwrite $((7 * M + 400 * K)) 512 15 29
    aiowrite $((8 * M + 4 * K)) 8K 30 aiowrite 0 4K 31
    aiowrite $((9 * M)) $((M + 4 * K)) 32 aiowrite $((7 * M + 600 * K)) 4K 33
    aiowrite $((7 * M + 800 * K)) 4K 34 aiowrite $((7 * M + 900 * K)) 64K 35 wait
    read 0 $((14 * M)) readall "$STEP" parent "${DIFFS[@]}")

# A shorter script for the other layouts (a child snapshot first: deep
# copy-up).
IO_C=(parent readall "$STEP" "${DIFFS[@]}" snapc s0
    write $((2 * M + 200 * K)) 4K 41 write 4M 1M 42 write $((9 * M + 4000)) 100 43
    discard 6M 1M zero $((M - 2 * K)) 4K writesame $((6 * M + 700 * K)) 32K 512 44
    cmpwrite 100 100 11 45 resize 12M write $((11 * M)) 8K 46
    readall "$STEP" parent "${DIFFS[@]}")

T=clone$$
FEAT=layering,exclusive-lock,object-map,fast-diff,deep-flatten

# ---- a. clone v2, default features, same pool
if want a && setup_ok mkparent "$POOL/$T-pa" --object-size 1M &&
    setup_ok twins "$POOL/$T-pa@p" "$POOL/$T-al" "$POOL/$T-ar" \
        --rbd-default-clone-format 2 --image-feature "$FEAT"; then
    run_both "a: clone v2 I/O" "$POOL/$T-al" "$POOL/$T-ar" "${IO_A[@]}"
    compare_twins "a" "$POOL/$T-al" "$POOL/$T-ar" yes
    xread "a" "$POOL/$T-al" "$POOL/$T-ar"
fi

# ---- b. child snapshots before the writes (deep copy-up)
if want b && { [[ " ${IMAGES[*]-} " == *" $POOL/$T-pa "* ]] ||
    setup_ok mkparent "$POOL/$T-pa" --object-size 1M; } &&
    setup_ok twins "$POOL/$T-pa@p" "$POOL/$T-bl" "$POOL/$T-br" \
        --rbd-default-clone-format 2 --image-feature "$FEAT"; then
    run_both "b: snapshots then copy-up" "$POOL/$T-bl" "$POOL/$T-br" \
        snapc c1 write $((2 * M + 200 * K)) 4K 51 write 6M 4K 52 \
        discard 4M 1M snapc c2 zero 0 4K write $((9 * M + 100)) 4K 53 \
        discard $((M - 4 * K)) 8K write 4M 4K 54 \
        aiowrite $((6 * M + 520 * K)) 4K 57 aiowrite $((6 * M + 900 * K)) 8K 58 \
        aiowrite $((M + 100 * K)) 4K 59 wait snapc c3 \
        cmpwrite $((6 * M + 600 * K)) 512 15 55 resize 5M snapset c1 readall "$STEP" \
        snapset c2 "${DIFFS[@]}" diff c1 0 size 1 0 diff c1 0 size 0 1 \
        snapset - readall "$STEP" "${DIFFS[@]}" diff c1 0 size 1 1 \
        diff c2 0 size 0 0 parent
    # Roll a third twin pair back to a snapshot taken before any copy-up.
    if setup_ok twins "$POOL/$T-pa@p" "$POOL/$T-bkl" "$POOL/$T-bkr" \
        --rbd-default-clone-format 2 --image-feature "$FEAT"; then
        run_both "b: rollback over copy-ups" "$POOL/$T-bkl" "$POOL/$T-bkr" \
            write $((M + 4 * K)) 8K 61 snapc r1 write 4M 4K 62 \
            write 7M 1M 63 resize 6M snapc r2 write $((2 * M)) 4K 64 \
            rollback r1 readall "$STEP" "${DIFFS[@]}" rollback r2 \
            readall "$STEP" parent
        compare_twins "b-rollback" "$POOL/$T-bkl" "$POOL/$T-bkr" yes
    fi
    run_both "b: opened at a snapshot" "$POOL/$T-bl" "$POOL/$T-br" -s c2 \
        parent readall "$STEP" "${DIFFS[@]}" diff c1 0 size 1 0 \
        expect -30 write 0 4K 56
    compare_twins "b" "$POOL/$T-bl" "$POOL/$T-br" yes
    xread "b" "$POOL/$T-bl" "$POOL/$T-br"
fi

# ---- c. parent with a data pool; children in another pool (striped) and
# in a namespace (2 MiB objects)
if want c && setup_ok mkparent "$POOL/$T-pc" --object-size 4M \
    --data-pool "$DATA_POOL" --image-feature "$FEAT"; then
    if setup_ok twins "$POOL/$T-pc@p" "$DATA_POOL/$T-cl" "$DATA_POOL/$T-cr" \
        --rbd-default-clone-format 2 --object-size 1M --stripe-unit 64K \
        --stripe-count 4 \
        --image-feature "$FEAT"; then
        run_both "c: striped clone in pool $DATA_POOL" "$DATA_POOL/$T-cl" \
            "$DATA_POOL/$T-cr" "${IO_C[@]}"
        compare_twins "c-pool" "$DATA_POOL/$T-cl" "$DATA_POOL/$T-cr" yes
        xread "c-pool" "$DATA_POOL/$T-cl" "$DATA_POOL/$T-cr"
    fi
    if setup_ok rbd namespace create "$POOL/$NS" && NS_MADE=1 &&
        setup_ok twins "$POOL/$T-pc@p" "$POOL/$NS/$T-nl" "$POOL/$NS/$T-nr" \
            --rbd-default-clone-format 2 --object-size 2M --stripe-unit 2M \
            --stripe-count 1 --image-feature "$FEAT"; then
        run_both "c: clone in namespace $NS" "$POOL/$NS/$T-nl" \
            "$POOL/$NS/$T-nr" "${IO_C[@]}"
        compare_twins "c-namespace" "$POOL/$NS/$T-nl" "$POOL/$NS/$T-nr" yes
        xread "c-namespace" "$POOL/$NS/$T-nl" "$POOL/$NS/$T-nr"
        # And the other way: the parent in the namespace, the children in
        # the default namespace of another pool.
        if setup_ok mkparent "$POOL/$NS/$T-pn" --object-size 1M &&
            setup_ok twins "$POOL/$NS/$T-pn@p" "$DATA_POOL/$T-xl" \
                "$DATA_POOL/$T-xr" --rbd-default-clone-format 2 \
                --image-feature "$FEAT"; then
            run_both "c: clone of a parent in namespace $NS" \
                "$DATA_POOL/$T-xl" "$DATA_POOL/$T-xr" "${IO_C[@]}"
            compare_twins "c-from-namespace" "$DATA_POOL/$T-xl" \
                "$DATA_POOL/$T-xr" yes
            xread "c-from-namespace" "$DATA_POOL/$T-xl" "$DATA_POOL/$T-xr"
        fi
    fi
fi

# ---- d. clone of a clone (3 levels); clone v1
if want d && setup_ok mkparent "$POOL/$T-pd" --object-size 1M &&
    setup_ok rbd clone --rbd-default-clone-format 2 --image-feature "$FEAT" \
        "$POOL/$T-pd@p" "$POOL/$T-dmid" && IMAGES+=("$POOL/$T-dmid") &&
    setup_ok op "$REF" "$POOL/$T-dmid" write $((2 * M + 400 * K)) 8K 61 \
        discard 4M 512K write 8M 4K 62 resize $((9 * M + 300 * K + 3)) &&
    setup_ok rbd snap create --no-progress "$POOL/$T-dmid@m" &&
    setup_ok twins "$POOL/$T-dmid@m" "$POOL/$T-dl" "$POOL/$T-dr" \
        --rbd-default-clone-format 2 --image-feature "$FEAT"; then
    run_both "d: clone of a clone" "$POOL/$T-dl" "$POOL/$T-dr" "${IO_C[@]}"
    compare_twins "d-3-levels" "$POOL/$T-dl" "$POOL/$T-dr" yes
    xread "d-3-levels" "$POOL/$T-dl" "$POOL/$T-dr"
fi
if want d && setup_ok mkparent "$POOL/$T-pv1" --object-size 1M &&
    setup_ok rbd snap protect "$POOL/$T-pv1@p" &&
    setup_ok twins "$POOL/$T-pv1@p" "$POOL/$T-v1l" "$POOL/$T-v1r" \
        --rbd-default-clone-format 1 --image-feature "$FEAT"; then
    run_both "d: clone v1" "$POOL/$T-v1l" "$POOL/$T-v1r" "${IO_C[@]}"
    compare_twins "d-v1" "$POOL/$T-v1l" "$POOL/$T-v1r" yes
    xread "d-v1" "$POOL/$T-v1l" "$POOL/$T-v1r"
fi

# ---- e. layering only (no lock, no object map)
if want e && setup_ok mkparent "$POOL/$T-pe" --object-size 1M \
    --image-feature layering &&
    setup_ok twins "$POOL/$T-pe@p" "$POOL/$T-el" "$POOL/$T-er" \
        --rbd-default-clone-format 2 --image-feature layering; then
    run_both "e: layering-only clone I/O" "$POOL/$T-el" "$POOL/$T-er" "${IO_A[@]}"
    compare_twins "e" "$POOL/$T-el" "$POOL/$T-er" no
    xread "e" "$POOL/$T-el" "$POOL/$T-er"
fi

# ---- f. shrink below the overlap, grow back: zeros beyond the shrink
SHR=$((3 * M + 5000))
if want f && { [[ " ${IMAGES[*]-} " == *" $POOL/$T-pa "* ]] ||
    setup_ok mkparent "$POOL/$T-pa" --object-size 1M; } &&
    setup_ok twins "$POOL/$T-pa@p" "$POOL/$T-fl" "$POOL/$T-fr" \
        --rbd-default-clone-format 2 --image-feature "$FEAT"; then
    run_both "f: shrink below the overlap and grow" "$POOL/$T-fl" "$POOL/$T-fr" \
        write $((2 * M + 4 * K)) 4K 71 snapc s0 resize "$SHR" size parent \
        resize 16M size parent read "$SHR" $((16 * M - SHR)) readall "$STEP" \
        "${DIFFS[@]}" write 12M 4K 72 write $((3 * M)) 8K 73 snapc s1 \
        resize $((2 * M)) resize 12M parent readall "$STEP" "${DIFFS[@]}"
    want0="read $SHR $((16 * M - SHR)) = $((16 * M - SHR)) fnv="
    if grep -q "^$want0.* zeros=$((16 * M - SHR))\$" "$TMP/l.out"; then
        pass "f: beyond the shrunk overlap reads as zeros (librbdlite)"
    else
        fail "f: beyond the shrunk overlap reads as zeros (librbdlite)"
        grep "^read $SHR" "$TMP/l.out" | show -
    fi
    compare_twins "f" "$POOL/$T-fl" "$POOL/$T-fr" yes
    xread "f" "$POOL/$T-fl" "$POOL/$T-fr"
fi

# ---- g. `rbd flatten` while the tool holds the image open
# flat_run BIN SPEC OUT CMD...: write (takes the lock, if any), wait for
# the flatten, then CMD...
flat_run() {
    local bin=$1 spec=$2 out=$3 go=$3.go pid
    shift 3
    rm -f "$out" # no earlier "waiting" line (rbdl_await_waiting)
    op "$bin" "$spec" write $((2 * M)) 4K 81 parent waitfile "$go" 90 "$@" \
        >"$out" 2>"$out.err" &
    pid=$!
    BG+=("$pid")
    rbdl_await_waiting "$out" "$pid"
    timeout -k 5 90 rbd flatten --no-progress "$spec" >"$out.flat" 2>&1
    local fr=$?
    touch "$go"
    wait "$pid"
    local r=$?
    ((fr == 0)) || echo "flatten failed ($fr): $(tail -1 "$out.flat")" >>"$out"
    return "$r"
}
# With exclusive-lock the tool owns the lock and librbd has it run the
# flatten itself: its parent is gone at once.  Without, the open image
# learns of the flatten by a header update whose timing is not part of
# the contract (librbd 16.2 may still report the parent, and a discard
# would zero instead of removing objects): only reads and writes there,
# the parent is checked by a new open.
POST_default=(parent readall "$STEP" write $((3 * M)) 4K 82
    write $((9 * M + 10)) 8K 83 discard 4M 1M "${DIFFS[@]}" readall "$STEP")
POST_layering=(readall "$STEP" write $((3 * M)) 4K 82
    write $((9 * M + 10)) 8K 83 write 5M 4K 84 readall "$STEP")
for kind in default layering; do
    want g || break
    feat=$FEAT
    post=("${POST_default[@]}")
    if [[ $kind == layering ]]; then
        feat=layering
        post=("${POST_layering[@]}")
    fi
    if setup_ok mkparent "$POOL/$T-pg$kind" --object-size 1M &&
        setup_ok twins "$POOL/$T-pg$kind@p" "$POOL/$T-g${kind}l" \
            "$POOL/$T-g${kind}r" --rbd-default-clone-format 2 \
            --image-feature "$feat"; then
        flat_run "$REF" "$POOL/$T-g${kind}r" "$TMP/g.r" "${post[@]}"
        rr=$?
        flat_run "$LITE" "$POOL/$T-g${kind}l" "$TMP/g.l" "${post[@]}"
        rl=$?
        sed -i "s|$TMP/g\.[lr]\.go|GO|g" "$TMP/g.r" "$TMP/g.l"
        if ((rr != 0)) || grep -q '^flatten failed' "$TMP/g.r"; then
            fail "g ($kind): flatten while open, librbd side exit $rr"
            show "$TMP/g.r.err"
            grep '^flatten failed' "$TMP/g.r" | show -
        elif ((rl != 0)) || ! cmp -s "$TMP/g.l" "$TMP/g.r"; then
            fail "g ($kind): flatten while open (librbdlite exit $rl; < librbd, > librbdlite)"
            show "$TMP/g.l.err" 5
            diff "$TMP/g.r" "$TMP/g.l" | show - 30
        else
            pass "g ($kind): flatten while open, then I/O ($(wc -l <"$TMP/g.l") lines equal)"
        fi
        run_both "g ($kind): after the flatten, a new open" \
            "$POOL/$T-g${kind}l" "$POOL/$T-g${kind}r" -r parent "${DIFFS[@]}"
        om=yes
        [[ $kind == layering ]] && om=no
        compare_twins "g ($kind)" "$POOL/$T-g${kind}l" "$POOL/$T-g${kind}r" "$om"
        xread "g ($kind)" "$POOL/$T-g${kind}l" "$POOL/$T-g${kind}r"
    fi
done

# ---- h. a prepared migration destination
# mig_reads LABEL SPEC: librbdlite and librbd read it alike (HEAD, @m1).
mig_reads() {
    local label=$1 spec=$2 s bad=''
    for s in - m1; do
        local o=()
        [[ $s == - ]] || o=(-s "$s")
        op "$REF" -r "${o[@]}" "$spec" readall "$STEP" "${DIFFS[@]}" >"$TMP/m.r" 2>&1
        op "$LITE" -r "${o[@]}" "$spec" readall "$STEP" "${DIFFS[@]}" >"$TMP/m.l" 2>&1
        if ! grep -q '^close = 0' "$TMP/m.r"; then
            bad+=" librbd($s)"
            show "$TMP/m.r" 5
        elif ! cmp -s "$TMP/m.r" "$TMP/m.l"; then
            bad+=" $s"
            diff "$TMP/m.r" "$TMP/m.l" | show - 10
        fi
    done
    op "$REF" -r "$spec" snapset m1 readall "$STEP" >"$TMP/m.r" 2>&1
    op "$LITE" -r "$spec" snapset m1 readall "$STEP" >"$TMP/m.l" 2>&1
    cmp -s "$TMP/m.r" "$TMP/m.l" && grep -q '^close = 0' "$TMP/m.r" || bad+=" snapset(m1)"
    if [[ -z $bad ]]; then
        pass "$label: reads and diffs by librbdlite equal librbd's"
    else
        fail "$label: reads differ:$bad"
    fi
}
if want h && setup_ok mkparent "$POOL/$T-hs" --object-size 1M \
    --image-feature "$FEAT" &&
    setup_ok rbd snap create --no-progress "$POOL/$T-hs@m1" &&
    setup_ok op "$REF" "$POOL/$T-hs" write $((5 * M)) 8K 91 discard 4M 512K &&
    setup_ok rbd migration prepare "$POOL/$T-hs" "$POOL/$T-hd"; then
    IMAGES+=("$POOL/$T-hd")
    MIG=$POOL/$T-hd
    mig_reads "h: prepared migration" "$POOL/$T-hd"
    run_both "h: prepared migration, parent info" "$POOL/$T-hd" "$POOL/$T-hd" \
        -r parent
    op "$REF" -r "$POOL/$T-hd" readall "$STEP" >"$TMP/h.before" 2>&1
    if ((REFERENCE)); then
        echo "NOTE h: writes refused by librbdlite (-EROFS): not checked in reference mode"
    elif op "$LITE" "$POOL/$T-hd" expect -30 write 0 4K 92 \
        expect -30 discard 4M 1M expect -30 zero 5M 4K \
        expect -30 writesame 0 4K 512 93 \
        expect -30 cmpwrite 0 512 11 94 >"$TMP/h.w" 2>&1; then
        pass "h: prepared migration: writes through librbdlite fail with -EROFS"
    else
        fail "h: prepared migration: writes through librbdlite fail with -EROFS"
        show "$TMP/h.w"
    fi
    op "$REF" -r "$POOL/$T-hd" readall "$STEP" >"$TMP/h.after" 2>&1
    if grep -q '^close = 0' "$TMP/h.after" && cmp -s "$TMP/h.before" "$TMP/h.after"; then
        pass "h: prepared migration: data unchanged"
    else
        fail "h: prepared migration: data unchanged"
    fi
    if setup_ok rbd migration execute --no-progress "$POOL/$T-hd" &&
        setup_ok rbd migration commit --no-progress "$POOL/$T-hd"; then
        mig_reads "h: after migration execute and commit" "$POOL/$T-hd"
        run_both "h: after migration commit, parent info" "$POOL/$T-hd" \
            "$POOL/$T-hd" -r parent
    fi
fi

# ---- h (continued). destinations without snapshots are written
if want h; then
    for end in commit abort; do
        good=1
        for side in l r; do
            if setup_ok mkparent "$POOL/$T-m${end}s$side" --object-size 1M \
                --image-feature "$FEAT" &&
                setup_ok rbd snap rm --no-progress "$POOL/$T-m${end}s$side@p" &&
                setup_ok rbd migration prepare "$POOL/$T-m${end}s$side" \
                    "$POOL/$T-m${end}d$side"; then
                IMAGES+=("$POOL/$T-m${end}d$side")
                MIGS+=("$POOL/$T-m${end}d$side")
            else
                good=0
            fi
        done
        ((good)) || continue
        l=$POOL/$T-m${end}dl r=$POOL/$T-m${end}dr
        run_both "h ($end): writes to a prepared destination without snapshots" \
            "$l" "$r" write 0 4K 92 write $((3 * M - 100)) 8K 96 \
            discard 4M 1M zero 5M 4K writesame $((7 * M)) 8K 512 93 \
            write $((PSIZE - 50)) 50 97
        compare_twins "h ($end): written destinations" "$l" "$r" yes
        xread "h ($end): written destinations" "$l" "$r"
        if [[ $end == commit ]]; then
            if setup_ok rbd migration execute --no-progress "$l" &&
                setup_ok rbd migration execute --no-progress "$r" &&
                setup_ok rbd migration commit --no-progress "$l" &&
                setup_ok rbd migration commit --no-progress "$r"; then
                compare_twins "h (commit): after execute and commit" "$l" "$r" yes
            fi
        elif setup_ok rbd migration abort --no-progress "$l" &&
            setup_ok rbd migration abort --no-progress "$r"; then
            compare_twins "h (abort): the sources, given the writes back" \
                "$POOL/$T-m${end}sl" "$POOL/$T-m${end}sr" yes
        fi
    done
fi

# ---- i. removing clones (v2 and v1): the parent forgets the child
# children_of SPEC@SNAP: the parent snapshot's children, one per line.
children_of() { rbd children "$1" 2>&1 | sort; }
if want i && setup_ok mkparent "$POOL/$T-pi" --object-size 1M &&
    setup_ok rbd snap protect "$POOL/$T-pi@p"; then
    # clone format, pool of the twins
    for fp in "2 $POOL" "1 $POOL" "1 $DATA_POOL" "2 $DATA_POOL"; do
        read -r fmt cp <<<"$fp"
        if ! setup_ok twins "$POOL/$T-pi@p" "$cp/$T-i${fmt}l" \
            "$cp/$T-i${fmt}r" --rbd-default-clone-format "$fmt" \
            --image-feature "$FEAT"; then
            continue
        fi
        what="clone v$fmt in pool $cp removed by librbdlite: detached from its parent, no objects left"
        pfx=$(rbd info "$cp/$T-i${fmt}l" | awk '/block_name_prefix/{print $2}')
        op "$LITE" "$cp/$T-i${fmt}l" write $((2 * M)) 8K 95 >/dev/null 2>&1
        rl=$("$BIN/createcases-${LITE##*cloneop-}" rm "$cp" - "$T-i${fmt}l" 2>&1)
        if [[ $rl == ret=0 && $(children_of "$POOL/$T-pi@p") == "$cp/$T-i${fmt}r" &&
            $(rados -p "$cp" ls | grep -c "^$pfx\.") == 0 ]]; then
            pass "i: $what"
        else
            fail "i: $what"
            echo "    | rm: $rl; children: $(children_of "$POOL/$T-pi@p" | tr '\n' ' ')"
        fi
        "$BIN/createcases-librbd" rm "$cp" - "$T-i${fmt}r" >/dev/null 2>&1
    done
    if [[ -z $(children_of "$POOL/$T-pi@p") ]] &&
        rbd snap unprotect "$POOL/$T-pi@p" >"$TMP/unprot" 2>&1; then
        pass "i: no children left: the parent snapshot unprotects"
    else
        fail "i: no children left: the parent snapshot unprotects"
        show "$TMP/unprot"
    fi
fi

rbdl_summary
