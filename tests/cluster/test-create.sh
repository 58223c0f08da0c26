#!/usr/bin/env bash
# test-create.sh - image creation, removal, listing and namespaces:
# librbdlite against the real librbd and the rbd CLI.
#
#  1. Differential table: tests/cluster/createcases.c (options, every
#     rbd_create variant and validation error with the header read back,
#     rbd_list/rbd_list2 and -ERANGE, rbd_remove errors,
#     rbd_namespace_exists) runs as createcases-librbd and createcases-lite,
#     each in a fresh namespace of its own; every line must match.
#  2. Twins: each rbd_create variant made by librbdlite must equal the
#     image `rbd create` makes with the same parameters in
#     `rbd info --format json` (except name, id, prefix and timestamps);
#     `rbd object-map check` is clean on it; the real librbd (python) opens
#     it, writes and reads back; then librbdlite's rbd_remove leaves no
#     object of it in either pool.
#  3. Removal refusals, librbdlite and librbd side by side: with a
#     snapshot (-ENOTEMPTY), while another client has the image open
#     (-EBUSY), while another client holds its exclusive lock (-EBUSY);
#     a journaled image, which librbdlite hands to the system's librbd
#     (gone, with its journal objects); a clone is removed and detached
#     from its parent.
#  4. rbd_list and rbd_list2 agree with `rbd ls`, default namespace and a
#     namespace, also with an image moved to the trash.
#  5. The creation defaults from the client configuration and from pool
#     overrides (`rbd config pool set`) apply to rbd_create as in librbd.
#  6. qemu-img create with librbdlite preloaded makes the same image as
#     `rbd create`.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (it fails,
# never skips, without them).  Binaries come from
# $RBDLITE_BUILDDIR/tests/cluster.  Prints "N passed, M failed" last; exits
# non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# Table cases whose output may differ, with the reason (none today).
declare -A ALLOWED=()

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_twins createcases
DPOOL=$DATA_POOL
TMO=${RBDLITE_CREATE_TIMEOUT:-300}
TAG=cr$$

IMAGES=()	# pool[/ns]/name to remove at exit
NAMESPACES=()
HOLDERS=()	# pids of background librbd clients

POOL_OVERRIDDEN=0
cleanup() {
    local i
    if ((POOL_OVERRIDDEN)); then
        for i in "${OVERRIDES[@]}"; do
            rbd config pool rm "$POOL" "$i" >/dev/null 2>&1
        done
    fi
    for i in "${HOLDERS[@]}"; do
        kill "$i" 2>/dev/null
        wait "$i" 2>/dev/null
    done
    rbdl_remove_images 0
    for i in "${NAMESPACES[@]}"; do
        # images left behind by a failed table run
        rbd ls "$POOL/$i" 2>/dev/null | while read -r n; do
            rbd rm --no-progress "$POOL/$i/$n" >/dev/null 2>&1
        done
        rbd trash purge "$POOL/$i" >/dev/null 2>&1
        rbd namespace rm "$POOL/$i" >/dev/null 2>&1 ||
            echo "$PROG: could not remove namespace $i" >&2
    done
    rbdl_rm_workdir
}
rbdl_traps

# check NAME CMD...: a sub-test that CMD succeeds.
check() {
    local name=$1
    shift
    if "$@" >"$WORK/check.log" 2>&1; then
        pass "$name"
    else
        fail "$name"
        tail -n 8 "$WORK/check.log" | sed 's/^/    | /'
    fi
}

# expect NAME WANT GOT: a sub-test that two strings are equal.
expect() {
    if [[ $2 == "$3" ]]; then
        pass "$1"
    else
        fail "$1"
        echo "    | expected: $2"
        echo "    | got:      $3"
    fi
}

rbdl_need_progs "$LITE" "$REF"

rbdl_find_python || die "no python3 with the rados and rbd modules"

rbdl_workdir create

# ---- 1. the differential table ----------------------------------------------

NSREF=$TAG-ref
NSLITE=$TAG-lite
for ns in "$NSREF" "$NSLITE"; do
    if rbd namespace create "$POOL/$ns" >"$WORK/ns.log" 2>&1; then
        NAMESPACES+=("$ns")
    else
        sed 's/^/    | /' "$WORK/ns.log"
        fail "create namespace $ns"
        rbdl_summary
        exit 1
    fi
done

rbdl_run_prog createcases-librbd "$WORK/ref.out" "$TMO" "$REF" table "$POOL" "$DPOOL" "$NSREF"
rbdl_run_prog createcases-lite "$WORK/lite.out" "$TMO" "$LITE" table "$POOL" "$DPOOL" "$NSLITE"

declare -A LITE_LINE=() REF_SEEN=()
while IFS= read -r l; do
    LITE_LINE[${l%%: *}]=$l
done <"$WORK/lite.out"
ncases=0
while IFS= read -r l; do
    n=${l%%: *}
    ncases=$((ncases + 1))
    REF_SEEN[$n]=1
    if [[ ${LITE_LINE[$n]-} == "$l" ]]; then
        pass "$n"
    elif [[ -n ${ALLOWED[$n]+x} && -n ${LITE_LINE[$n]+x} ]]; then
        pass "$n (allowed to differ: ${ALLOWED[$n]})"
    else
        fail "$n"
        echo "    | librbd:     $l"
        echo "    | librbdlite: ${LITE_LINE[$n]-(no such line)}"
    fi
done <"$WORK/ref.out"
for n in "${!LITE_LINE[@]}"; do
    [[ -n ${REF_SEEN[$n]+x} ]] || fail "$n (only librbdlite printed it)"
done
((ncases >= 150)) || fail "only $ncases cases from createcases-librbd"

# Nothing of the table's images may remain in the namespace (both pools).
for ns in "$NSREF" "$NSLITE"; do
    left=$( { rados -p "$POOL" -N "$ns" ls; rados -p "$DPOOL" -N "$ns" ls; } 2>/dev/null |
        grep -v -x -e rbd_directory -e rbd_trash -e rbd_info | sort | tr '\n' ' ')
    expect "table objects all removed in $ns" "" "$left"
done

# ---- 2. twins -----------------------------------------------------------------

# info_of SPEC: rbd info JSON without the fields that differ by nature.
info_of() {
    rbd info --format json "$1" | jq -S 'del(.name, .id, .block_name_prefix,
        .create_timestamp, .access_timestamp, .modify_timestamp)'
}

# objects_of ID: every object in both pools (all namespaces) naming ID.
objects_of() {
    { rados -p "$POOL" ls --all; rados -p "$DPOOL" ls --all; } 2>/dev/null |
        grep -F -e "$1" | tr '\t\n' '  '
}

# librbd_io SPEC: the real librbd opens the image, writes a pattern across
# several objects, reads it back.
librbd_io() {
    "$PY" - "$@" <<'EOF'
import os, sys, rados, rbd
spec = sys.argv[1].split('/')
pool, ns, name = spec[0], (spec[1] if len(spec) == 3 else ''), spec[-1]
with rados.Rados(conffile=os.environ['CEPH_CONF']) as c:
    with c.open_ioctx(pool) as io:
        io.set_namespace(ns)
        with rbd.Image(io, name) as im:
            size = im.size()
            offs = [0, 65536 * 3 + 5, 1 << 20, (4 << 20) + 12345,
                    size // 2, size - 70000]
            for i, o in enumerate(offs):
                im.write(bytes([i + 1]) * 70000, o)
            im.flush()
            for i, o in enumerate(offs):
                d = im.read(o, 70000)
                if d != bytes([i + 1]) * 70000:
                    sys.exit('mismatch at %d' % o)
EOF
}

# twin VARIANT NS CLI-ARGS...: make VARIANT with librbdlite and the twin
# with `rbd create CLI-ARGS`, compare, check, do I/O, remove.
twin() {
    local v=$1 ns=$2 pre lite cli out id feats
    shift 2
    pre=$POOL
    [[ $ns != - ]] && pre=$POOL/$ns
    lite=$TAG-$v-lite
    cli=$TAG-$v-cli
    IMAGES+=("$pre/$lite" "$pre/$cli")
    out=$("$LITE" make "$POOL" "$ns" "$lite" "$v" "$DPOOL" 2>&1)
    if [[ $out != ret=0* ]]; then
        fail "twin $v: librbdlite create ($out)"
        return
    fi
    if ! rbd create "$@" "$pre/$cli" >"$WORK/cli.log" 2>&1; then
        fail "twin $v: rbd create $*"
        sed 's/^/    | /' "$WORK/cli.log"
        return
    fi
    expect "twin $v: rbd info equal to rbd create $*" \
        "$(info_of "$pre/$cli")" "$(info_of "$pre/$lite")"
    id=$(rbd info --format json "$pre/$lite" | jq -r .id)
    feats=$(rbd info --format json "$pre/$lite" | jq -r '.features | join(",")')
    if [[ ,$feats, == *,object-map,* ]]; then
        check "twin $v: object-map check (new)" rbd object-map check "$pre/$lite"
    fi
    check "twin $v: librbd I/O" librbd_io "$pre/$lite"
    if [[ ,$feats, == *,object-map,* ]]; then
        check "twin $v: object-map check (written)" rbd object-map check "$pre/$lite"
    fi
    [[ -n $(objects_of "$id") ]] || fail "twin $v: no objects found for id $id"
    out=$("$LITE" rm "$POOL" "$ns" "$lite" 2>&1)
    expect "twin $v: rbd_remove" "ret=0" "$out"
    expect "twin $v: no object left after rbd_remove" "" "$(objects_of "$id")"
    if rbd info "$pre/$lite" >/dev/null 2>&1; then
        fail "twin $v: rbd info still finds the removed image"
    else
        pass "twin $v: rbd info no longer finds it"
    fi
    rbd rm --no-progress "$pre/$cli" >/dev/null 2>&1
}

twin plain - --size 1G
twin features - --size 1G --image-feature layering,exclusive-lock
twin striping - --size 1G --stripe-unit 65536 --stripe-count 8
twin count1 - --size 1G --image-feature layering --stripe-unit 1M --stripe-count 1
twin order - --size 100M --object-size 1M
twin datapool - --size 1G --data-pool "$DPOOL"
twin stripedpool - --size 1G --data-pool "$DPOOL" --image-feature layering \
    --stripe-unit 1M --stripe-count 3
twin plain "$NSLITE" --size 1G
twin stripedpool "$NSLITE" --size 1G --data-pool "$DPOOL" \
    --image-feature layering --stripe-unit 1M --stripe-count 3

# ---- 3. removal refusals --------------------------------------------------------

# hold SPEC MODE: a librbd client keeps the image open (MODE open: just
# open; lock: write, so it owns the exclusive lock) until unhold, which
# lets it close the image cleanly.
hold() {
    local ready=$WORK/ready.$RANDOM
    HOLD_READY=$ready
    "$PY" - "$1" "$2" "$ready" <<'EOF' &
import os, sys, time, rados, rbd
pool, name = sys.argv[1].split('/')
with rados.Rados(conffile=os.environ['CEPH_CONF']) as c:
    with c.open_ioctx(pool) as io:
        with rbd.Image(io, name) as im:
            if sys.argv[2] == 'lock':
                im.write(b'x' * 4096, 0)
                if not im.is_exclusive_lock_owner():
                    sys.exit('lock not acquired')
            open(sys.argv[3], 'w').close()
            # until told to stop: then close cleanly (drops the watch)
            for _ in range(3000):
                if os.path.exists(sys.argv[3] + '.stop'):
                    break
                time.sleep(0.1)
EOF
    HOLDERS+=($!)
    local i
    for i in $(seq 1 100); do
        [[ -e $ready ]] && return 0
        sleep 0.2
    done
    return 1
}

unhold() {
    local pid=${HOLDERS[-1]}
    touch "$HOLD_READY.stop"
    wait "$pid" 2>/dev/null
    unset 'HOLDERS[-1]'
}

for lib in lite librbd; do
    prog=$LITE
    [[ $lib == librbd ]] && prog=$REF
    img=$TAG-rm-$lib
    IMAGES+=("$POOL/$img")
    rbd create --size 64M "$POOL/$img" >/dev/null 2>&1 ||
        fail "rm $lib: create image"
    rbd snap create --no-progress "$POOL/$img@s1" >/dev/null 2>&1
    expect "rm $lib: with a snapshot" "ret=-39" "$("$prog" rm "$POOL" - "$img")"
    rbd snap purge --no-progress "$POOL/$img" >/dev/null 2>&1
    if hold "$POOL/$img" open; then
        expect "rm $lib: open elsewhere" "ret=-16" "$("$prog" rm "$POOL" - "$img")"
    else
        fail "rm $lib: librbd holder did not start"
    fi
    unhold
    if hold "$POOL/$img" lock; then
        expect "rm $lib: lock held elsewhere" "ret=-16" "$("$prog" rm "$POOL" - "$img")"
    else
        fail "rm $lib: librbd lock holder did not start"
    fi
    unhold
    id=$(rbd info --format json "$POOL/$img" | jq -r .id)
    expect "rm $lib: image intact after refusals" "$((64 << 20))" \
        "$(rbd info --format json "$POOL/$img" | jq -r .size)"
    expect "rm $lib: once released" "ret=0" "$("$prog" rm "$POOL" - "$img")"
    expect "rm $lib: nothing left" "" "$(objects_of "$id")"
    expect "rm $lib: missing" "ret=-2" "$("$prog" rm "$POOL" - "$img")"
done

# Images whose removal must also update other objects: a clone leaves its
# parent's list of children; a journaled image's journal goes with it
# (librbdlite has the system's librbd remove such an image).
P=$TAG-parent C=$TAG-clone J=$TAG-journal
IMAGES+=("$POOL/$C" "$POOL/$P" "$POOL/$J")
if rbd create --size 8M --image-feature layering "$POOL/$P" >/dev/null 2>&1 &&
    rbd snap create --no-progress "$POOL/$P@s" >/dev/null 2>&1 &&
    rbd snap protect "$POOL/$P@s" >/dev/null 2>&1 &&
    rbd clone "$POOL/$P@s" "$POOL/$C" >/dev/null 2>&1; then
    expect "rm lite: a clone" "ret=0" "$("$LITE" rm "$POOL" - "$C")"
    expect "rm lite: the parent has no children left" "" \
        "$(rbd children "$POOL/$P@s" 2>&1)"
    check "rm lite: the parent snapshot unprotects" \
        rbd snap unprotect "$POOL/$P@s"
    rbd snap purge --no-progress "$POOL/$P" >/dev/null 2>&1
else
    fail "make a clone"
fi
if rbd create --size 8M --image-feature exclusive-lock,journaling \
    "$POOL/$J" >/dev/null 2>&1; then
    jid=$(rbd info --format json "$POOL/$J" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    njournal=$(rados -p "$POOL" ls | grep -c "^journal\.$jid")
    expect "rm lite: a journaled image (by the system's librbd)" "ret=0" \
        "$("$LITE" rm "$POOL" - "$J")"
    if ! rbd info "$POOL/$J" >/dev/null 2>&1 && ((njournal > 0)) &&
        [[ $(rados -p "$POOL" ls | grep -c "^journal\.$jid") == 0 ]]; then
        pass "rm lite: the journaled image and its $njournal journal objects are gone"
    else
        fail "rm lite: the journaled image and its journal objects are gone" \
            "(journal objects before: $njournal)"
    fi
else
    fail "make a journaled image"
fi

# ---- 4. listing against rbd ls ------------------------------------------------------

# compare_ls NS SPEC: rbd_list and rbd_list2 of librbdlite vs `rbd ls`.
compare_ls() {
    local want got2 got
    want=$(rbd ls "$2" | sort)
    got=$("$LITE" ls "$POOL" "$1" | sed -n 's/^list //p' | sort)
    got2=$("$LITE" ls "$POOL" "$1" | sed -n 's/^list2 \([^ ]*\) .*/\1/p' | sort)
    expect "rbd_list = rbd ls ($2, $3)" "$want" "$got"
    expect "rbd_list2 = rbd ls ($2, $3)" "$want" "$got2"
}
for i in a b c; do
    IMAGES+=("$POOL/$TAG-ls-$i" "$POOL/$NSLITE/$TAG-ls-$i")
    rbd create --size 1M "$POOL/$TAG-ls-$i" >/dev/null 2>&1
    "$LITE" make "$POOL" "$NSLITE" "$TAG-ls-$i" features >/dev/null 2>&1
done
compare_ls - "$POOL" "three more images"
compare_ls "$NSLITE" "$POOL/$NSLITE" "three images"
rbd trash mv "$POOL/$TAG-ls-b" >/dev/null 2>&1 || fail "rbd trash mv"
compare_ls - "$POOL" "one in the trash"
rbd trash ls "$POOL" | awk -v n="$TAG-ls-b" '$2 == n { print $1 }' |
    while read -r tid; do rbd trash rm --no-progress "$POOL/$tid" >/dev/null 2>&1; done
compare_ls - "$POOL" "trash emptied"
# A format 1 image (listed from the directory's tmap; removed by the
# system's librbd, which librbdlite passes format 1 images to).
V1=$TAG-v1
IMAGES+=("$POOL/$V1")
if RBD_FORCE_ALLOW_V1=1 rbd create --image-format 1 --size 8M "$POOL/$V1" \
    >/dev/null 2>&1; then
    compare_ls - "$POOL" "a format 1 image"
    if "$LITE" ls "$POOL" - | grep -q -x "list2 $V1 "; then
        pass "rbd_list2: format 1 image without id"
    else
        fail "rbd_list2: format 1 image without id"
    fi
    expect "rm lite: format 1 (by the system's librbd)" "ret=0" "$("$LITE" rm "$POOL" - "$V1")"
    if rbd info "$POOL/$V1" >/dev/null 2>&1; then
        fail "rm lite: the format 1 image is still there"
        rbd rm --no-progress "$POOL/$V1" >/dev/null 2>&1
    else
        pass "rm lite: the format 1 image is gone"
    fi
else
    fail "make a format 1 image"
fi

# An image whose librbd removal was interrupted after its move to the
# trash: rbd ls and rbd_list show it, rbd_remove finishes the removal.
for lib in lite librbd; do
    prog=$LITE
    [[ $lib == librbd ]] && prog=$REF
    img=$TAG-tr-$lib
    IMAGES+=("$POOL/$img")
    rbd create --size 32M "$POOL/$img" >/dev/null 2>&1
    librbd_io "$POOL/$img" >/dev/null 2>&1
    id=$(rbd info --format json "$POOL/$img" | jq -r .id)
    expect "interrupted removal ($lib): set up" "ret=0" \
        "$("$prog" trash-removing "$POOL" - "$img" "$id")"
    [[ $lib == lite ]] && compare_ls - "$POOL" "an interrupted removal"
    if "$prog" ls "$POOL" - | grep -q -x "list2 $img $id"; then
        pass "interrupted removal ($lib): rbd_list2 shows it with its id"
    else
        fail "interrupted removal ($lib): rbd_list2 does not show it"
    fi
    expect "interrupted removal ($lib): rbd_remove finishes it" "ret=0" \
        "$("$prog" rm "$POOL" - "$img")"
    expect "interrupted removal ($lib): nothing left" "" "$(objects_of "$id")"
    expect "interrupted removal ($lib): trash entry gone" "" \
        "$(rados -p "$POOL" listomapkeys rbd_trash 2>/dev/null | grep -F "$id")"
    if rbd ls "$POOL" | grep -q -x -F "$img"; then
        fail "interrupted removal ($lib): rbd ls still shows it"
    else
        pass "interrupted removal ($lib): rbd ls no longer shows it"
    fi
done

# ---- 5. pool configuration overrides ------------------------------------------------

# librbd applies `rbd config pool set` values to the creation defaults
# (features, order, stripe layout, data pool); librbdlite must too.
OVERRIDES=(rbd_default_features rbd_default_order rbd_default_stripe_unit
    rbd_default_stripe_count rbd_default_data_pool)
POOL_OVERRIDDEN=1
rbd config pool set "$POOL" rbd_default_features layering,exclusive-lock &&
    rbd config pool set "$POOL" rbd_default_order 20 &&
    rbd config pool set "$POOL" rbd_default_stripe_unit 65536 &&
    rbd config pool set "$POOL" rbd_default_stripe_count 4 &&
    rbd config pool set "$POOL" rbd_default_data_pool "$DPOOL" ||
    fail "rbd config pool set"
for lib in lite librbd; do
    prog=$LITE
    [[ $lib == librbd ]] && prog=$REF
    IMAGES+=("$POOL/$TAG-ov-$lib")
    printf -v "ov_$lib" '%s' "$("$prog" make "$POOL" - "$TAG-ov-$lib" plain 2>&1)"
done
expect "pool overrides: rbd_create result" "$ov_librbd" "$ov_lite"
expect "pool overrides: rbd info" "$(info_of "$POOL/$TAG-ov-librbd")" \
    "$(info_of "$POOL/$TAG-ov-lite")"
expect "pool overrides: in effect" "20 65536 4 true" \
    "$(rbd info --format json "$POOL/$TAG-ov-lite" |
        jq -r '"\(.order) \(.stripe_unit) \(.stripe_count) \(has("data_pool"))"')"
for k in "${OVERRIDES[@]}"; do
    rbd config pool rm "$POOL" "$k" >/dev/null 2>&1
done
POOL_OVERRIDDEN=0
for lib in lite librbd; do
    expect "pool overrides: rbd_remove ($lib image)" "ret=0" \
        "$("$LITE" rm "$POOL" - "$TAG-ov-$lib")"
done

# The same defaults from the client configuration (CEPH_ARGS).
k=0
for a in "--rbd_default_features=1" \
    "--rbd_default_features=layering,exclusive-lock,object-map" \
    "--rbd_default_order=23 --rbd_default_stripe_unit=1M --rbd_default_stripe_count=2" \
    "--rbd_default_format=1" "--rbd_default_data_pool=$DPOOL"; do
    k=$((k + 1))
    for lib in lite librbd; do
        prog=$LITE
        [[ $lib == librbd ]] && prog=$REF
        IMAGES+=("$POOL/$TAG-cf$k-$lib")
        printf -v "cf_$lib" '%s' "$(CEPH_ARGS="$a" "$prog" make "$POOL" - \
            "$TAG-cf$k-$lib" plain 2>&1)"
    done
    expect "config $a: rbd_create result" "$cf_librbd" "$cf_lite"
    if [[ $cf_lite == ret=0* ]]; then
        expect "config $a: rbd info" "$(info_of "$POOL/$TAG-cf$k-librbd")" \
            "$(info_of "$POOL/$TAG-cf$k-lite")"
        for lib in lite librbd; do
            "$LITE" rm "$POOL" - "$TAG-cf$k-$lib" >/dev/null 2>&1
        done
    fi
done

# ---- 6. a real program: qemu-img create over librbdlite --------------------------

# qemu's rbd driver creates images with rbd_create; with librbdlite
# preloaded, the image must equal the `rbd create` twin.
# shellcheck source=preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env qemu-img
Q=$TAG-qemu QT=$TAG-qemu-cli
IMAGES+=("$POOL/$Q" "$POOL/$QT")
env "${SAN_ENV[@]}" LD_PRELOAD="$PRELOAD" LD_DEBUG=bindings \
    qemu-img create -f raw "rbd:$POOL/$Q" 64M >"$WORK/qemu.log" 2>&1
rc=$?
expect "qemu-img create over librbdlite: exit status" 0 "$rc"
if grep -q "to $LIB .*symbol .rbd_create" "$WORK/qemu.log"; then
    pass "qemu-img create: rbd_create bound to librbdlite"
else
    fail "qemu-img create: rbd_create not bound to librbdlite"
    grep -E 'rbd_create|qemu-img:' "$WORK/qemu.log" | tail -n 3 | sed 's/^/    | /'
fi
rbd create --size 64M "$POOL/$QT" >/dev/null 2>&1
expect "qemu-img create: rbd info equal to rbd create" \
    "$(info_of "$POOL/$QT")" "$(info_of "$POOL/$Q")"
check "qemu-img create: librbd I/O" librbd_io "$POOL/$Q"

rbdl_summary
