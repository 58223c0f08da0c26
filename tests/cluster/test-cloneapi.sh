#!/usr/bin/env bash
# test-cloneapi.sh - rbd_clone / rbd_clone2 / rbd_clone3, the children
# listings (rbd_list_children, _children2, _children3,
# rbd_list_descendants) and rbd_flatten / rbd_flatten_with_progress
# through librbdlite, judged against the real librbd 16.2 and the rbd CLI.
#
# Differential: twin parents (L and R: the same data, image metadata and
# snapshots; s1 protected, s2 not) in the pool, in a namespace, without
# layering and with layering only.  One command script
# (tests/cluster/cloneapi.c) runs through cloneapi-lite on the L parents
# and through cloneapi-librbd on the R parents, in phases:
#   A  bad clones (NULL snapshot, missing parent / snapshot, an
#      unprotected snapshot for clone v1, an existing destination name,
#      no layering in the parent or the features, unknown features,
#      format 1, the flatten option, clone v1 across namespaces, bad
#      order / striping / data pool / namespace), then clones: rbd_clone
#      (rbd_default_clone_format "auto" = v1 on this luminous cluster),
#      rbd_clone2 (striped), rbd_clone3 (v2 from an unprotected snapshot,
#      into a namespace with a data pool, v1 and v2 into another pool,
#      features_clear, a parent in a namespace, v1 inside a namespace,
#      a layering-only parent), writes to some clones;
#   B  (after `rbd snap create` on three clones) a clone of a clone, and
#      every listing of the parents and of a clone (HEAD and snapshots);
#   C  (after `rbd trash mv` of a child) the listings with the trash flag;
#   D  flattens: with progress, cancelled by the callback, without
#      progress, a clone with snapshots (deep-flatten) and one without
#      deep-flatten, read-only / snapshot opens, non-clones, twice;
#   E  rbd_default_clone_format from the pool configuration and "auto"
#      once the cluster requires mimic clients;
#   F  copies: rbd_copy, rbd_copy3 / rbd_copy4 (options, sparse sizes,
#      into another pool and a namespace), with progress (a callback
#      returning an error is ignored, as librbd ignores it), of HEAD, of
#      snapshots and of clones (parent data included), rbd_copy2 /
#      rbd_copy_with_progress2 into existing images, bad options, an
#      existing name, a destination too small;
#   G  a parent snapshot removed while a v2 child exists (it waits in the
#      trash namespace) goes when its last child is flattened;
#   H  rbd_flatten while a librbd client owns the clone's exclusive lock
#      (librbd hands the request to the owner, librbdlite asks for the
#      lock): both succeed and the owner writes again afterwards;
#   I  deep copies (rbd_deep_copy, rbd_deep_copy_with_progress) of two
#      sources the rbd CLI made: an image with protected and plain
#      snapshots, a shrink, a group snapshot and a grown HEAD, and a
#      clone with a snapshot, a shrink below its parent overlap and a
#      regrowth; of HEAD and of snapshots, keeping the parent and
#      flattened, with other order, features, striping, into a namespace
#      and the data pool; bad format, features and order, an existing
#      name.  Judged as below (minus the RADOS objects, which may hold
#      zeros differently) plus the user snapshots (name, size,
#      protection) and every snapshot's data against the source's.
# The outputs (return values, orders, progress calls, listings with pool
# ids, namespaces, names and trash flags) must be equal.  Then each twin
# pair is judged with the rbd CLI and librbd: `rbd info --format json`
# (minus names, ids and timestamps), `rbd image-meta list`, `rbd children
# --all` of every parent snapshot, `rbd export | md5sum` of HEAD and
# snapshots, `rbd object-map check`, the RADOS data objects (names after
# the prefix, sizes), `rbd snap unprotect` refused while a child exists,
# and `rbd flatten` by the CLI of librbdlite-made clones.  No image of a
# failed clone may be left behind.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (fails,
# never skips, without them), rbd, rados, ceph, python3 and a python3
# with the rados and rbd modules (the lock holder of H).  Prints
# "N passed, M failed" last; exits non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd rados ceph timeout md5sum python3
rbdl_twins cloneapi
rbdl_need_progs "$LITE" "$REF"
[[ -n $DATA_POOL ]] || die "RBDLITE_TEST_DATA_POOL is empty"
rbdl_workdir cloneapi
TMO=${RBDLITE_CLONEAPI_TIMEOUT:-300}
P=ca$$x
NS=cans$$
NS_MADE=0
BG=()
COMPAT_CHANGED=0
POOLCONF=0
GROUP_MADE=0

cleanup() {
    local s spec id
    rbdl_kill_bg
    ((POOLCONF)) && c_rbd config pool rm "$POOL" rbd_default_clone_format >/dev/null 2>&1
    ((COMPAT_CHANGED)) &&
        ceph osd set-require-min-compat-client luminous --yes-i-really-mean-it >/dev/null 2>&1
    # trash first (restored so that the removal below finds them)
    for spec in "$POOL" "$DATA_POOL"; do
        while read -r id; do
            [[ -n $id ]] && c_rbd trash restore "$spec/$id" >/dev/null 2>&1
        done < <(c_rbd trash ls "$spec" 2>/dev/null | awk -v p="$P" '$2 ~ "^"p {print $1}')
    done
    ((GROUP_MADE)) && c_rbd group rm "$POOL/${P}grp" >/dev/null 2>&1
    # children before parents: every image of this run
    local have=" "
    for spec in "$POOL" "$POOL/$NS" "$DATA_POOL"; do
        have+=$(c_rbd ls "$spec" 2>/dev/null | grep "^$P" | sed "s|^|$spec/|" | tr '\n' ' ')
    done
    for spec in "$POOL/${P}dcl" "$POOL/${P}dsrc"; do
        [[ $have == *" $spec "* ]] && rbdl_remove_image "$spec" $((SECONDS + 60))
    done
    for s in d1 d2 d3 d4 d5 d6 d7 k1 k2 k3 k4 k5 k6 g1 c10 c11 c12 c1 c2 c3 c4 c5 c6 c7 c8 c9 ct ch p pn nl pl pt pt2; do
        for spec in "$POOL" "$POOL/$NS" "$DATA_POOL"; do
            for side in L R; do
                [[ $have == *" $spec/$P$side$s "* ]] &&
                    rbdl_remove_image "$spec/$P$side$s" $((SECONDS + 60))
            done
        done
    done
    [[ $have == *" $POOL/${P}dpar "* ]] && rbdl_remove_image "$POOL/${P}dpar" $((SECONDS + 60))
    ((NS_MADE)) && c_rbd namespace remove "$POOL/$NS" >/dev/null 2>&1
    rbdl_rm_workdir
}
rbdl_traps

ok() { if "$@" >"$TMP/cmd.log" 2>&1; then return 0; fi; show_log "$TMP/cmd.log"; return 1; }

# ---- parents ------------------------------------------------------------
c_rbd namespace create "$POOL/$NS" >"$TMP/ns.log" 2>&1 || { show_log "$TMP/ns.log"; die "namespace create failed"; }
NS_MADE=1
M=$((1 << 20))
python3 - "$TMP/pdata" <<'EOF' || die "cannot write the parent data"
import sys, random
r = random.Random(42)
size = 10 * (1 << 20) + 12345
with open(sys.argv[1], "wb") as f:
    f.truncate(size)
    for off, ln in ((0, 300000), (1 << 20, 4096), (3 * (1 << 20) + 777, 1500000),
                    (7 * (1 << 20), 102400), (size - 5000, 5000)):
        f.seek(off)
        f.write(bytes(r.getrandbits(8) for _ in range(ln)))
EOF
for s in L R; do
    ok c_rbd import --no-progress --object-size 1M "$TMP/pdata" "$POOL/${P}${s}p" || die "import failed"
    ok c_rbd image-meta set "$POOL/${P}${s}p" k1 v1 || die "image-meta failed"
    ok c_rbd image-meta set "$POOL/${P}${s}p" conf_rbd_cache false || die "image-meta failed"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}p@s1" || die "snap failed"
    ok c_rbd snap protect "$POOL/${P}${s}p@s1" || die "protect failed"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}p@s2" || die "snap failed"
    ok c_rbd import --no-progress --object-size 2M "$TMP/pdata" "$POOL/$NS/${P}${s}pn" || die "import failed"
    ok c_rbd snap create --no-progress "$POOL/$NS/${P}${s}pn@s1" || die "snap failed"
    ok c_rbd snap protect "$POOL/$NS/${P}${s}pn@s1" || die "protect failed"
    ok c_rbd create --size 4M --image-feature exclusive-lock "$POOL/${P}${s}nl" || die "create failed"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}nl@s1" || die "snap failed"
    ok c_rbd import --no-progress --image-feature layering "$TMP/pdata" "$POOL/${P}${s}pl" || die "import failed"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}pl@s1" || die "snap failed"
done

# r_images: every reference-side image of this run, one "spec/name" a line.
r_images() {
    local spec
    for spec in "$POOL" "$POOL/$NS" "$DATA_POOL"; do
        c_rbd ls "$spec" 2>/dev/null | grep "^${P}R" | sed "s|^|$spec/|"
    done
}

# run_phase NAME: the script $TMP/NAME.txt (X = the side) through both.
# librbd 16.2.15 itself aborts now and then (seen in phase A: SIGABRT on
# "std::system_error: Invalid argument", or SIGSEGV, in the clean-up of a
# failed clone, more often on a loaded machine).  When the reference is
# killed by SIGABRT or SIGSEGV and librbdlite's side ran clean, the images
# the crashed run made are removed and the reference side of the phase is
# run again, up to twice; each rerun is reported with the call in progress.
# A phase that changed images it did not make (a flatten) cannot be rerun
# that way: its rerun then differs and the phase fails, as it should.
run_phase() {
    local name=$1 rl rr try before spec
    sed "s/X/${P}L/g" "$TMP/$name.txt" | timeout -k 5 "$TMO" "$LITE" >"$TMP/$name.L" 2>"$TMP/$name.L.err"
    rl=$?
    before=$(r_images)
    for try in 0 1 2; do
        if ((try > 0)); then
            echo "$PROG: phase $name: librbd was killed by signal $((rr - 128)) in '$(grep -v '^ ' "$TMP/$name.R" | tail -n 1)'; rerun $try" >&2
            tail -n 3 "$TMP/$name.R.err" | sed 's/^/    | /' >&2
            while read -r spec; do
                [[ -n $spec ]] && rbdl_remove_image "$spec" $((SECONDS + 60))
            done < <(comm -13 <(sort <<<"$before") <(r_images | sort))
        fi
        sed "s/X/${P}R/g" "$TMP/$name.txt" | timeout -k 5 "$TMO" "$REF" >"$TMP/$name.R" 2>"$TMP/$name.R.err"
        rr=$?
        ((rl == 0 && (rr == 134 || rr == 139) && try < 2)) || break
    done
    if ((try > 0 && rr == 0)); then
        pass "phase $name: librbd's side rerun clean after librbd crashed in it (attempt $try)"
    fi
    if ((rl != 0 || rr != 0)); then
        fail "phase $name ran (lite: $(rbdl_rc_text $rl), librbd: $(rbdl_rc_text $rr))"
        tail -n 3 "$TMP/$name.L.err" "$TMP/$name.R.err" | sed 's/^/    | /'
        return 1
    fi
    pass "phase $name ran through both libraries"
    if diff <(sed "s/${P}L/X/g" "$TMP/$name.L") <(sed "s/${P}R/X/g" "$TMP/$name.R") >"$TMP/$name.diff"; then
        pass "phase $name: librbdlite's results equal librbd's ($(grep -c '^  = ' "$TMP/$name.L") calls)"
    else
        fail "phase $name: results differ (< librbdlite, > librbd)"
        head -n 30 "$TMP/$name.diff" | sed 's/^/    | /'
    fi
}

# expect PHASE CMD-PREFIX RET: the line after the command starting with
# CMD-PREFIX (X = L side) in the lite output reports RET.
expect() {
    local got
    got=$(sed "s/${P}L/X/g" "$TMP/$1.L" | awk -v c="$2" 'index($0, c) == 1 {f = 1; next} f && /^  = / {print $2; exit}')
    if [[ $got == "$3" ]]; then
        pass "$1: '$2' returns $3"
    else
        fail "$1: '$2' returns ${got:-nothing}, expected $3"
    fi
}

cat >"$TMP/A.txt" <<EOF
clone $POOL Xp - $POOL Xe1 1 0
clone $POOL Xnone s1 $POOL Xe2 1 0
clone $POOL Xp nosnap $POOL Xe3 1 0
clone3 $POOL Xp s2 $POOL Xe4 clone_format=1
clone3 $POOL Xp s1 $POOL Xp clone_format=2
clone $POOL Xnl s1 $POOL Xe6 1 0
clone $POOL Xp s1 $POOL Xe7 4 0
clone $POOL Xp s1 $POOL Xe8 0x10000000001 0
clone3 $POOL Xp s1 $POOL Xe9 format=1
clone3 $POOL Xp s1 $POOL Xe10 flatten=1
clone3 $POOL Xp s1 $POOL/$NS Xe11 clone_format=1
clone3 $POOL Xp s1 $POOL Xe12 order=11
clone3 $POOL Xp s1 $POOL Xe13 su=1000 sc=2
clone3 $POOL Xp s1 $POOL Xe14 data_pool=nosuchpool$$
clone3 $POOL Xp s1 $POOL/nosuchns$$ Xe15 clone_format=2
nulls $POOL
clone $POOL Xp s1 $POOL Xc1 61 0
clone2 $POOL Xp s1 $POOL Xc2 61 20 65536 4
clone3 $POOL Xp s2 $POOL Xc3 clone_format=2
clone3 $POOL Xp s2 $POOL/$NS Xc4 clone_format=2 data_pool=$DATA_POOL order=21
clone3 $POOL Xp s1 $DATA_POOL Xc5 clone_format=1
clone3 $POOL Xp s2 $DATA_POOL Xc6 clone_format=2 features_clear=24
clone3 $POOL/$NS Xpn s1 $POOL Xc7 clone_format=2
clone3 $POOL/$NS Xpn s1 $POOL/$NS Xc8 clone_format=1
clone3 $POOL Xpl s1 $POOL Xc9 clone_format=2
clone3 $POOL Xp s1 $POOL Xc3 clone_format=2
write $POOL Xc3 100000 5000 7
write $POOL Xc2 4194304 70000 3
write $POOL Xc9 2000000 10000 9
EOF
run_phase A
expect A "clone $POOL Xp - " -22
expect A "clone $POOL Xnone " -2
expect A "clone $POOL Xp nosnap " -2
expect A "clone3 $POOL Xp s2 $POOL Xe4 " -22
expect A "clone3 $POOL Xp s1 $POOL Xp " -17
expect A "clone $POOL Xnl " -38
expect A "clone $POOL Xp s1 $POOL Xe7 " -38
expect A "clone $POOL Xp s1 $POOL Xe8 " -38
expect A "clone3 $POOL Xp s1 $POOL Xe9 " -22
expect A "clone3 $POOL Xp s1 $POOL Xe10 " -22
expect A "clone3 $POOL Xp s1 $POOL/$NS Xe11 " -18
expect A "clone3 $POOL Xp s1 $POOL Xe12 " -33
expect A "clone3 $POOL Xp s1 $POOL Xe13 " -22
expect A "clone3 $POOL Xp s1 $POOL Xe14 " -2
expect A "clone3 $POOL Xp s1 $POOL/nosuchns$$ " -2
expect A "clone $POOL Xp s1 $POOL Xc1 " 0
expect A "clone2 $POOL Xp s1 $POOL Xc2 " 0
expect A "clone3 $POOL Xp s2 $POOL Xc3 " 0
expect A "clone3 $POOL Xp s2 $POOL/$NS Xc4 " 0
expect A "clone3 $POOL Xp s1 $DATA_POOL Xc5 " 0
expect A "clone3 $POOL Xp s2 $DATA_POOL Xc6 " 0
expect A "clone3 $POOL/$NS Xpn s1 $POOL Xc7 " 0
expect A "clone3 $POOL/$NS Xpn s1 $POOL/$NS Xc8 " 0
expect A "clone3 $POOL Xpl s1 $POOL Xc9 " 0
expect A "clone3 $POOL Xp s1 $POOL Xc3 " -17
# NULL arguments librbd would crash on: librbdlite only
echo "litenulls $POOL ${P}Lp" | timeout -k 5 "$TMO" "$LITE" >"$TMP/nulls.L" 2>&1
if grep -q "^  = 0$" "$TMP/nulls.L"; then
    pass "NULL arguments librbd dereferences give -EINVAL ($(grep -c ' = -22$' "$TMP/nulls.L") calls)"
else
    fail "NULL arguments: not all -EINVAL"; grep -v ' = -22$' "$TMP/nulls.L" | head -n 5 | sed 's/^/    | /'
fi
if grep -q "clone NULL snap = -22" "$TMP/A.L" && grep -q "clone3 NULL snap = -22" "$TMP/A.L"; then
    pass "NULL parent snapshot: -EINVAL"
else
    fail "NULL parent snapshot: not -EINVAL"
fi
left=$( { c_rbd ls "$POOL"; c_rbd ls "$POOL/$NS"; c_rbd ls "$DATA_POOL"; } 2>/dev/null | grep -c "^${P}Le")
if [[ $left == 0 ]]; then
    pass "failed clones left no image behind"
else
    fail "failed clones left $left images behind"
fi
if [[ $(c_rbd ls -l "$POOL" 2>/dev/null | grep -c "^${P}L") == $(c_rbd ls -l "$POOL" 2>/dev/null | grep -c "^${P}R") ]]; then
    pass "the same number of images and snapshots on both sides"
else
    fail "different numbers of images on the two sides"
fi

# ---- B: a clone of a clone, listings -----------------------------------
for s in L R; do
    ok c_rbd snap create --no-progress "$POOL/${P}${s}c3@cs" || fail "snap create c3@cs"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}c2@cs" || fail "snap create c2@cs"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}c9@cs" || fail "snap create c9@cs"
done
cat >"$TMP/B.txt" <<EOF
clone3 $POOL Xc3 cs $POOL Xg1 clone_format=2
clone3 $POOL Xc3 cs $POOL Xc10
clone3 $POOL Xc2 cs $DATA_POOL Xc11 clone_format=2 su=131072 sc=2
children $POOL Xp -
children $POOL Xp s1
children $POOL Xp s2
children $POOL/$NS Xpn -
children $POOL Xc3 -
children $POOL Xc3 cs
children $POOL Xc2 -
children $POOL Xnl -
children $POOL Xg1 -
EOF
run_phase B
expect B "clone3 $POOL Xc3 cs $POOL Xg1 " 0
expect B "clone3 $POOL Xc3 cs $POOL Xc10" -22
expect B "clone3 $POOL Xc2 cs $DATA_POOL Xc11 " 0
# the descendants of Xp include the grandchild
if sed -n '/^children '"$POOL"' '"${P}"'Lp -/,/^  = /p' "$TMP/B.L" | grep -q "image=${P}Lg1 "; then
    pass "rbd_list_descendants lists the grandchild"
else
    fail "rbd_list_descendants does not list the grandchild"
fi

# ---- C: a child in the trash --------------------------------------------
for s in L R; do
    ok c_rbd trash mv "$DATA_POOL/${P}${s}c6" || fail "trash mv c6"
done
cat >"$TMP/C.txt" <<EOF
children $POOL Xp s2
EOF
run_phase C
if grep -q "image=${P}Lc6 id=id trash=1" "$TMP/C.L"; then
    pass "a child in the trash is listed with trash=1"
else
    fail "the trashed child is not listed with trash=1"
fi

# ---- judge the clones with the CLI ---------------------------------------
info_norm() {
    c_rbd info --format json "$1" 2>/dev/null | python3 -c '
import json, sys
pre = sys.argv[1]
d = json.load(sys.stdin)
for k in ("name", "id", "block_name_prefix", "create_timestamp",
          "access_timestamp", "modify_timestamp"):
    d.pop(k, None)
p = d.get("parent")
if p:
    p.pop("id", None)
    p["image"] = p.get("image", "").replace(pre + "L", "X").replace(pre + "R", "X")
print(json.dumps(d, sort_keys=True))' "$P"
}
objects() { # objects SPEC: "suffix size" of every data object
    local spec=$1 pool prefix ns=
    pool=${spec%%/*}
    [[ $spec == */*/* ]] && ns=$(cut -d/ -f2 <<<"$spec")
    prefix=$(c_rbd info --format json "$spec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["block_name_prefix"])')
    local dpool
    dpool=$(c_rbd info --format json "$spec" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("data_pool",""))')
    [[ -n $dpool ]] && pool=$dpool
    rados -p "$pool" -N "$ns" ls 2>/dev/null | grep "^$prefix\." | sort | while read -r o; do
        echo "${o#"$prefix"} $(rados -p "$pool" -N "$ns" stat "$o" | awk '{print $NF}')"
    done
}
judge_pair() { # judge_pair LABEL LSPEC RSPEC
    local label=$1 l=$2 r=$3 a b snap
    judge_pair_data "$label" "$l" "$r"
    for snap in "" $(c_rbd snap ls --format json "$l" | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)))'); do
        a=$(c_rbd export --no-progress "$l${snap:+@$snap}" - 2>/dev/null | md5sum)
        b=$(c_rbd export --no-progress "$r${snap:+@$snap}" - 2>/dev/null | md5sum)
        if [[ $a == "$b" ]]; then pass "$label${snap:+@$snap}: rbd export equal"; else fail "$label${snap:+@$snap}: rbd export differs"; fi
    done
    a=$(objects "$l")
    b=$(objects "$r")
    if [[ $a == "$b" ]]; then pass "$label: data objects equal ($(wc -l <<<"$a") objects)"; else
        fail "$label: data objects differ"; diff <(echo "$a") <(echo "$b") | head -n 6 | sed 's/^/    | /'; fi
}
judge_pair_data() { # rbd info, image metadata, object-map check: what
    # deep copies are judged by too (they write changed ranges where librbd
    # copies object extents: the same data, but other objects may hold
    # zeros)
    local label=$1 l=$2 r=$3 a b
    a=$(info_norm "$l")
    b=$(info_norm "$r")
    if [[ -n $a && $a == "$b" ]]; then pass "$label: rbd info equal"; else
        fail "$label: rbd info differs"; printf '    | %s\n    | %s\n' "$a" "$b"; fi
    a=$(c_rbd image-meta list --format json "$l" 2>&1)
    b=$(c_rbd image-meta list --format json "$r" 2>&1)
    if [[ $a == "$b" ]]; then pass "$label: image metadata equal"; else fail "$label: image metadata differs"; fi
    if info_norm "$l" | grep -q object-map; then
        if ok c_rbd object-map check --no-progress "$l"; then pass "$label: object-map check"; else fail "$label: object-map check"; fi
    fi
}
judge_all() {
    local c spec
    for c in c1 c2 c3 c4 c5 c7 c8 c9 c11 g1; do
        case $c in
        c4 | c8) spec=$POOL/$NS ;;
        c5 | c11) spec=$DATA_POOL ;;
        *) spec=$POOL ;;
        esac
        judge_pair "$1 $c" "$spec/${P}L$c" "$spec/${P}R$c"
    done
    for spec in "$POOL/${P}Xp@s1" "$POOL/${P}Xp@s2" "$POOL/$NS/${P}Xpn@s1" "$POOL/${P}Xc3@cs" "$POOL/${P}Xc2@cs"; do
        a=$(c_rbd children --all "${spec//X/L}" 2>&1 | sed -e "s/${P}L/X/g" -e 's/(trash [0-9a-f]*)/(trash ID)/')
        b=$(c_rbd children --all "${spec//X/R}" 2>&1 | sed -e "s/${P}R/X/g" -e 's/(trash [0-9a-f]*)/(trash ID)/')
        if [[ $a == "$b" ]]; then pass "$1: rbd children --all ${spec//X/} equal ($(wc -l <<<"$a") lines)"; else
            fail "$1: rbd children --all ${spec//X/} differs"; diff <(echo "$a") <(echo "$b") | head -n 6 | sed 's/^/    | /'; fi
    done
}
judge_all "cloned"
for s in L; do
    if c_rbd snap unprotect "$POOL/${P}${s}p@s1" >"$TMP/unprot.log" 2>&1; then
        fail "snap unprotect of a parent snapshot with librbdlite-made v1 children succeeded"
    elif grep -q "busy\|EBUSY\|children" "$TMP/unprot.log"; then
        pass "snap unprotect refused while librbdlite-made children exist"
    else
        fail "snap unprotect failed for another reason"; show_log "$TMP/unprot.log"
    fi
done

# ---- D: flatten -----------------------------------------------------------
cat >"$TMP/D.txt" <<EOF
flatten $POOL Xc2 3 -5
parent $POOL Xc2
flatten $POOL Xc2 -1 0
flatten $POOL Xc3 -1 0
flatten0 $POOL/$NS Xc4
flatten $POOL Xc9 -1 0
flatten $POOL Xc5 0 -22
flatten $POOL Xc1 -1 0 ro
flatten $POOL Xg1 -1 0 snap=cs
flatten $POOL Xp -1 0
flatten0 $POOL Xc3
flatten $DATA_POOL Xc11 -1 0
parent $POOL Xc2
parent $POOL Xc9
parent $POOL Xc3
parent $POOL Xg1
children $POOL Xp s1
children $POOL Xp s2
children $POOL Xc2 cs
EOF
for s in L R; do ok c_rbd snap create --no-progress "$POOL/${P}${s}g1@cs" || fail "snap create g1@cs"; done
run_phase D
expect D "flatten $POOL Xc2 3 -5" -5
expect D "flatten $POOL Xc2 -1 0" 0
expect D "flatten $POOL Xc3 -1 0" 0
expect D "flatten0 $POOL/$NS Xc4" 0
expect D "flatten $POOL Xc9 -1 0" 0
expect D "flatten $POOL Xc1 -1 0 ro" -30
expect D "flatten $POOL Xg1 -1 0 snap=cs" -30
expect D "flatten $POOL Xp -1 0" -22
expect D "flatten0 $POOL Xc3" -22
judge_all "flattened"

# `rbd flatten` (librbd) of clones librbdlite made, then the v1 parent
# snapshot can be unprotected.
for c in c1 c7 c8; do
    spec=$POOL
    [[ $c == c8 ]] && spec=$POOL/$NS
    if ok c_rbd flatten --no-progress "$spec/${P}L$c"; then pass "rbd flatten of librbdlite's $c"; else fail "rbd flatten of librbdlite's $c"; fi
    ok c_rbd flatten --no-progress "$spec/${P}R$c"
done
for s in L R; do
    if c_rbd children --all "$POOL/${P}${s}p@s1" 2>&1 | grep -q .; then
        # Xc5 (v1 in the data pool) was flattened with a callback returning -EINVAL
        ok c_rbd flatten --no-progress "$DATA_POOL/${P}${s}c5"
    fi
    if ok c_rbd snap unprotect "$POOL/${P}${s}p@s1"; then pass "$s: parent snapshot unprotected once its children are flattened"; else
        fail "$s: parent snapshot still busy after flattening"; fi
done

# ---- E: the clone format from the configuration ---------------------------
cat >"$TMP/E.txt" <<EOF
clone3 $POOL Xp s2 $POOL Xc12
EOF
ok c_rbd config pool set "$POOL" rbd_default_clone_format 2 && POOLCONF=1
run_phase E
expect E "clone3 $POOL Xp s2 $POOL Xc12" 0
ok c_rbd config pool set "$POOL" rbd_default_clone_format 1
sed -i 's/Xc12/Xe16/' "$TMP/E.txt"
run_phase E
expect E "clone3 $POOL Xp s2 $POOL Xe16" -22
ok c_rbd config pool rm "$POOL" rbd_default_clone_format && POOLCONF=0
if ok ceph osd set-require-min-compat-client mimic; then
    COMPAT_CHANGED=1
    sed -i 's/Xe16/Xc10/' "$TMP/E.txt"
    run_phase E
    expect E "clone3 $POOL Xp s2 $POOL Xc10" 0
    ok ceph osd set-require-min-compat-client luminous --yes-i-really-mean-it && COMPAT_CHANGED=0
else
    fail "cannot require mimic clients"
fi
judge_pair "auto v2" "$POOL/${P}Lc10" "$POOL/${P}Rc10"
judge_pair "pool v2" "$POOL/${P}Lc12" "$POOL/${P}Rc12"

# ---- F: copies ---------------------------------------------------------------
cat >"$TMP/F.txt" <<EOF
copy $POOL Xp - rw $POOL Xk1 copyp
copy $POOL Xp s1 ro $POOL Xk2 copyp3 order=20 cbret=-5
copy $POOL Xc10 - ro $DATA_POOL Xk3 copy4:65536 su=65536 sc=2
copy $POOL Xc10 - rw $POOL/$NS Xk4 copyp4:4096
copy $POOL Xg1 cs ro $POOL Xk5 copy3 data_pool=$DATA_POOL features=1
copy $POOL Xc2 - rw $POOL Xk6 copy
copy $POOL Xp - rw $POOL Xk1 copy3
copy $POOL Xp - rw $POOL Xe20 copy3 flatten=1
copy $POOL Xp - rw $POOL Xe21 copy3 clone_format=2
copy $POOL Xp - rw $POOL Xe22 copy3 features=1099511627776
copy $POOL Xp - rw $POOL Xe23 copy3 order=11
copy2 $POOL Xc10 - $POOL Xk6 p
copy2 $POOL Xp s2 $POOL Xk2
copy2 $POOL Xp - $POOL Xnl
EOF
run_phase F
expect F "copy $POOL Xp - rw $POOL Xk1 copyp" 0
expect F "copy $POOL Xp s1 ro $POOL Xk2 " 0
expect F "copy $POOL Xc10 - ro " 0
expect F "copy $POOL Xc10 - rw " 0
expect F "copy $POOL Xg1 cs ro " 0
expect F "copy $POOL Xc2 - rw $POOL Xk6 copy" 0
expect F "copy $POOL Xp - rw $POOL Xk1 copy3" -17
expect F "copy $POOL Xp - rw $POOL Xe20 " -22
expect F "copy $POOL Xp - rw $POOL Xe21 " -22
expect F "copy $POOL Xp - rw $POOL Xe22 " -38
expect F "copy $POOL Xp - rw $POOL Xe23 " -33
expect F "copy2 $POOL Xc10 - $POOL Xk6 p" 0
expect F "copy2 $POOL Xp s2 $POOL Xk2" 0
expect F "copy2 $POOL Xp - $POOL Xnl" -22
for k in k1 k2 k3 k4 k5 k6; do
    case $k in
    k3) spec=$DATA_POOL ;;
    k4) spec=$POOL/$NS ;;
    *) spec=$POOL ;;
    esac
    judge_pair "copy $k" "$spec/${P}L$k" "$spec/${P}R$k"
done
left=$( { c_rbd ls "$POOL"; c_rbd ls "$POOL/$NS"; c_rbd ls "$DATA_POOL"; } 2>/dev/null | grep -c "^${P}Le")
if [[ $left == 0 ]]; then
    pass "failed copies left no image behind"
else
    fail "failed copies left $left images behind"
fi

# ---- G: flatten of the last child of a parent snapshot in the trash ----------
for s in L R; do
    ok c_rbd create --size 3M --object-size 1M "$POOL/${P}${s}pt" || fail "create pt"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}pt@s1" || fail "snap create pt@s1"
done
cat >"$TMP/G2.txt" <<EOF
clone3 $POOL Xpt s1 $POOL Xct clone_format=2
EOF
run_phase G2
for s in L R; do
    ok c_rbd snap rm --no-progress "$POOL/${P}${s}pt@s1" || fail "snap rm pt@s1 (to the trash)"
done
if c_rbd snap ls --all "$POOL/${P}Lpt" 2>/dev/null | grep -q trash; then
    pass "the parent snapshot went to the trash namespace"
else
    fail "the parent snapshot is not in the trash namespace"
fi
cat >"$TMP/G3.txt" <<EOF
flatten $POOL Xct -1 0
children $POOL Xpt -
EOF
run_phase G3
for s in L R; do
    n=$(c_rbd snap ls --all --format json "$POOL/${P}${s}pt" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    if [[ $n == 0 ]]; then
        pass "$s: the trashed parent snapshot was removed with its last child's flatten"
    else
        fail "$s: the trashed parent snapshot is still there ($n snapshots)"
    fi
done
judge_pair "trash parent" "$POOL/${P}Lct" "$POOL/${P}Rct"

# ---- H: flatten while another client (librbd) owns the exclusive lock --------
cat >"$TMP/holder.py" <<'EOF'
import rados, rbd, sys, time
c = rados.Rados(conffile='')
c.connect()
io = c.open_ioctx(sys.argv[1])
img = rbd.Image(io, sys.argv[2])
img.write(b'\x11' * 8192, 3000000)
print("holding", img.is_exclusive_lock_owner(), flush=True)
time.sleep(float(sys.argv[3]))
img.write(b'\x22' * 4096, 200000)
print("written again", flush=True)
img.close()
io.close()
c.shutdown()
EOF
cat >"$TMP/H1.txt" <<EOF
clone3 $POOL Xpt2 s1 $POOL Xch clone_format=2
EOF
for s in L R; do
    ok c_rbd import --no-progress --object-size 1M "$TMP/pdata" "$POOL/${P}${s}pt2" || fail "import pt2"
    ok c_rbd snap create --no-progress "$POOL/${P}${s}pt2@s1" || fail "snap create pt2@s1"
done
run_phase H1
if rbdl_find_python; then
    BG=()
    for s in L R; do
        timeout -k 5 120 "$PY" "$TMP/holder.py" "$POOL" "${P}${s}ch" 20 >"$TMP/hold$s.log" 2>&1 &
        BG+=($!)
    done
    for ((i = 0; i < 30; i++)); do
        [[ $(cat "$TMP/holdL.log" "$TMP/holdR.log" 2>/dev/null | grep -c "holding True") == 2 ]] && break
        sleep 1
    done
    if [[ $(cat "$TMP/holdL.log" "$TMP/holdR.log" | grep -c "holding True") == 2 ]]; then
        pass "librbd clients own the locks of both twins"
    else
        fail "the librbd holders did not get the locks"; show_log "$TMP/holdL.log"
    fi
    cat >"$TMP/H2.txt" <<EOF
flatten0 $POOL Xch
parent $POOL Xch
EOF
    run_phase H2
    expect H2 "flatten0 $POOL Xch" 0
    wait "${BG[@]}"
    BG=()
    if [[ $(cat "$TMP/holdL.log" "$TMP/holdR.log" | grep -c "written again") == 2 ]]; then
        pass "the lock owners wrote again after the flatten"
    else
        fail "a lock owner could not write after the flatten"; show_log "$TMP/holdL.log"
    fi
    judge_pair "flatten under a foreign lock" "$POOL/${P}Lch" "$POOL/${P}Rch"
else
    fail "no python3 with the rados and rbd modules for the lock holder"
fi

# ---- I: deep copies ------------------------------------------------------------
# Two sources made by the rbd CLI (so both libraries copy the very same
# images): dsrc (default features) with snapshots a1 (protected), a2, a3
# after a shrink, a group snapshot (not copied: not a user snapshot) and a
# grown HEAD; dcl, a clone of dpar@ps (written all over) with a snapshot
# b1, a shrink below the parent overlap and a regrowth before b2, and HEAD
# writes.
src_write() { # src_write IMAGE OFF LEN SEED (through the real librbd)
    printf 'write %s %s %s %s %s\n' "$POOL" "$1" "$2" "$3" "$4" | "$REF" >>"$TMP/srcw.log" 2>&1 ||
        fail "writing $1 at $2"
}
DS=$POOL/${P}dsrc DC=$POOL/${P}dcl
ok c_rbd create --size 8M --object-size 1M "$DS" || fail "create dsrc"
src_write "${P}dsrc" 0 300000 1
src_write "${P}dsrc" $((3 * M + 5)) $M 2
src_write "${P}dsrc" $((7 * M)) 4096 3
ok c_rbd snap create --no-progress "$DS@a1" || fail "snap dsrc@a1"
ok c_rbd snap protect "$DS@a1" || fail "protect dsrc@a1"
src_write "${P}dsrc" 100000 50000 4
ok c_rbd snap create --no-progress "$DS@a2" || fail "snap dsrc@a2"
ok c_rbd resize --no-progress --allow-shrink --size 5M "$DS" || fail "shrink dsrc"
ok c_rbd snap create --no-progress "$DS@a3" || fail "snap dsrc@a3"
if ok c_rbd group create "$POOL/${P}grp"; then
    GROUP_MADE=1
    ok c_rbd group image add "$POOL/${P}grp" "$DS" || fail "group image add"
    ok c_rbd group snap create "$POOL/${P}grp@gs" || fail "group snap create"
else
    fail "group create"
fi
ok c_rbd resize --no-progress --size 9M "$DS" || fail "grow dsrc"
src_write "${P}dsrc" $((6 * M)) 200000 5
ok c_rbd create --size 6M --object-size 1M "$POOL/${P}dpar" || fail "create dpar"
src_write "${P}dpar" 0 $((6 * M)) 10
ok c_rbd snap create --no-progress "$POOL/${P}dpar@ps" || fail "snap dpar@ps"
ok c_rbd snap protect "$POOL/${P}dpar@ps" || fail "protect dpar@ps"
ok c_rbd clone "$POOL/${P}dpar@ps" "$DC" || fail "clone dcl"
src_write "${P}dcl" 0 4096 6
src_write "${P}dcl" $((2 * M + 100)) 300000 7
ok c_rbd snap create --no-progress "$DC@b1" || fail "snap dcl@b1"
ok c_rbd resize --no-progress --allow-shrink --size 3M "$DC" || fail "shrink dcl"
ok c_rbd resize --no-progress --size 12M "$DC" || fail "grow dcl"
src_write "${P}dcl" $((9 * M)) 5000 8
ok c_rbd snap create --no-progress "$DC@b2" || fail "snap dcl@b2"
src_write "${P}dcl" $M 4096 9
cat >"$TMP/I.txt" <<EOF
copy $POOL ${P}dsrc - rw $POOL Xd1 deepp
copy $POOL ${P}dsrc a2 ro $POOL Xd2 deep
copy $POOL ${P}dcl - ro $POOL Xd3 deepp
copy $POOL ${P}dcl - rw $POOL Xd4 deepp flatten=1
copy $POOL ${P}dsrc - ro $POOL/$NS Xd5 deep order=21 features=1
copy $POOL ${P}dsrc a1 ro $DATA_POOL Xd6 deepp su=65536 sc=2
copy $POOL ${P}dcl b1 ro $POOL Xd7 deep
copy $POOL ${P}dsrc - ro $POOL Xd1 deep
copy $POOL ${P}dsrc - ro $POOL Xe30 deep format=1
copy $POOL ${P}dsrc - ro $POOL Xe31 deep features=1099511627776
copy $POOL ${P}dsrc - ro $POOL Xe32 deep order=11
EOF
run_phase I
expect I "copy $POOL ${P}dsrc - rw $POOL Xd1 " 0
expect I "copy $POOL ${P}dsrc a2 " 0
expect I "copy $POOL ${P}dcl - ro $POOL Xd3 " 0
expect I "copy $POOL ${P}dcl - rw " 0
expect I "copy $POOL ${P}dsrc - ro $POOL/$NS " 0
expect I "copy $POOL ${P}dsrc a1 " 0
expect I "copy $POOL ${P}dcl b1 " 0
expect I "copy $POOL ${P}dsrc - ro $POOL Xd1 " -17
expect I "copy $POOL ${P}dsrc - ro $POOL Xe30 " -22
expect I "copy $POOL ${P}dsrc - ro $POOL Xe31 " -38
noparent() { python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("parent",None); print(json.dumps(d, sort_keys=True))'; }
parent_of() { # parent_of SPEC: "pool/image@snap overlap" or none
    c_rbd info --format json "$1" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin).get("parent")
print("%s/%s@%s %s" % (p["pool"], p["image"], p["snapshot"], p["overlap"]) if p else "none")'
}
snapls() { # the user snapshots: name, size, protected
    c_rbd snap ls --format json "$1" 2>/dev/null |
        python3 -c 'import json,sys; [print(s["name"], s["size"], s["protected"]) for s in json.load(sys.stdin)]'
}
# judge_deep LABEL SUFFIX SPEC SOURCE[@SNAP]: the twins alike (rbd info,
# metadata, object-map check), their user snapshots alike, and each
# snapshot's and HEAD's data the source's.
judge_deep() {
    local label=$1 k=$2 spec=$3 srcspec=$4 a b snap
    judge_pair_data "$label" "$spec/${P}L$k" "$spec/${P}R$k"
    a=$(snapls "$spec/${P}L$k")
    b=$(snapls "$spec/${P}R$k")
    if [[ $a == "$b" ]]; then
        pass "$label: user snapshots equal ($(grep -c . <<<"$a"))"
    else
        fail "$label: user snapshots differ"; diff <(echo "$a") <(echo "$b") | sed 's/^/    | /'
    fi
    for snap in "" $(snapls "$spec/${P}L$k" | awk '{print $1}'); do
        a=$(c_rbd export --no-progress "$spec/${P}L$k${snap:+@$snap}" - 2>/dev/null | md5sum)
        if [[ -n $snap ]]; then
            b=$(c_rbd export --no-progress "${srcspec%@*}@$snap" - 2>/dev/null | md5sum)
        else
            b=$(c_rbd export --no-progress "$srcspec" - 2>/dev/null | md5sum)
        fi
        if [[ $a == "$b" ]]; then pass "$label${snap:+@$snap}: data equal to the source's"; else
            fail "$label${snap:+@$snap}: data differ from the source's"; fi
        [[ -n $snap ]] || continue
        a=$(info_norm "$spec/${P}L$k@$snap" | noparent)
        b=$(info_norm "$spec/${P}R$k@$snap" | noparent)
        if [[ -n $a && $a == "$b" ]]; then pass "$label@$snap: rbd info equal"; else
            fail "$label@$snap: rbd info differs"; printf '    | %s\n    | %s\n' "$a" "$b"; fi
        # the parent link (librbd 16.2.15 drops it from a clone's first
        # snapshot, copying that snapshot's data in full instead: see the
        # README), against the source's; none when flattened
        a=$(parent_of "$spec/${P}L$k@$snap")
        b=$(parent_of "${srcspec%@*}@$snap")
        [[ $k == d4 ]] && b=none
        if [[ $a == "$b" ]]; then pass "$label@$snap: parent link as the source's ($a)"; else
            fail "$label@$snap: parent link $a, the source's $b"; fi
    done
}
judge_deep "deep HEAD" d1 "$POOL" "$DS"
judge_deep "deep at a2" d2 "$POOL" "$DS@a2"
judge_deep "deep clone" d3 "$POOL" "$DC"
judge_deep "deep flatten" d4 "$POOL" "$DC"
judge_deep "deep order" d5 "$POOL/$NS" "$DS"
judge_deep "deep striped" d6 "$DATA_POOL" "$DS@a1"
judge_deep "deep clone at b1" d7 "$POOL" "$DC@b1"
left=$(c_rbd ls "$POOL" 2>/dev/null | grep -c "^${P}Le3")
if [[ $left == 0 ]]; then
    pass "refused deep copies left no image behind"
else
    fail "refused deep copies left $left images behind"
fi

# ---- J: what removals take with them (clone v2) ---------------------------
# The last child of a snapshot in the trash namespace takes it along, when
# it is removed or flattened; a snapshot removal detaches the children
# whose pool was deleted (list_children3 / list_descendants then report
# the rest, as librbd's SnapRemoveWithChildMissing test expects).  The
# pools of the deleted-pool case are each side's own.
cat >"$TMP/J.txt" <<EOF
create $POOL Xj1 4194304 1
snap $POOL Xj1 s
clone3 $POOL Xj1 s $POOL Xj1a clone_format=2
clone3 $POOL Xj1 s $POOL Xj1b clone_format=2
clone3 $POOL Xj1 s $POOL Xj1c clone_format=2
snaprm $POOL Xj1 s
snaps $POOL Xj1
remove $POOL Xj1a
snaps $POOL Xj1
flatten0 $POOL Xj1b
snaps $POOL Xj1
remove $POOL Xj1
remove $POOL Xj1c
snaps $POOL Xj1
remove $POOL Xj1
remove $POOL Xj1b
create $POOL Xj2 4194304 1
snap $POOL Xj2 t
clone3 $POOL Xj2 t $POOL Xj2a clone_format=2
snaprm $POOL Xj2 t
flatten0 $POOL Xj2a
snaps $POOL Xj2
remove $POOL Xj2
remove $POOL Xj2a
mkpool Xjp1
mkpool Xjp2
create Xjp1 Xpar 4194304 1
snap Xjp1 Xpar snap1
snap Xjp1 Xpar snap2
clone3 Xjp1 Xpar snap1 Xjp2 Xchild1 clone_format=2
clone3 Xjp1 Xpar snap2 Xjp1 Xchild2 clone_format=2
clone3 Xjp1 Xpar snap2 Xjp2 Xchild3 clone_format=2
kids Xjp1 Xpar
rmpool Xjp2
kids Xjp1 Xpar
snaprm Xjp1 Xpar snap1
kids Xjp1 Xpar
remove Xjp1 Xchild2
kids Xjp1 Xpar
snaprm Xjp1 Xpar snap2
kids Xjp1 Xpar
snaps Xjp1 Xpar
remove Xjp1 Xpar
rmpool Xjp1
EOF
run_phase J
expect J "remove $POOL Xj1c" 0
expect J "snaprm Xjp1 Xpar snap1" 0

rbdl_summary
