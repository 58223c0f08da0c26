#!/usr/bin/env bash
# test-compat.sh - data compatibility between librbdlite, the real librbd
# and the rbd CLI, on a running test cluster.
#
# For each image kind (plain, two striped layouts, separate data pool;
# 64 MiB each), with rbdio built twice from tests/cluster/rbdio.c:
#   (a) rbdio-lite writes a seeded workload, rbdio-librbd verifies it
#       (and rbdio-lite verifies it too);
#   (b) rbdio-librbd writes a workload on a new image, rbdio-lite verifies;
#   (c) `rbd export` of the lite-written image equals what librbd reads
#       (which (a) showed to be the expected content), and a random file
#       brought in with `rbd import` reads back identically through
#       librbdlite;
#   (d) after `rbd bench --io-type write`, librbdlite reads the same bytes
#       as `rbd export`.
# Also checks that rbdio-lite really runs on librbdlite and rbdio-librbd on
# librbd.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (set by
# make check, or tests/cluster/cluster-test.sh); without them
# the test fails, it never skips.  Binaries are taken from
# $RBDLITE_BUILDDIR/tests/cluster (default: two levels above this script).
# RBDLITE_COMPAT_SEED and RBDLITE_COMPAT_NOPS change the workload.
#
# Prints one line per sub-test and "N passed, M failed"; exits non-zero if
# anything failed.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_twins rbdio
DPOOL=$DATA_POOL
SEED0=${RBDLITE_COMPAT_SEED:-20240611}
NOPS=${RBDLITE_COMPAT_NOPS:-300}
SIZE=$((64 << 20))
TMO=${RBDLITE_COMPAT_TIMEOUT:-600}   # per command, seconds

# A program that crashed leaves its watch on the image for ~30 s, during
# which `rbd rm` refuses; retry for up to a minute in all.
rbdl_images_cleanup 60 "$POOL/"

rbdl_workdir compat
LOG=$WORK/log

fail() {
    rbdl_fail "$1"
    [[ -s $LOG ]] && sed 's/^/    | /' "$LOG" | tail -n 20
}

# run CMD...: run with a time limit, output to $LOG.
run() {
    timeout -k 10 "$TMO" "$@" >"$LOG" 2>&1
}

# check NAME CMD...: one sub-test.
check() {
    local name=$1
    shift
    if run "$@"; then pass "$name"; else fail "$name"; fi
}

# new_image NAME ARGS...: create a 64 MiB image with extra create args.
new_image() {
    local name=$1
    shift
    IMAGES+=("$name")
    run rbd create --size "${SIZE}B" "$@" "$POOL/$name"
}

# rm_image NAME: remove now if possible, else leave it to cleanup.
rm_image() {
    local i
    rbd rm --no-progress "$POOL/$1" >/dev/null 2>&1 || return 0
    for i in "${!IMAGES[@]}"; do
        [[ ${IMAGES[$i]} == "$1" ]] && unset 'IMAGES[i]'
    done
}

# ---- sanity: the two builds bind to the libraries they claim -------------

rbdl_need_progs "$LITE" "$REF"

who=$("$LITE" whoami 2>&1)
if [[ $who == librbdlite ]]; then pass "rbdio-lite whoami = $who"
else : >"$LOG"; fail "rbdio-lite whoami = '$who', want librbdlite"; fi
who=$("$REF" whoami 2>&1)
if [[ $who == librbd ]]; then pass "rbdio-librbd whoami = $who"
else : >"$LOG"; fail "rbdio-librbd whoami = '$who', want librbd"; fi

# A random 64 MiB file with holes, for the import test (made once).
RANDFILE=$WORK/random.bin
head -c "$SIZE" /dev/urandom >"$RANDFILE"
for mb in 5 6 17 40 41 42 43 63; do     # zero runs: sparse import
    dd if=/dev/zero of="$RANDFILE" bs=1M seek="$mb" count=1 \
        conv=notrunc status=none
done
dd if=/dev/zero of="$RANDFILE" bs=1 seek=$((30 << 20)) count=777 \
    conv=notrunc status=none

# ---- per image kind --------------------------------------------------------

KINDS=(plain striped64k striped16k datapool)
declare -A OPTS=(
    [plain]="--image-feature layering"
    [striped64k]="--image-feature layering,striping --stripe-unit 64K --stripe-count 4"
    [striped16k]="--image-feature layering,striping --stripe-unit 16K --stripe-count 3 --object-size 1M"
    [datapool]="--image-feature layering --data-pool $DPOOL"
)

k=0
for kind in "${KINDS[@]}"; do
    read -r -a opts <<<"${OPTS[$kind]}"
    seed_a=$((SEED0 + 2 * k))
    seed_b=$((SEED0 + 2 * k + 1))
    k=$((k + 1))
    base=compat-$$-$kind
    ia=$base-a
    ib=$base-b
    ic=$base-import
    id=$base-bench

    # (a) librbdlite writes, librbd (and librbdlite) verify.
    if new_image "$ia" "${opts[@]}"; then
        check "$kind (a) lite write seed $seed_a" \
            "$LITE" write "$POOL" "$ia" "$seed_a" "$NOPS"
        check "$kind (a) librbd verify" \
            "$REF" verify "$POOL" "$ia" "$seed_a" "$NOPS"
        check "$kind (a) lite verify" \
            "$LITE" verify "$POOL" "$ia" "$seed_a" "$NOPS"
    else
        fail "$kind (a) rbd create ${opts[*]}"
    fi

    # (b) librbd writes, librbdlite verifies.
    if new_image "$ib" "${opts[@]}"; then
        check "$kind (b) librbd write seed $seed_b" \
            "$REF" write "$POOL" "$ib" "$seed_b" "$NOPS"
        check "$kind (b) lite verify" \
            "$LITE" verify "$POOL" "$ib" "$seed_b" "$NOPS"
    else
        fail "$kind (b) rbd create ${opts[*]}"
    fi
    rm_image "$ib"

    # (c) rbd export of the lite-written image; rbd import read by lite.
    exp=$WORK/export.bin
    rm -f -- "$exp"
    if run rbd export --no-progress "$POOL/$ia" "$exp"; then
        check "$kind (c) rbd export = librbd read of lite-written image" \
            "$REF" cmpfile "$POOL" "$ia" "$exp"
        check "$kind (c) rbd export = lite read of lite-written image" \
            "$LITE" cmpfile "$POOL" "$ia" "$exp"
    else
        fail "$kind (c) rbd export"
    fi
    rm -f -- "$exp"
    rm_image "$ia"
    IMAGES+=("$ic")
    if run rbd import --no-progress "${opts[@]}" "$RANDFILE" "$POOL/$ic"; then
        check "$kind (c) rbd import, lite reads it back" \
            "$LITE" cmpfile "$POOL" "$ic" "$RANDFILE"
    else
        fail "$kind (c) rbd import ${opts[*]}"
    fi
    rm_image "$ic"

    # (d) rbd bench writes; librbdlite reads what rbd export reads.
    if new_image "$id" "${opts[@]}" &&
        run rbd bench --io-type write --io-size 12K --io-threads 8 \
            --io-total 24M --io-pattern rand "$POOL/$id" &&
        run rbd export --no-progress "$POOL/$id" "$exp"; then
        check "$kind (d) rbd bench write, lite read = rbd export" \
            "$LITE" cmpfile "$POOL" "$id" "$exp"
    else
        fail "$kind (d) rbd bench --io-type write / rbd export"
    fi
    rm -f -- "$exp"
    rm_image "$id"
done

rbdl_summary
