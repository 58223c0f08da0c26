#!/usr/bin/env bash
# test-edgecases.sh - differential edge-case test: librbdlite must answer
# every case of tests/cluster/edgecases.c exactly as the real librbd does.
#
# Two identical fresh images are made with the rbd CLI (16 MiB, layering
# only, `rbd import` of a file with data in [0, 1 MiB) and [8 MiB, 9 MiB),
# then `rbd snap create @s1`).  edgecases-librbd runs on one,
# edgecases-lite on the other, and their outputs are compared case by case
# (a case is a line "<name>: <result>").  Every case is a sub-test; a case
# whose lines differ fails, showing both.  Then `edgecases-lite
# --lite-only` runs on a third image: misuse the real librbd does not
# survive, where librbdlite must return -EINVAL (or a sane value) and not
# crash; each of its lines is a sub-test too.
#
# Then the same two tables on format 1 images (made with
# RBD_FORCE_ALLOW_V1, as librbd requires), which the system's librbd
# serves whole under librbdlite (lib/api/whole.h): the differential table
# must match librbd's line for line (the format 1 block name prefix, which
# differs per image, aside), and the misuse table must pass on such a
# handle too.
#
# Allowed differences: none are normalised here.  The one freedom that
# librbd-api.md documents for these cases -- a partial discard may zero
# more than librbd does -- is taken care of in edgecases.c itself, which
# prints only "old-or-zero" for partial discards.  Should a case ever have
# to be excused, add its exact name to ALLOWED below with a comment saying
# which documented choice it is.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (it fails,
# never skips, without them).  Binaries come from
# $RBDLITE_BUILDDIR/tests/cluster (default: two levels above this script).
# Prints "N passed, M failed" last; exits non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# Case names whose output may differ between the libraries (none).
declare -A ALLOWED=()

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_twins edgecases
TMO=${RBDLITE_EDGE_TIMEOUT:-300}

# A program that crashed leaves its watch on the image for ~30 s, during
# which `rbd rm` refuses; retry for up to a minute in all.
rbdl_images_cleanup 60 "$POOL/"

rbdl_need_progs "$LITE" "$REF"

rbdl_workdir edge

# The initial content: deterministic text in [0, 1 MiB) and [8 MiB, 9 MiB),
# zeros elsewhere (rbd import leaves objects 1 and 3 unallocated).
BASE=$WORK/base.bin
truncate -s 16M "$BASE"
seq 1 400000 | head -c 1048576 |
    dd of="$BASE" bs=1M conv=notrunc status=none
seq 7000000 7400000 | head -c 1048576 |
    dd of="$BASE" bs=1M seek=8 conv=notrunc status=none

# make_image NAME [IMPORT ARGS]: import BASE and snapshot it as @s1.
make_image() {
    local name=$1
    shift
    (($#)) || set -- --image-feature layering
    IMAGES+=("$name")
    timeout -k 10 "$TMO" rbd import --no-progress "$@" \
        "$BASE" "$POOL/$name" >"$WORK/mk.log" 2>&1 &&
        timeout -k 10 "$TMO" rbd snap create --no-progress "$POOL/$name@s1" \
            >>"$WORK/mk.log" 2>&1
}

IREF=edge-$$-librbd
ILITE=edge-$$-lite
IONLY=edge-$$-liteonly
for i in "$IREF" "$ILITE" "$IONLY"; do
    if ! make_image "$i"; then
        sed 's/^/    | /' "$WORK/mk.log"
        fail "create image $i"
        rbdl_summary
        exit 1
    fi
done

# Each edge-case program must finish (exit 0, no crash or hang).

rbdl_run_prog edgecases-librbd "$WORK/ref.out" "$TMO" "$REF" "$POOL" "$IREF"
rbdl_run_prog edgecases-lite "$WORK/lite.out" "$TMO" "$LITE" "$POOL" "$ILITE"

# ---- compare case by case ---------------------------------------------------

declare -A LITE_LINE=() REF_SEEN=()
dups=0
while IFS= read -r l; do
    n=${l%%: *}
    [[ -n ${LITE_LINE[$n]+x} ]] && dups=$((dups + 1))
    LITE_LINE[$n]=$l
done <"$WORK/lite.out"

ncases=0
while IFS= read -r l; do
    n=${l%%: *}
    ncases=$((ncases + 1))
    if [[ -n ${REF_SEEN[$n]+x} ]]; then
        fail "duplicate case name in the table: $n"
        continue
    fi
    REF_SEEN[$n]=1
    if [[ -z ${LITE_LINE[$n]+x} ]]; then
        fail "$n"
        echo "    | librbd:     $l"
        echo "    | librbdlite: (no such line)"
    elif [[ ${LITE_LINE[$n]} == "$l" ]]; then
        pass "$n"
    elif [[ -n ${ALLOWED[$n]+x} ]]; then
        pass "$n (allowed to differ: ${ALLOWED[$n]})"
    else
        fail "$n"
        echo "    | librbd:     $l"
        echo "    | librbdlite: ${LITE_LINE[$n]}"
    fi
done <"$WORK/ref.out"
for n in "${!LITE_LINE[@]}"; do
    if [[ -z ${REF_SEEN[$n]+x} ]]; then
        fail "$n"
        echo "    | librbd:     (no such line)"
        echo "    | librbdlite: ${LITE_LINE[$n]}"
    fi
done
((dups == 0)) || fail "edgecases-lite printed $dups duplicate case names"
# An empty or truncated reference run must not look like success.
if ((ncases < 100)); then
    fail "only $ncases cases from edgecases-librbd (expected the full table)"
fi

# ---- misuse only librbdlite is expected to survive --------------------------

OUT=$WORK/only.out
rbdl_run_prog "edgecases-lite --lite-only" "$OUT" "$TMO" "$LITE" --lite-only "$POOL" "$IONLY"
nonly=0
while IFS= read -r l; do
    case $l in
    *" ok")
        pass "lite-only ${l% ok}"
        nonly=$((nonly + 1))
        ;;
    *" FAIL")
        fail "lite-only ${l% FAIL}"
        nonly=$((nonly + 1))
        ;;
    esac
done <"$OUT"
if ! grep -q '^lite-only: .* ok, 0 failed$' "$OUT" || ((nonly < 20)); then
    fail "edgecases-lite --lite-only did not finish its table ($nonly cases)"
fi

# ---- format 1 images, served whole by the system's librbd -----------------

export RBD_FORCE_ALLOW_V1=1
F1=()
for i in edge1-$$-librbd edge1-$$-lite edge1-$$-liteonly; do
    if make_image "$i" --image-format 1; then
        F1+=("$i")
    else
        sed 's/^/    | /' "$WORK/mk.log"
        fail "create format 1 image $i"
    fi
done
if ((${#F1[@]} == 3)); then
    rbdl_run_prog "edgecases-librbd (format 1)" "$WORK/ref1.out" "$TMO" "$REF" "$POOL" "${F1[0]}"
    rbdl_run_prog "edgecases-lite (format 1)" "$WORK/lite1.out" "$TMO" "$LITE" "$POOL" "${F1[1]}"
    norm() { sed -E 's/block_name_prefix=rb\.0\.[0-9a-f.]+/block_name_prefix=rb.0.X/' "$1"; }
    n1=$(wc -l <"$WORK/ref1.out")
    if ((n1 < 100)); then
        fail "format 1: only $n1 cases from edgecases-librbd (expected the full table)"
    elif diff <(norm "$WORK/ref1.out") <(norm "$WORK/lite1.out") >"$WORK/f1.diff"; then
        pass "format 1: all $n1 cases answered as librbd's"
    else
        fail "format 1: cases answered differently (< librbd, > librbdlite)"
        head -n 40 "$WORK/f1.diff" | sed 's/^/    | /'
    fi
    OUT=$WORK/only1.out
    rbdl_run_prog "edgecases-lite --lite-only (format 1)" "$OUT" "$TMO" "$LITE" --lite-only "$POOL" "${F1[2]}"
    if grep -q '^lite-only: .* ok, 0 failed$' "$OUT"; then
        pass "format 1: $(grep '^lite-only: ' "$OUT")"
    else
        fail "format 1: edgecases-lite --lite-only failed or did not finish"
        grep -v ' ok$' "$OUT" | head -n 20 | sed 's/^/    | /'
    fi
fi

rbdl_summary
