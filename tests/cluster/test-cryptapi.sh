#!/usr/bin/env bash
# test-cryptapi.sh - the encryption calls of the C API, differentially:
# librbdlite (cloneop-lite) against the real librbd (cloneop-librbd).
# Python has no binding for most of what is here, and this script runs
# in the sanitizer builds too (Makefile.am's asan_tests).
#
# 1. One cloneop script on twin images, for each format: synchronous and
#    aio writes (whole-block ones behind a partial block's read-modify-
#    write and beside it, their buffers overwritten as soon as the call
#    returned; the partial write's bytes equal the later write's there,
#    as librbd 16.2.15 applies those two in either order),
#    compare-and-write (match, mismatch and its offset, a
#    range across a sector, ranges across the end of the data area: the
#    compare bytes past it are compared with zeros), write-same (also clipped at the end of the
#    image, with a pattern longer than what is left), write-zeroes,
#    discard, exact
#    diff, a second load; then a new handle loads and reads back.  The
#    outputs must be equal line for line.
#    Then zeros (discard, write-zeroes of whole and partial blocks, a
#    write-same of zeros) written by each library are read back by both:
#    they must be zeros through librbd too (librbd decrypts stored zero
#    bytes into noise: zeros are written encrypted).
# 2. Bad calls (options one byte short or long, unknown format or
#    algorithm, empty passphrase, wrong passphrase, wrong format, a second
#    load) on one image: each library's answers are librbd's, the image is
#    then loaded and read as before.  (NULL options: librbdlite answers
#    -EINVAL, librbd 16.2.15 crashes, so that call is made through
#    librbdlite only.)
# 3. LUKS headers corrupted on disk (the magic, both LUKS2 headers' magic
#    or JSON, one LUKS2 header, the key material, a truncated first
#    object, LUKS1 data offsets of 0 and past the image's end): the load's
#    result, the size and the first 64 KiB read are librbd's, and neither
#    library writes a byte of the header object.  Two known differences:
#    with a LUKS1 data offset of 0 the header's own zero-filled gaps
#    decrypt to zeros through librbdlite (any all-zero block does), to
#    noise through librbd, so that case is compared on the load's result
#    and the size only; with a data offset past the image's end librbd
#    16.2.15 reports a size wrapped below zero (2^64 - ...) and librbdlite
#    a size of 0, so there librbdlite is checked on its own: the load
#    succeeds, the size is 0 and nothing is written.
# 4. A LUKS1 data offset far out on a 2 TiB image with a wrong passphrase:
#    librbdlite answers -EPERM without reading up to it (librbdlite only:
#    librbd reads the whole 1 TiB).
# 5. A LUKS2 image whose size past the header is not whole blocks: its
#    size is librbd's, and the last bytes librbdlite writes read back
#    through both libraries.
# 6. A 16 MiB discard on a striped LUKS2 image (128 image ranges per
#    object): it succeeds, and librbd reads its zeros.
#
# Needs the test cluster's environment (make check, or
# tests/cluster/cluster-test.sh, sets it).  Exit status 0 when every check
# passes.
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd rados python3 md5sum
BUILDDIR=${RBDLITE_BUILDDIR:-$(cd "$HERE/../.." && pwd)}
rbdl_twins cloneop
rbdl_need_progs "$LITE" "$REF"
POOL=$RBDLITE_TEST_POOL
rbdl_workdir cryptapi
cleanup() { rbdl_rm_workdir; }
rbdl_traps

# op lite|ref IMG ARGS...: cloneop on IMG through one library
op() {
    local prog=$LITE
    [[ $1 == ref ]] && prog=$REF
    timeout -k 5 300 "$prog" "$POOL" "$2" "${@:3}" 2>&1
    echo "exit $?"
}

# same WHAT A B: files A and B are equal, and B ran clean (exit 0)
same() {
    if cmp -s "$2" "$3" && grep -qx "exit 0" "$3"; then
        pass "$1 ($(wc -l <"$3") lines)"
    else
        fail "$1" "$(diff "$3" "$2" | head -8)"
        return 1
    fi
}

# --- 1. The C calls on twins -------------------------------------------
# (Only blocks that were written are read: librbd decrypts a never-written
# block of an existing object into noise.)
CSCRIPT=(size write 0 64K 1 write 5000 700 2 aiowrite 9000 5000 3
    aiowrite 20000 100 4 wait read 0 64K
    aiowrite 36964 100 12 aiowritex 32K 16K 12 aiowritex 48K 8K 13 wait
    read 32K 32K
    expect -84 cmpwrite 8704 512 9 9 cmpwrite 600 100 1 5 read 512 1024
    expect -22 cmpwrite 500 100 1 1
    writesame 1M 64K 16 7 read 1M 64K writesame 2M 8K 4096 8 read 2M 8K
    write end-8K 8K 3 writesame end-512 1M 1M 7 read end-8K 8K
    writesame end-3000 64K 16K 9 read end-8K 8K
    write end-4K 4K 5 expect -84 cmpwrite end-100 200 5 6
    expect -84 cmpwrite end-100 200 9 6 expect -22 cmpwrite end-600 700 5 6
    read end-8K 8K
    zero 3M 8K read 3M 8K discard 8M 4M read 8M 8K
    write 12M 8K 10 discard 12M 4K read 12M 8K
    diff - 0 size 0 0
    expect -17 luksload FMT cpass)
CREAD=(read 0 64K read 512 1024 read 1M 64K read 2M 8K read 3M 8K
    read 8M 8K read 12M 8K read end-8K 8K size diff - 0 size 0 0)
for f in luks1 luks2; do
    for side in lite ref; do
        img=xt-$$-$f-$side
        rbd create --size 32M "$POOL/$img" >/dev/null 2>&1 ||
            fail "$f: create $img" "rbd create failed"
        op "$side" "$img" luksformat "$f" aes256 cpass "${CSCRIPT[@]/FMT/$f}" >"$TMP/$f-$side.1"
        op "$side" "$img" luksload "$f" cpass "${CREAD[@]}" >"$TMP/$f-$side.2"
    done
    same "$f: the C calls through librbdlite and librbd agree" "$TMP/$f-lite.1" "$TMP/$f-ref.1"
    same "$f: a new handle loads and reads the same" "$TMP/$f-lite.2" "$TMP/$f-ref.2"
    rbd rm "$POOL/xt-$$-$f-lite" >/dev/null 2>&1
    rbd rm "$POOL/xt-$$-$f-ref" >/dev/null 2>&1
done

# Zeros each library writes are read as zeros by the other: discard,
# write-zeroes (whole blocks, part of a block) and a write-same of zeros
# on data, by one library; then both load the image and read it.
ZSCRIPT=(write 0 8M 1 discard 0 4M zero 4M 8K zero 6M 3000 zerosame 7M 8K 512
    discard 5M 1M)
ZREAD=(read 0 64K read 4M 16K read 6M 4K read 7M 16K read 5M 1M)
for w in lite ref; do
    img=xz-$$-$w
    rbd create --size 32M "$POOL/$img" >/dev/null 2>&1 || fail "zeros: create $img" "rbd create failed"
    op "$w" "$img" luksformat luks2 aes128 cpass "${ZSCRIPT[@]}" >"$TMP/z-$w.w"
    grep -qx "exit 0" "$TMP/z-$w.w" || fail "zeros written by $w" "$(tail -3 "$TMP/z-$w.w")"
    for r in lite ref; do
        op "$r" "$img" luksload luks2 cpass "${ZREAD[@]}" >"$TMP/z-$w-$r"
    done
    if same "zeros written by $w: read the same by both libraries" "$TMP/z-$w-lite" "$TMP/z-$w-ref" &&
        grep -q "^read 0 64K = 65536 fnv=[0-9a-f]* zeros=65536$" "$TMP/z-$w-ref" &&
        grep -q "^read 5M 1M = 1048576 fnv=[0-9a-f]* zeros=1048576$" "$TMP/z-$w-ref" &&
        (($(sed -n 's/^read 4M 16K = 16384 fnv=[0-9a-f]* zeros=//p' "$TMP/z-$w-ref") >= 8192)); then
        pass "zeros written by $w: read as zeros through librbd"
    else
        fail "zeros written by $w: read as zeros through librbd" "$(head -8 "$TMP/z-$w-ref")"
    fi
    rbd rm "$POOL/$img" >/dev/null 2>&1
done

# --- 2. Bad calls --------------------------------------------------------
img=xb-$$
rbd create --size 32M "$POOL/$img" >/dev/null 2>&1 || fail "bad calls: create" "rbd create failed"
BAD=(expect -22 luksbad format short expect -22 luksbad format long
    expect -95 luksbad format fmt expect -22 luksbad format alg)
for side in lite ref; do
    # On an unformatted image: every format call refused, a load too.
    op "$side" "$img" "${BAD[@]}" expect -22 luksload luks2 cpass read 0 4K >"$TMP/bad0-$side"
done
same "bad format calls and a load of an unformatted image answer as librbd's" "$TMP/bad0-lite" "$TMP/bad0-ref"
op ref "$img" luksformat luks2 aes256 cpass write 0 64K 5 >/dev/null
BADL=(expect -22 luksbad load short expect -22 luksbad load long
    expect -95 luksbad load fmt expect -1 luksbad load nopass
    expect -1 luksload luks2 wrong expect -22 luksload luks1 cpass
    luksload luks2 cpass expect -17 luksload luks2 cpass
    expect -22 luksbad load short read 0 64K size)
for side in lite ref; do
    op "$side" "$img" "${BADL[@]}" >"$TMP/bad1-$side"
done
same "bad load calls answer as librbd's, then the image loads and reads" "$TMP/bad1-lite" "$TMP/bad1-ref"
out=$(op lite "$img" expect -22 luksbad load null expect -22 luksbad format null \
    luksload luks2 cpass read 0 64K)
[[ $(tail -1 <<<"$out") == "exit 0" ]] &&
    pass "NULL options: -EINVAL from librbdlite, the image intact" ||
    fail "NULL options: -EINVAL from librbdlite, the image intact" "$out"
rbd rm "$POOL/$img" >/dev/null 2>&1

# --- 3. Corrupted headers ------------------------------------------------
# patch FILE OFF zero:N|fill:N|trunc|HEX
patch() {
    python3 - "$@" <<'PY'
import sys
f, off, what = sys.argv[1], int(sys.argv[2], 0), sys.argv[3]
d = bytearray(open(f, 'rb').read())
if what == 'trunc':
    del d[off:]
elif what.startswith(('zero:', 'fill:')):
    n = int(what[5:])
    d[off:off + n] = (b'\0' if what[0] == 'z' else b'x') * n
else:
    b = bytes.fromhex(what)
    d[off:off + len(b)] = b
open(f, 'wb').write(d)
PY
}

# corrupt FMT NAME OFF WHAT...: FMT's image (formatted by librbd and
# written, once) with its header object patched; both libraries load and
# read it; then the header object is put back as it was.
corrupt() {
    local f=$1 n=$2 img=xh-$$-$1 obj m0 side
    shift 2
    if [[ ! -e $TMP/$f.orig ]]; then
        rbd create --size 32M "$POOL/$img" >/dev/null 2>&1 || { fail "$f: create" "rbd create failed"; return; }
        op ref "$img" luksformat "$f" aes256 cpass write 0 64K 1 >/dev/null
        rbd info --format json "$POOL/$img" | python3 -c \
            'import json, sys; print(json.load(sys.stdin)["block_name_prefix"])' >"$TMP/$f.pfx"
        rados -p "$POOL" get "$(cat "$TMP/$f.pfx").0000000000000000" "$TMP/$f.orig" ||
            { fail "$f: get its header object" "rados get failed"; return; }
    fi
    obj=$(cat "$TMP/$f.pfx").0000000000000000
    cp "$TMP/$f.orig" "$TMP/obj"
    while (($#)); do patch "$TMP/obj" "$1" "$2"; shift 2; done
    rados -p "$POOL" rm "$obj" && rados -p "$POOL" put "$obj" "$TMP/obj" ||
        { fail "$f $n: put $obj" "rados put failed"; return; }
    m0=$(md5sum <"$TMP/obj")
    for side in lite ref; do
        op "$side" "$img" expect "${EXPECT:-0}" luksload "$f" cpass size "${READ[@]}" |
            grep -v '^cloneop:' >"$TMP/h-$side"
        [[ $(rados -p "$POOL" get "$obj" - | md5sum) == "$m0" ]] ||
            fail "$f $n: $side wrote nothing" "the header object changed"
    done
    case $n in
    payload-past-end)
        grep -qx "luksload $f cpass = 0" "$TMP/h-lite" && grep -qx "  size=0" "$TMP/h-lite" &&
            grep -qx "exit 0" "$TMP/h-lite" &&
            pass "$f $n: librbdlite loads it as an empty image, nothing written" ||
            fail "$f $n: librbdlite loads it as an empty image" "$(cat "$TMP/h-lite")"
        ;;
    *) same "$f $n: librbdlite answers as librbd, nothing written" "$TMP/h-lite" "$TMP/h-ref" ;;
    esac
}
READ=(read 0 64K)
EXPECT=0 corrupt luks2 intact
EXPECT=0 corrupt luks2 primary-magic 0 zero:6
EXPECT=0 corrupt luks2 primary-json 0x1000 fill:64
EXPECT=-22 corrupt luks2 both-magics 0 zero:6 0x4000 zero:6
EXPECT=-22 corrupt luks2 both-jsons 0x1000 fill:64 0x5000 fill:64
EXPECT=-1 corrupt luks2 keyslot 0x8000 fill:4096
EXPECT=-1 corrupt luks2 truncated 8192 trunc
EXPECT=0 corrupt luks1 intact
EXPECT=-22 corrupt luks1 magic 0 zero:6
EXPECT=-1 corrupt luks1 keyslot 4096 fill:4096
EXPECT=-1 corrupt luks1 truncated 1000 trunc
READ=()
EXPECT=0 corrupt luks1 payload-zero 104 00000000
EXPECT=0 corrupt luks1 payload-past-end 104 7fffffff
rbd rm "$POOL/xh-$$-luks1" >/dev/null 2>&1
rbd rm "$POOL/xh-$$-luks2" >/dev/null 2>&1

# 4. A LUKS1 data offset far out (2^31 - 1 sectors, about 1 TiB) on a
# 2 TiB image, loaded with a wrong passphrase: librbd 16.2.15 looks for the
# keyslot up to the data offset (a 1 TiB read), librbdlite no further than
# libcryptsetup's keyslots reach (136 MiB), so it answers -EPERM, as for
# any wrong passphrase, not -ENOMEM; librbdlite only.
far=xf-$$
if rbd create --size 2T "$POOL/$far" >/dev/null 2>&1; then
    op ref "$far" luksformat luks1 aes256 cpass >"$TMP/far-fmt"
    grep -qx "exit 0" "$TMP/far-fmt" || fail "far payload: librbd formats" "$(cat "$TMP/far-fmt")"
    obj=$(rbd info --format json "$POOL/$far" | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["block_name_prefix"])').0000000000000000
    if rados -p "$POOL" get "$obj" "$TMP/far-obj"; then
        patch "$TMP/far-obj" 104 7fffffff
        rados -p "$POOL" put "$obj" "$TMP/far-obj" || fail "far payload: put $obj" "rados put failed"
        op lite "$far" expect -1 luksload luks1 wrongpass >"$TMP/far-lite"
        grep -qx "luksload luks1 wrongpass = -1" "$TMP/far-lite" && grep -qx "exit 0" "$TMP/far-lite" &&
            pass "far payload, wrong passphrase: -EPERM without reading to the data offset" ||
            fail "far payload, wrong passphrase: -EPERM" "$(cat "$TMP/far-lite")"
        op lite "$far" luksload luks1 cpass size >"$TMP/far-ok"
        grep -qx "  size=$(( (2 << 40) - (0x7fffffff << 9) ))" "$TMP/far-ok" && grep -qx "exit 0" "$TMP/far-ok" &&
            pass "far payload, right passphrase: loads, size 2 TiB less the offset" ||
            fail "far payload, right passphrase: loads" "$(cat "$TMP/far-ok")"
    else
        fail "far payload: get $obj" "rados get failed"
    fi
    rbd rm "$POOL/$far" >/dev/null 2>&1
else
    fail "far payload: create" "rbd create --size 2T failed"
fi

# 5. A LUKS2 image (4 KiB blocks) whose size is not a whole number of
# blocks past the header (32 MiB + 1 KiB): librbdlite shows the data area
# as librbd does (16 MiB + 1 KiB, the last block partial), and the last
# bytes it writes there read back through a new handle of each library.
odd=xo-$$
if rbd create --size 33555456B "$POOL/$odd" >/dev/null 2>&1; then
    op lite "$odd" luksformat luks2 aes256 cpass size write end-1000 1000 8 \
        cmpwrite end-512 512 8 8 >"$TMP/odd-1"
    op lite "$odd" luksload luks2 cpass cmpwrite end-512 512 8 8 >"$TMP/odd-2"
    op ref "$odd" luksload luks2 cpass size cmpwrite end-512 512 8 8 >"$TMP/odd-3"
    grep -qx "  size=16778240" "$TMP/odd-1" && grep -qx "  size=16778240" "$TMP/odd-3" &&
        [[ $(grep -cx "  = 512" "$TMP/odd-1" "$TMP/odd-2" "$TMP/odd-3" | grep -c ':1$') == 3 ]] &&
        [[ $(grep -cx "exit 0" "$TMP/odd-1" "$TMP/odd-2" "$TMP/odd-3" | grep -c ':1$') == 3 ]] &&
        pass "odd size: librbd's size, the last bytes read back by both" ||
        fail "odd size: librbd's size, the last bytes read back by both" "$(cat "$TMP/odd-1" "$TMP/odd-2" "$TMP/odd-3")"
    rbd rm "$POOL/$odd" >/dev/null 2>&1
else
    fail "odd size: create" "rbd create --size 33555456B failed"
fi

# 6. A striped LUKS2 image (stripe unit 32 KiB, count 4): a 16 MiB discard
# maps each 4 MiB object extent to 128 image ranges; it succeeds through
# librbdlite, and librbd reads its zeros back (librbdlite writes them
# encrypted).
str=xs-$$
if rbd create --size 64M --stripe-unit 32K --stripe-count 4 "$POOL/$str" >/dev/null 2>&1; then
    op lite "$str" luksformat luks2 aes256 cpass write 20M 64K 3 discard 16M 16M >"$TMP/str-1"
    op ref "$str" luksload luks2 cpass read 20M 64K >"$TMP/str-2"
    grep -qx "discard 16M 16M = 16777216" "$TMP/str-1" && grep -qx "exit 0" "$TMP/str-1" &&
        grep -q "^read 20M 64K = 65536 .* zeros=65536$" "$TMP/str-2" && grep -qx "exit 0" "$TMP/str-2" &&
        pass "striped discard of 16 MiB: done, zeros through librbd" ||
        fail "striped discard of 16 MiB: done, zeros through librbd" "$(cat "$TMP/str-1" "$TMP/str-2")"
    rbd rm "$POOL/$str" >/dev/null 2>&1
else
    fail "striped: create" "rbd create --stripe-unit 32K --stripe-count 4 failed"
fi
rbdl_summary
