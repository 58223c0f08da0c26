#!/usr/bin/env bash
# test-model.sh - model-based random testing of the data path and the
# snapshot operations (tests/cluster/rbdmodel.c), librbdlite and the real
# librbd 16.2 alike.
#
# For each image kind
#   plain     layering only, 256 KiB objects
#   default   rbd's default features (exclusive-lock, object-map,
#             fast-diff, deep-flatten), 256 KiB objects
#   striped   default features, 1 MiB objects, stripe unit 64 KiB x 4
#   datapool  default features, 256 KiB objects, data in
#             $RBDLITE_TEST_DATA_POOL
# rbdmodel runs a seeded random mix of I/O and snapshot operations on a new
# image three times: through librbdlite, through the real librbd (so the
# model itself is checked against librbd), and with the two libraries
# taking turns on the image (closing it in one, opening it in the other,
# every RBDLITE_MODEL_ALT operations).  Every operation's result is
# checked against the model as it runs; afterwards the image is exported
# with the rbd CLI and must equal the model's bytes, and so must every
# remaining snapshot; on kinds with an object map `rbd info` must show no
# flags and `rbd object-map check` must find nothing but what librbd 16.2.15
# itself leaves (objects marked EXISTS by a compare-and-write whose compare
# failed; after a rollback, objects marked EXISTS_CLEAN).  The three runs
# of a kind must between them have run every type of operation.  Per run
# the output lists the operations run, by type, and the failures.
#
# RBDLITE_MODEL_OPS (default 800) sets the operations per run,
# RBDLITE_MODEL_SEED the first seed (each run adds its index; default:
# random, printed), RBDLITE_MODEL_KINDS the kinds to run.  A failure prints
# the seed, the operation number, the operation and the mismatch, and the
# rbdmodel command that reproduces it on a new image of the same kind.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (fails,
# never skips, without them).  Prints "N passed, M failed" last; exits
# non-zero on any failure.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd cmp python3
MODEL=$BUILDDIR/tests/cluster/rbdmodel
LITELIB=${RBDLITE_LIB:-$BUILDDIR/lib/.libs/librbdlite.so}
# The real librbd by its soname, from the system's library path (never a
# drop-in from LD_LIBRARY_PATH: the runs below unset it).
REFLIB=${RBDLITE_MODEL_REFLIB:-librbd.so.1}
OPS=${RBDLITE_MODEL_OPS:-800}
ALT=${RBDLITE_MODEL_ALT:-50}
KINDS=${RBDLITE_MODEL_KINDS:-plain default striped datapool}
TMO=${RBDLITE_MODEL_TIMEOUT:-300}
SEED0=${RBDLITE_MODEL_SEED:-$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))}
rbdl_need_progs "$MODEL"
[[ -e $LITELIB ]] || die "librbdlite not built: $LITELIB"
rbdl_images_cleanup 60 "$POOL/"
rbdl_workdir model
echo "$PROG: first seed $SEED0, $OPS operations per run"

RUN=0

# kind_args KIND: the size and the rbd create options of an image kind.
kind_args() {
    case $1 in
    plain) echo "4M --object-size 256K --image-feature layering" ;;
    default) echo "4M --object-size 256K" ;;
    striped) echo "8M --object-size 1M --stripe-unit 64K --stripe-count 4" ;;
    datapool) echo "4M --object-size 256K --data-pool $DATA_POOL" ;;
    *) die "unknown image kind $1" ;;
    esac
}

# has_object_map KIND
has_object_map() { [[ $1 != plain ]]; }

# check_export NAME DUMP WHAT: `rbd export` of POOL/NAME equals DUMP.
check_export() {
    local name=$1 dump=$2 what=$3 out=$TMP/export.$RUN
    rm -f -- "$out"
    if ! c_rbd export --no-progress "$POOL/$name" "$out" >"$out.log" 2>&1; then
        fail "$what: rbd export $name" "$(tail -n 1 "$out.log")"
        return
    fi
    if cmp -- "$dump" "$out" >"$out.cmp" 2>&1; then
        pass "$what: rbd export $name equals the model ($(stat -c %s "$out") bytes)"
    else
        fail "$what: rbd export $name differs from the model" \
            "$(head -n 1 "$out.cmp"); sizes $(stat -c %s "$dump") (model) vs $(stat -c %s "$out")"
    fi
    rm -f -- "$out"
}

# run_one KIND MODE: one rbdmodel run on a new image of KIND; MODE is lite,
# librbd or alt.
run_one() {
    local kind=$1 mode=$2 name seed out dump rc libs want s line ok_omap t0=$SECONDS
    RUN=$((RUN + 1))
    name=model-$kind-$mode
    seed=$((SEED0 + RUN))
    out=$TMP/$name.out
    dump=$TMP/$name.img
    # shellcheck disable=SC2046 # word splitting of the options is wanted
    rbdl_mkimage "$name" $(kind_args "$kind")
    case $mode in
    lite) libs=(--lib "$LITELIB"); want=(librbdlite) ;;
    librbd) libs=(--lib "$REFLIB"); want=(librbd) ;;
    alt) libs=(--lib "$LITELIB" --lib2 "$REFLIB" --alt "$ALT"); want=(librbdlite librbd) ;;
    esac
    timeout -k 10 "$TMO" env -u LD_PRELOAD -u LD_LIBRARY_PATH "$MODEL" \
        --pool "$POOL" --image "$name" "${libs[@]}" --seed "$seed" \
        --ops "$OPS" --dump "$dump" >"$out" 2>"$out.err"
    rc=$?
    line="$kind/$mode: $(grep -m1 '^seed' "$out" 2>/dev/null)"
    if ((rc != 0)); then
        fail "$kind/$mode: rbdmodel $(rbdl_rc_text "$rc" "$TMO")" "seed $seed"
        grep -E '^(extents reported|FAIL|reproduce)' "$out" | sed 's/^/    | /'
        echo "    | on an image made with: rbd create --size $(kind_args "$kind") $POOL/NEW-IMAGE"
        show_log "$out.err"
        echo "    | ops run: $OPS drawn, failures: 1"
        return
    fi
    # the libraries loaded are the ones asked for, in order
    if [[ $(grep '^library ' "$out" | cut -d' ' -f2 | tr '\n' ' ') != "${want[*]} " ]]; then
        fail "$kind/$mode: the libraries loaded are not ${want[*]}" \
            "$(grep '^library' "$out" | tr '\n' ' ')"
        return
    fi
    pass "$line: $(grep -m1 '^ok:' "$out") in $((SECONDS - t0)) s"
    echo "    | $(grep -m1 '^by type:' "$out")"
    grep -m1 '^by type:' "$out" >>"$TMP/types-$kind"
    echo "    | failures: 0"
    check_export "$name" "$dump" "$kind/$mode"
    while read -r s; do
        [[ -n $s ]] || continue
        check_export "$name@$s" "$dump@$s" "$kind/$mode snapshot"
    done <"$dump.snaps"
    if has_object_map "$kind"; then
        # no invalid flags after the run (before object-map check, which
        # flags the map invalid when it finds anything to say)
        if c_rbd info --format json "$POOL/$name" >"$out.info" 2>&1 &&
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(1 if d.get("flags") else 0)' "$out.info"; then
            pass "$kind/$mode: no object map flags"
        else
            fail "$kind/$mode: rbd info flags" "$(tr -d '\n' <"$out.info" | head -c 300)"
        fi
        # The object map may claim more than there is: librbd 16.2.15
        # itself marks an object EXISTS before a compare-and-write whose
        # compare then fails, which the check reports as "marked as 1, but
        # should be 3" (or 0).  And a rollback copies the snapshot's map,
        # EXISTS_CLEAN states included, so after one an object changed
        # since the last snapshot may be "marked as 3, but should be 1"
        # (librbd does the same).  Anything else is wrong (an object
        # marked absent that has data, or marked clean without a rollback).
        ok_omap='marked as 1, but should be [03]$'
        if grep -q ' snap_rollback=' "$out"; then
            ok_omap='marked as (1, but should be [03]|3, but should be 1)$'
        fi
        if ! c_rbd object-map check --no-progress "$POOL/$name" >"$out.omap" 2>&1; then
            fail "$kind/$mode: rbd object-map check" "$(tail -n 1 "$out.omap")"
        elif grep 'object map error' "$out.omap" | grep -Eqv "$ok_omap"; then
            fail "$kind/$mode: rbd object-map check" \
                "$(grep 'object map error' "$out.omap" | grep -Ev "$ok_omap" | head -n 3 | sed 's/.*object map error: //')"
        else
            pass "$kind/$mode: rbd object-map check ($(grep -c 'object map error' "$out.omap") objects marked EXISTS or EXISTS_CLEAN as librbd marks them)"
        fi
    fi
    rm -f -- "$dump" "$dump"@*
}

# every_type KIND: the runs of KIND that completed ran every type of
# operation at least once between them (so each is tested).
every_type() {
    local f=$TMP/types-$1 missing
    [[ -s $f ]] || return 0
    missing=$(python3 - "$f" <<'EOF'
import sys
want = """write aio_write aio_writev read aio_read aio_readv write_zeroes
aio_write_zeroes writesame aio_writesame compare_and_write
compare_and_write_mismatch aio_compare_and_write
compare_and_write_cross_sector aio_compare_and_write_cross_sector discard
aio_discard flush aio_flush resize_grow resize_shrink snap_create
snap_verify snap_rollback snap_remove diff_iterate2 diff_iterate2_at_snapshot
reopen edge aio_burst
switch_library""".split()
seen = {}
for line in open(sys.argv[1]):
    for w in line.split()[2:]:
        k, v = w.split("=")
        seen[k] = seen.get(k, 0) + int(v)
print(" ".join(t for t in want if not seen.get(t)))
EOF
)
    if [[ -z $missing ]]; then
        pass "$1: every type of operation ran"
    else
        fail "$1: some types of operation never ran (more operations needed)" "$missing"
    fi
}

for kind in $KINDS; do
    kind_args "$kind" >/dev/null
    for mode in lite librbd alt; do
        run_one "$kind" "$mode"
    done
    every_type "$kind"
done
rbdl_summary
