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
# The C calls python has no binding for (compare-and-write, write-same,
# aio writes, bad arguments, corrupted headers) are compared with librbd's
# in test-cryptapi.sh.
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
rbdl_summary
