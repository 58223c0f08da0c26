#!/usr/bin/env bash
# test-crypt.sh - LUKS images shared by librbd and librbdlite: an image
# formatted and written by one library is loaded and read back byte for
# byte by the other, both directions, for LUKS1 and LUKS2 with AES-128 and
# AES-256; then a snapshot and a clone of it, the clone loaded and read by
# the other library (its data comes from the encrypted parent).
#
# Each side is the system's python3 rbd module (tests/cluster/
# crypt_xlib.py): on the real librbd, or with librbdlite preloaded.  The
# answers of the encryption calls themselves (errors, sizes, I/O through
# the data area) are compared call by call in test-python.sh's encryption
# sections.
#
# Then the C calls python has no binding for, differentially: one cloneop
# script on twin images, through cloneop-lite and cloneop-librbd, for each
# format: synchronous and aio writes, compare-and-write (match, mismatch
# and its offset, a range across a sector), write-same, write-zeroes,
# discard, exact diff, a second load; then a new handle loads and reads
# back.  The outputs must be equal line for line.
#
# Needs the test cluster's environment (make check, or
# tests/cluster/cluster-test.sh, sets it).  Exit status 0 when every check
# passes.
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
BUILDDIR=${RBDLITE_BUILDDIR:-$(cd "$HERE/../.." && pwd)}
LIB=${RBDLITE_LIB:-$BUILDDIR/lib/.libs/librbdlite.so}
[[ -f $LIB ]] || die "library not found: $LIB"
PY=/usr/bin/python3
$PY -c 'import rbd' 2>/dev/null || die "$PY has no rbd module (python3-rbd)"
POOL=$RBDLITE_TEST_POOL
X=$HERE/crypt_xlib.py
rbdl_workdir crypt
cleanup() { rbdl_rm_workdir; }
rbdl_traps

# side LIB ARGS...: crypt_xlib.py on lite or librbd
side() {
    local who=$1
    shift
    if [[ $who == lite ]]; then
        LD_PRELOAD=$LIB timeout -k 5 300 "$PY" "$X" "$POOL" "$@"
    else
        timeout -k 5 300 "$PY" "$X" "$POOL" "$@"
    fi
}

other() { [[ $1 == lite ]] && echo librbd || echo lite; }

run=0
for combo in luks1:aes128 luks2:aes256 luks1:aes256 luks2:aes128; do
    f=${combo%:*} a=${combo#*:}
    for w in librbd lite; do
        rd=$(other "$w")
        img=xc-$$-$run-$w-$f-$a
        run=$((run + 1))
        t="$f/$a written by $w"
        if ! out=$(side "$w" write "$img" "$f" "$a" 2>&1); then
            fail "$t: format and write" "$out"
            continue
        fi
        sz=$(sed -n 's/^size //p' <<<"$out")
        for r in "$w" "$rd"; do
            out=$(side "$r" verify "$img" "$f" 2>&1)
            rc=$?
            if ((rc == 0)) && [[ $(sed -n 's/^size //p' <<<"$out") == "$sz" ]]; then
                pass "$t: read back by $r (size $sz, $(grep -c '^ok' <<<"$out") ranges)"
            else
                fail "$t: read back by $r" "$(grep -v '^ok' <<<"$out" | head -5)"
            fi
        done
        # A clone of the first combination of each format.
        if [[ $a == aes128 || $f == luks2 && $a == aes256 ]]; then
            out=$(side "$w" snapclone "$img" 2>&1) ||
                fail "$t: snapshot and clone" "$out"
            out=$(side "$rd" verifyclone "$img" "$f" 2>&1) &&
                pass "$t: its clone read by $rd" ||
                fail "$t: its clone read by $rd" "$(grep -v '^ok' <<<"$out" | head -5)"
            rbd snap unprotect "$POOL/$img@s" >/dev/null 2>&1 ||
                rbd rm "$POOL/$img-c" >/dev/null 2>&1
            rbd rm "$POOL/$img-c" >/dev/null 2>&1
            rbd snap unprotect "$POOL/$img@s" >/dev/null 2>&1
            rbd snap purge "$POOL/$img" >/dev/null 2>&1
        fi
        rbd rm "$POOL/$img" >/dev/null 2>&1
    done
done
# The C API on twins (only blocks that were written are read: librbd
# decrypts a never-written block of an existing object into noise).
rbdl_twins cloneop
rbdl_need_progs "$LITE" "$REF"
CSCRIPT=(size write 0 64K 1 write 5000 700 2 aiowrite 9000 5000 3
    aiowrite 20000 100 4 wait read 0 64K
    expect -84 cmpwrite 8704 512 9 9 cmpwrite 600 100 1 5 read 512 1024
    expect -22 cmpwrite 500 100 1 1
    writesame 1M 64K 16 7 read 1M 64K writesame 2M 8K 4096 8 read 2M 8K
    zero 3M 8K read 3M 8K discard 8M 4M read 8M 8K
    write 12M 8K 10 discard 12M 4K read 12M 8K
    diff - 0 size 0 0
    expect -17 luksload FMT cpass)
CREAD=(read 0 64K read 512 1024 read 1M 64K read 2M 8K read 3M 8K
    read 8M 8K read 12M 8K size diff - 0 size 0 0)
for f in luks1 luks2; do
    for side in lite ref; do
        img=xt-$$-$f-$side
        rbd create --size 32M "$POOL/$img" >/dev/null 2>&1 ||
            fail "$f: create $img" "rbd create failed"
        prog=$LITE
        [[ $side == ref ]] && prog=$REF
        timeout -k 5 300 "$prog" "$POOL" "$img" luksformat "$f" aes256 cpass \
            "${CSCRIPT[@]/FMT/$f}" >"$TMP/$f-$side.1" 2>&1
        echo "exit $?" >>"$TMP/$f-$side.1"
        timeout -k 5 300 "$prog" "$POOL" "$img" luksload "$f" cpass "${CREAD[@]}" \
            >"$TMP/$f-$side.2" 2>&1
        echo "exit $?" >>"$TMP/$f-$side.2"
    done
    for n in 1 2; do
        what="$f: the C calls through librbdlite and librbd agree"
        [[ $n == 2 ]] && what="$f: a new handle loads and reads the same"
        if cmp -s "$TMP/$f-lite.$n" "$TMP/$f-ref.$n" && grep -qx "exit 0" "$TMP/$f-ref.$n"; then
            pass "$what ($(wc -l <"$TMP/$f-ref.$n") lines)"
        else
            fail "$what" "$(diff "$TMP/$f-ref.$n" "$TMP/$f-lite.$n" | head -8)"
        fi
    done
    rbd rm "$POOL/xt-$$-$f-lite" >/dev/null 2>&1
    rbd rm "$POOL/xt-$$-$f-ref" >/dev/null 2>&1
done
rbdl_summary
