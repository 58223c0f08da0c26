#!/usr/bin/env bash
# test-journal.sh - journaled images through librbdlite, whose I/O the
# system's librbd runs on a real handle of the image (lib/api/journaled.c),
# judged against the real librbd on twin images:
#
#   edgecases  the differential table of edge cases (edgecases.c: aio and
#              synchronous reads, writes, writev/readv, discards,
#              write-zeroes, write-same, compare-and-write, flushes, event
#              polling, errors) on twin journaled images: the two outputs
#              must be identical, and so must the entries of the two
#              journals (type, offset, length, sorted);
#   misuse     edgecases --lite-only on a journaled image: the misuse
#              that crashes or hangs the real librbd (lengths that wrap
#              past 2^64, a writev longer than the address space, a
#              zero-length compare-and-write, reused completions, a readv
#              whose iovec array changes after the call...) is answered as
#              librbdlite answers it, and the program survives;
#   rbdio      a seeded workload of 16 requests in flight (rbdio.c) on twin
#              journaled images: the real librbd verifies both images, and
#              the two journals hold the same entries;
#   qemu       qemu-io through rbdlite-run (LD_PRELOAD) on a journaled
#              image: aio write, flush, read back, write-zeroes, discard;
#              the real librbd reads the data back and the journal holds
#              the writes and the discard;
#   none       without a system librbd (RBDLITE_SYSTEM_LIBRBD naming no
#              file) librbdlite's writes to a journaled image fail (the
#              workload exits non-zero), a "librbdlite:" diagnostic says
#              why, and neither the image nor its journal has changed.
#
# What the calls on a journaled image beyond I/O give (snapshots, resize,
# flatten, features, metadata, locks, rename) and the journal events they
# append are compared in test-python.sh's journal section.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL (fails, never skips, without them), a
# python3 with Ceph's rados and rbd modules, rbd.  Prints one line per
# check and "N passed, M failed"; exits non-zero if anything failed.

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env rbd diff md5sum sort qemu-io head tr
rbdl_qemu_sanrt
rbdl_find_python || die "no python3 with the rados and rbd modules"
BIN=$BUILDDIR/tests/cluster
rbdl_need_progs "$BIN/edgecases-lite" "$BIN/edgecases-librbd" \
    "$BIN/rbdio-lite" "$BIN/rbdio-librbd"
TMO=${RBDLITE_JOURNAL_TIMEOUT:-300}
SEED=${RBDLITE_JOURNAL_SEED:-20261203}
NOPS=${RBDLITE_JOURNAL_NOPS:-60}
FEATURES=layering,exclusive-lock,object-map,fast-diff,journaling
# 4 x 64 MiB journal objects: the workloads stay within the first object
# set, so nothing is trimmed before the journals are compared.
JOPTS=(--journal-object-size 64M --journal-splay-width 4)

rbdl_images_cleanup 60 "$POOL/"
rbdl_workdir journal
P=j$$

# events IMAGE OUT: the journal's entries of IMAGE, sorted, to OUT.
events() {
    timeout -k 5 120 env -u LD_PRELOAD -u LD_LIBRARY_PATH "$PY" \
        "$HERE/pyrbd_script.py" journal-events "$1" >"$2" 2>"$2.err"
}

# same_journal NAME IMG_REF IMG_LITE: the two journals hold the same
# entries, and some.
same_journal() {
    if ! events "$2" "$TMP/$2.ev" || ! events "$3" "$TMP/$3.ev"; then
        fail "$1: journal entries read" "$(cat "$TMP/$2.ev.err" "$TMP/$3.ev.err" | tail -n 3)"
    elif [[ ! -s $TMP/$2.ev ]]; then
        fail "$1: the real librbd's journal has entries" "none"
    elif cmp -s "$TMP/$2.ev" "$TMP/$3.ev"; then
        pass "$1: same journal entries as librbd's ($(wc -l <"$TMP/$2.ev"))"
    else
        fail "$1: same journal entries as librbd's"
        diff "$TMP/$2.ev" "$TMP/$3.ev" | head -n 10 | sed 's/^/    | /'
    fi
}

# ---- edgecases ---------------------------------------------------------------

BASE=$TMP/base.bin
truncate -s 16M "$BASE"
seq 1 400000 | head -c 1048576 | dd of="$BASE" bs=1M conv=notrunc status=none
seq 7000000 7400000 | head -c 1048576 |
    dd of="$BASE" bs=1M seek=8 conv=notrunc status=none
for i in "$P-eref" "$P-elite" "$P-emis"; do
    IMAGES+=("$i")
    { c_rbd import --no-progress --image-feature "$FEATURES" "${JOPTS[@]}" \
        "$BASE" "$POOL/$i" && c_rbd snap create --no-progress "$POOL/$i@s1"; } \
        >"$TMP/mk.log" 2>&1 || { show_log "$TMP/mk.log"; die "journaled image $i not made"; }
done
rbdl_run_prog "edgecases-librbd (journaled)" "$TMP/edge.ref" "$TMO" \
    "$BIN/edgecases-librbd" "$POOL" "$P-eref"
rbdl_run_prog "edgecases-lite (journaled)" "$TMP/edge.lite" "$TMO" \
    "$BIN/edgecases-lite" "$POOL" "$P-elite"
if [[ ! -s $TMP/edge.ref ]]; then
    fail "edgecases: the same answers as librbd's on a journaled image" "no reference output"
elif diff "$TMP/edge.ref" "$TMP/edge.lite" >"$TMP/edge.diff"; then
    pass "edgecases: the same answers as librbd's on a journaled image ($(wc -l <"$TMP/edge.ref") cases)"
else
    fail "edgecases: the same answers as librbd's on a journaled image" \
        "$(grep -c '^<' "$TMP/edge.diff") lines differ"
    head -n 20 "$TMP/edge.diff" | sed 's/^/    | /'
fi
if grep -q "librbdlite:.*journal" "$TMP/edge.lite.err"; then
    fail "edgecases: no refusal diagnostic" "$(grep -m1 librbdlite: "$TMP/edge.lite.err")"
else
    pass "edgecases: no refusal diagnostic"
fi
same_journal edgecases "$P-eref" "$P-elite"
if timeout -k 10 "$TMO" "$BIN/edgecases-lite" --lite-only "$POOL" "$P-emis" \
    >"$TMP/mis.out" 2>"$TMP/mis.err"; then
    pass "misuse: librbdlite survives and answers on a journaled image ($(tail -n 1 "$TMP/mis.out"))"
else
    fail "misuse: librbdlite survives and answers on a journaled image" \
        "$(rbdl_rc_text $? "$TMO")"
    grep -v ' ok$' "$TMP/mis.out" | tail -n 5 | sed 's/^/    | /'
    tail -n 3 "$TMP/mis.err" | sed 's/^/    | /'
fi

# ---- rbdio -------------------------------------------------------------------

for i in "$P-wref" "$P-wlite" "$P-none"; do
    rbdl_mkimage "$i" 64M --image-feature "$FEATURES" "${JOPTS[@]}"
done
rbdl_run_prog "rbdio-librbd write (journaled)" "$TMP/w.ref" "$TMO" \
    "$BIN/rbdio-librbd" write "$POOL" "$P-wref" "$SEED" "$NOPS"
rbdl_run_prog "rbdio-lite write (journaled)" "$TMP/w.lite" "$TMO" \
    "$BIN/rbdio-lite" write "$POOL" "$P-wlite" "$SEED" "$NOPS"
for i in "$P-wref" "$P-wlite"; do
    if timeout -k 10 "$TMO" "$BIN/rbdio-librbd" verify "$POOL" "$i" "$SEED" "$NOPS" \
        >"$TMP/v.log" 2>&1; then
        pass "rbdio: librbd verifies $i"
    else
        fail "rbdio: librbd verifies $i" "$(tail -n 1 "$TMP/v.log")"
    fi
done
same_journal rbdio "$P-wref" "$P-wlite"

# ---- qemu ----------------------------------------------------------------------

rbdl_mkimage "$P-q" 64M --image-feature "$FEATURES" "${JOPTS[@]}"
if timeout -k 5 "$TMO" "${WRAPPED[@]}" qemu-io -f raw \
    -c 'aio_write -P 0xab 0 64k' -c 'aio_flush' -c 'read -P 0xab 0 64k' \
    -c 'write -z 64k 64k' -c 'discard 1M 1M' \
    "rbd:$POOL/$P-q:conf=$CEPH_CONF" >"$TMP/qemu.log" 2>&1 &&
    grep -q '^read 65536/65536 bytes at offset 0' "$TMP/qemu.log" &&
    ! san_filter "$TMP/qemu.log" | grep -q 'failed\|error'; then
    pass "qemu: qemu-io writes, flushes and reads back a journaled image"
else
    fail "qemu: qemu-io writes, flushes and reads back a journaled image"
    show_log "$TMP/qemu.log"
fi
want=$(head -c 65536 /dev/zero | tr '\0' '\253' | md5sum)
got=$(c_rbd export --no-progress "$POOL/$P-q" - 2>/dev/null | head -c 65536 | md5sum)
if [[ $got == "$want" ]]; then
    pass "qemu: librbd reads the data back"
else
    fail "qemu: librbd reads the data back"
fi
if events "$P-q" "$TMP/q.ev" && grep -qx 'AioWrite(0,[0-9]*)' "$TMP/q.ev" &&
    grep -qx 'AioDiscard(1048576,1048576)' "$TMP/q.ev" &&
    grep -qx 'AioFlush' "$TMP/q.ev"; then
    pass "qemu: the journal holds the writes, the flush and the discard"
else
    fail "qemu: the journal holds the writes, the flush and the discard" \
        "$(tr '\n' ' ' <"$TMP/q.ev" | head -c 300)"
fi

# ---- no system librbd ----------------------------------------------------------

sum_before=$(c_rbd export --no-progress "$POOL/$P-none" - 2>/dev/null | md5sum)
# RBDLITE_DEBUG=1: the refusal's diagnostic (not printed by default:
# librbd would print nothing).
if RBDLITE_DEBUG=1 RBDLITE_SYSTEM_LIBRBD=$TMP/no-such-librbd.so.1 timeout -k 10 "$TMO" \
    "$BIN/rbdio-lite" write "$POOL" "$P-none" "$SEED" 5 >"$TMP/none.out" 2>"$TMP/none.err"; then
    fail "none: writes to a journaled image fail without a system librbd" "the workload succeeded"
else
    pass "none: writes to a journaled image fail without a system librbd"
fi
if grep -q "^librbdlite: image $P-none is journaled.*EROFS" "$TMP/none.err"; then
    pass "none: a librbdlite: diagnostic says why"
else
    fail "none: a librbdlite: diagnostic says why" "$(tail -n 2 "$TMP/none.err")"
fi
sum_after=$(c_rbd export --no-progress "$POOL/$P-none" - 2>/dev/null | md5sum)
if [[ $sum_before == "$sum_after" ]]; then
    pass "none: the image is unchanged"
else
    fail "none: the image is unchanged"
fi
if events "$P-none" "$TMP/none.ev" && [[ ! -s $TMP/none.ev ]]; then
    pass "none: the journal is empty"
else
    fail "none: the journal is empty" "$(head -n 3 "$TMP/none.ev" "$TMP/none.ev.err")"
fi

rbdl_summary
