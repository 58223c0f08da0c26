#!/usr/bin/env bash
# test-qemu.sh - Debian's unmodified qemu-io and qemu-img, run under the
# rbdlite-run wrapper (librbdlite preloaded), against images made by the
# rbd CLI: a plain (layering) image and one with the default features
# (exclusive-lock, object-map, fast-diff, deep-flatten).  Data written by
# qemu is checked inside qemu-io (-P patterns), then read back by the real
# librbd (rbd export) and compared byte for byte with a local mirror file.
#
# Sections:
#   base     qemu-io read/write/aio_read/aio_write/writev/readv/discard/
#            write -z/flush with pattern checks; qemu-img info (identical to
#            librbd's), convert to raw and from raw (-n, onto an existing
#            image), compare, map --output=json
#   pending  what needs rbd_create, rbd_snap_create/remove/rollback,
#            rbd_resize and block status through rbd_diff_iterate2:
#            qemu-img create, snapshot -c/-l/-a/-d, resize, convert to a
#            new image, map identical to librbd's on a fast-diff image
#   encryption
#            qemu-img create -o encrypt.format=luks|luks2 (rbd_encryption_
#            format) under the wrapper and on the real librbd; qemu-io on
#            an rbd drive with encrypt.format (rbd_encryption_load), a
#            secret object on the command line: each library writes
#            (aligned and unaligned) to both images, and both libraries
#            read every written range back with -P pattern checks
# RBDLITE_QEMU_SECTIONS selects sections (default: "base pending
# encryption").
# RBDLITE_QEMU_REFERENCE=1 runs everything without the wrapper, i.e. on the
# real librbd: every check must pass there too, which validates the
# expectations themselves.
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL (a running
# cluster), qemu-io, qemu-img (qemu-utils) with block-rbd.so
# (qemu-block-extra), rbd, python3, cmp.  The library is
# "${RBDLITE_BUILDDIR}/lib/.libs/librbdlite.so" or $RBDLITE_LIB, preloaded
# by "${RBDLITE_BUILDDIR}/lib/tools/rbdlite-run".
#
# Prints one line per check and "N passed, M failed"; exits non-zero if
# anything failed.
#
# Sanitizer builds (RBDLITE_SAN): qemu cannot run under ThreadSanitizer (its
# coroutines switch stacks with siglongjmp), and under AddressSanitizer a
# qemu tool that loads the C++ Ceph libraries only through dlopen (the
# LD_LIBRARY_PATH mode) may hang at exit in a library destructor; such
# runs fail by timeout.  Use a plain or ASan build with the wrapper.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env qemu-io qemu-img rbd python3 cmp timeout

# WRAPPER, WRAPPED, and SANRT: whatever preload-env.sh puts before the
# library (a sanitizer runtime) goes into LD_PRELOAD; the wrapper appends
# the library itself.  Sanitizer warnings about qemu's coroutines are filtered out of
# compared output by san_filter.
rbdl_qemu_sanrt
REFERENCE=${RBDLITE_QEMU_REFERENCE:-0}
read -r -a SECTIONS <<<"${RBDLITE_QEMU_SECTIONS:-base pending encryption}"

TMO=120
# shellcheck disable=SC2034  # read by c_rbd (testlib.sh)
RBDL_CLI_TMO=$TMO
MiB=$((1024 * 1024))
SIZE=$((64 * MiB))
rbdl_workdir qemu
IMAGES=()
declare -A SEC_PASS=() SEC_FAIL=()
SECTION=setup

cleanup() {
    rbdl_remove_images 0 "$POOL/" # newest first: a clone before its parent
    rbdl_rm_workdir
}
rbdl_traps

pass() {
    PASS=$((PASS + 1))
    SEC_PASS[$SECTION]=$((${SEC_PASS[$SECTION]:-0} + 1))
    printf 'PASS [%s] %s\n' "$SECTION" "$1"
}
fail() {
    FAIL=$((FAIL + 1))
    SEC_FAIL[$SECTION]=$((${SEC_FAIL[$SECTION]:-0} + 1))
    printf 'FAIL [%s] %s: %s\n' "$SECTION" "$1" "$2"
}

# q LOG CMD...: run a qemu tool under the wrapper (on the real librbd with
# RBDLITE_QEMU_REFERENCE=1), output to LOG.  Returns the tool's status;
# a sanitizer report counts as failure.
q() {
    local log=$1 rc
    shift
    if ((REFERENCE)); then
        timeout -k 5 "$TMO" env -u LD_PRELOAD "$@" >"$log" 2>&1
    else
        timeout -k 5 "$TMO" "${WRAPPED[@]}" "$@" >"$log" 2>&1
    fi
    rc=$?
    if ((rc == 0)) && rbdl_san_report "$log"; then
        echo "sanitizer report" >>"$log"
        rc=1
    fi
    return $rc
}
# real LOG CMD...: the same tool on the real librbd, always.
real() {
    local log=$1
    shift
    timeout -k 5 "$TMO" env -u LD_PRELOAD "$@" >"$log" 2>&1
}
# check NAME LOG CMD...: q, then PASS/FAIL with the log's tail.
check() {
    local name=$1 log=$2
    shift 2
    if q "$log" "$@"; then
        pass "$name"
    else
        fail "$name" "exit $? from: ${*:1:3} ..."
        show_log "$log"
        return 1
    fi
}

url() { echo "rbd:$POOL/$1:conf=$CEPH_CONF:id=admin"; }

UNIQ="qemu-$$-$RANDOM"
mkimage() { # mkimage NAME [rbd create options]: an image of SIZE bytes
    local name=$1
    shift
    rbdl_mkimage "$name" "${SIZE}B" "$@"
}
# export_cmp NAME IMG[@SNAP] FILE: the real librbd reads the image (rbd
# export) and it must equal FILE.
export_cmp() {
    local name=$1 spec=$2 file=$3 out=$TMP/export.$RANDOM
    if ! c_rbd export --no-progress "$POOL/$spec" "$out" >"$out.log" 2>&1; then
        fail "$name" "rbd export $POOL/$spec failed"
        show_log "$out.log"
        return 1
    fi
    if cmp "$out" "$file" >"$out.cmp" 2>&1; then
        pass "$name"
    else
        fail "$name" "librbd reads different data: $(head -n 1 "$out.cmp")"
    fi
    rm -f -- "$out"
}
# A local file holding what an image should contain.
mirror() { # mirror FILE OP OFF LEN [PATTERN]: OP write (pattern) or zero
    python3 - "$@" <<'EOF'
import os, sys
path, op, off, ln = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pat = int(sys.argv[5], 0) if op == "write" else 0
with open(path, "r+b") as f:
    f.seek(off)
    f.write(bytes([pat]) * ln)
EOF
}
want() { # want SECTION: is SECTION selected?
    local s
    for s in "${SECTIONS[@]}"; do [[ $s == "$1" ]] && return 0; done
    return 1
}

K=1024
M=$MiB
# The qemu-io workload: one spec, turned into qemu-io commands and into the
# same changes to the mirror file.  Object size is 4 MiB.
#   w OFF LEN PAT     write -P          a OFF LEN PAT    aio_write -P
#   v OFF PAT L1 L2.. writev -P         d OFF LEN        discard
#   z OFF LEN         write -z
SPEC=(
    "w 0 $M 0xa1"
    "w $((4 * M - 4 * K)) $((8 * K)) 0xa2"            # across an object boundary
    "a $((8 * M)) $((256 * K)) 0xa3"
    "a $((9 * M)) $((64 * K)) 0xa4"
    "v $((12 * M)) 0xa5 4096 61440 512"
    "w $((16 * M)) $((4 * M)) 0xa6"
    "d $((16 * M)) $((4 * M))"                        # a whole object
    "w $((20 * M)) $M 0xa7"
    "d $((20 * M + 64 * K)) $((128 * K))"             # 64 KiB-aligned, inside an object
    "w $((24 * M)) $((512 * K)) 0xa8"
    "z $((24 * M + 64 * K + 512)) $((100 * K))"       # unaligned write_zeroes
    "w $((28 * M)) $((4 * M)) 0xa9"
    "z $((28 * M)) $((4 * M))"                        # a whole object
    "w $((60 * M)) $((4 * M)) 0xaa"                   # the last object
)
# Pattern reads of the result: r OFF LEN PAT (read -P), ar (aio_read -P),
# rv OFF PAT L1 L2.. (readv -P).
CHECKS=(
    "r 0 $M 0xa1"
    "r $((4 * M - 4 * K)) $((8 * K)) 0xa2"
    "ar $((8 * M)) $((256 * K)) 0xa3"
    "ar $((9 * M)) $((64 * K)) 0xa4"
    "rv $((12 * M)) 0xa5 4096 61440 512"
    "r $((16 * M)) $((4 * M)) 0"
    "r $((20 * M)) $((64 * K)) 0xa7"
    "r $((20 * M + 64 * K)) $((128 * K)) 0"
    "r $((20 * M + 192 * K)) $((M - 192 * K)) 0xa7"
    "r $((24 * M)) $((64 * K + 512)) 0xa8"
    "r $((24 * M + 64 * K + 512)) $((100 * K)) 0"
    "r $((24 * M + 164 * K + 512)) $((512 * K - 164 * K - 512)) 0xa8"
    "r $((28 * M)) $((4 * M)) 0"
    "r $((40 * M)) $((4 * M)) 0"                      # never written
    "r $((60 * M)) $((4 * M)) 0xaa"
)
spec_cmds() { # the qemu-io -c arguments for SPEC
    local s f
    for s in "${SPEC[@]}"; do
        read -r -a f <<<"$s"
        case ${f[0]} in
        w) printf '%s\n' -c "write -P ${f[3]} ${f[1]} ${f[2]}" ;;
        a) printf '%s\n' -c "aio_write -P ${f[3]} ${f[1]} ${f[2]}" -c aio_flush ;;
        v) printf '%s\n' -c "writev -P ${f[2]} ${f[1]} ${f[*]:3}" ;;
        d) printf '%s\n' -c "discard ${f[1]} ${f[2]}" ;;
        z) printf '%s\n' -c "write -z ${f[1]} ${f[2]}" ;;
        esac
    done
    printf '%s\n' -c flush
}
check_cmds() { # the qemu-io -c arguments for CHECKS
    local s f
    for s in "${CHECKS[@]}"; do
        read -r -a f <<<"$s"
        case ${f[0]} in
        r) printf '%s\n' -c "read -P ${f[3]} ${f[1]} ${f[2]}" ;;
        ar) printf '%s\n' -c "aio_read -P ${f[3]} ${f[1]} ${f[2]}" -c aio_flush ;;
        rv) printf '%s\n' -c "readv -P ${f[2]} ${f[1]} ${f[*]:3}" ;;
        esac
    done
}
spec_mirror() { # spec_mirror FILE: apply SPEC to FILE
    local s f off l
    truncate -s "$SIZE" "$1"
    for s in "${SPEC[@]}"; do
        read -r -a f <<<"$s"
        case ${f[0]} in
        w | a) mirror "$1" write "${f[1]}" "${f[2]}" "${f[3]}" ;;
        v)
            off=${f[1]}
            for l in "${f[@]:3}"; do
                mirror "$1" write "$off" "$l" "${f[2]}"
                off=$((off + l))
            done
            ;;
        d | z) mirror "$1" zero "${f[1]}" "${f[2]}" ;;
        esac
    done
}

mapfile -t SPEC_CMDS < <(spec_cmds)
mapfile -t CHECK_CMDS < <(check_cmds)
MIRROR=$TMP/mirror.raw
spec_mirror "$MIRROR"
# A source for convert: random data, a zero hole, a zero-filled object.
SRC=$TMP/src.raw
python3 - "$SRC" "$SIZE" <<'EOF'
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
M = 1 << 20
with open(path, "wb") as f:
    f.truncate(size)
    for off, ln in ((0, 3 * M), (6 * M + 512, 5 * M), (63 * M, M)):
        f.seek(off)
        f.write(os.urandom(ln))
    f.seek(20 * M)
    f.write(bytes(4 * M))
EOF

IMG_PLAIN=$UNIQ-plain
IMG_DEF=$UNIQ-default
mkimage "$IMG_PLAIN" --image-feature layering
mkimage "$IMG_DEF"
if ((REFERENCE)); then
    echo "reference run: qemu on the real librbd, no wrapper"
fi

# ==== base: works with what librbdlite implements today ======================

base_io() { # base_io KIND IMG
    local kind=$1 img=$2
    check "qemu-io-write-$kind" "$TMP/io-$kind.log" \
        qemu-io -f raw "${SPEC_CMDS[@]}" "${CHECK_CMDS[@]}" "$(url "$img")" &&
        check "qemu-io-reopen-read-$kind" "$TMP/io2-$kind.log" \
            qemu-io -f raw -r "${CHECK_CMDS[@]}" "$(url "$img")"
    export_cmp "librbd-reads-qemu-io-data-$kind" "$img" "$MIRROR"

    # info: exactly what qemu-img prints on the real librbd
    if q "$TMP/info-$kind.lite" qemu-img info -f raw "$(url "$img")" &&
        real "$TMP/info-$kind.real" qemu-img info -f raw "$(url "$img")"; then
        if cmp -s <(san_filter "$TMP/info-$kind.lite") "$TMP/info-$kind.real" &&
            grep -q "virtual size: 64 MiB ($SIZE bytes)" "$TMP/info-$kind.lite"; then
            pass "qemu-img-info-$kind"
        else
            fail "qemu-img-info-$kind" "differs from librbd's"
            diff "$TMP/info-$kind.real" <(san_filter "$TMP/info-$kind.lite") | head -n 10 | sed 's/^/    | /'
        fi
    else
        fail "qemu-img-info-$kind" "qemu-img info failed"
        show_log "$TMP/info-$kind.lite"
    fi

    # convert to a local raw file
    rm -f "$TMP/conv-$kind.raw"
    if check "qemu-img-convert-to-raw-$kind" "$TMP/conv-$kind.log" \
        qemu-img convert -f raw -O raw "$(url "$img")" "$TMP/conv-$kind.raw"; then
        if cmp "$TMP/conv-$kind.raw" "$MIRROR" >"$TMP/conv-$kind.cmp" 2>&1; then
            pass "convert-to-raw-matches-$kind"
        else
            fail "convert-to-raw-matches-$kind" "$(head -n 1 "$TMP/conv-$kind.cmp")"
        fi
    fi
    rm -f "$TMP/conv-$kind.raw"
    check "qemu-img-compare-mirror-$kind" "$TMP/cmpm-$kind.log" \
        qemu-img compare -f raw -F raw "$MIRROR" "$(url "$img")"
}

base_convert_from() { # base_convert_from KIND IMG: onto an existing image
    local kind=$1 img=$2
    check "qemu-img-convert-from-raw-$kind" "$TMP/convf-$kind.log" \
        qemu-img convert -n -f raw -O raw "$SRC" "$(url "$img")" &&
        export_cmp "librbd-reads-converted-$kind" "$img" "$SRC"
    check "qemu-img-compare-src-$kind" "$TMP/cmps-$kind.log" \
        qemu-img compare -f raw -F raw "$SRC" "$(url "$img")"
    # A difference must be found: qemu-img compare exits 1.
    cp "$SRC" "$TMP/src2.raw" && mirror "$TMP/src2.raw" write $((50 * M + 4096)) 1 0x5a
    q "$TMP/cmpd-$kind.log" qemu-img compare -f raw -F raw "$TMP/src2.raw" "$(url "$img")"
    local rc=$?
    if ((rc == 1)) && grep -q "Content mismatch at offset $((50 * M + 4096))" "$TMP/cmpd-$kind.log"; then
        pass "qemu-img-compare-finds-difference-$kind"
    else
        fail "qemu-img-compare-finds-difference-$kind" "exit $rc"
        show_log "$TMP/cmpd-$kind.log"
    fi
    rm -f "$TMP/src2.raw"
}

# map_check NAME IMG EXACT: qemu-img map --output=json on librbdlite must
# cover the image contiguously and never call zero what librbd's map calls
# data; with EXACT=1 it must equal librbd's map.
map_check() {
    local name=$1 img=$2 exact=$3 why
    if ! q "$TMP/map-$name.lite" qemu-img map --output=json -f raw "$(url "$img")"; then
        fail "$name" "qemu-img map failed"
        show_log "$TMP/map-$name.lite"
        return
    fi
    if ! real "$TMP/map-$name.real" qemu-img map --output=json -f raw "$(url "$img")"; then
        fail "$name" "qemu-img map on the real librbd failed"
        show_log "$TMP/map-$name.real"
        return
    fi
    if why=$(python3 - "$TMP/map-$name.lite" "$TMP/map-$name.real" "$SIZE" "$exact" 2>&1 <<'EOF'
import json, sys
lite, real = (json.load(open(p)) for p in sys.argv[1:3])
size, exact = int(sys.argv[3]), sys.argv[4] == "1"
pos = 0
for e in lite:
    if e["start"] != pos:
        sys.exit("extents not contiguous at %d" % pos)
    pos += e["length"]
if pos != size:
    sys.exit("extents cover %d bytes, not %d" % (pos, size))
if exact:
    if lite != real:
        sys.exit("differs from librbd's map: %s vs %s" % (lite, real))
    sys.exit(0)
def zero_at(m, off):
    for e in m:
        if e["start"] <= off < e["start"] + e["length"]:
            return e["zero"] and not e["data"]
for e in real:
    if e["data"]:
        for off in range(e["start"], e["start"] + e["length"], 65536):
            if zero_at(lite, off):
                sys.exit("reports zeros at %d where librbd has data" % off)
EOF
    ); then
        pass "$name"
    else
        fail "$name" "$why"
    fi
}

# The rbd_* calls of qemu's module really bind to librbdlite.
bindings_check() {
    local name=qemu-binds-rbd-to-librbdlite ld=$TMP/ld f s missing=()
    mkdir -p "$ld"
    if ! LD_DEBUG=bindings LD_DEBUG_OUTPUT=$ld/b q "$TMP/bind.log" \
        qemu-io -f raw -r -c "read -P 0 0 4k" "$(url "$IMG_PLAIN")"; then
        fail "$name" "qemu-io under LD_DEBUG failed"
        show_log "$TMP/bind.log"
        return
    fi
    f=$(grep -l "block-rbd.so \[0\] to .*symbol \`rbd_open'" "$ld"/b.* 2>/dev/null | head -n 1)
    [[ -n $f ]] || { fail "$name" "no binding of block-rbd.so's rbd_open logged"; return; }
    for s in rbd_open rbd_stat rbd_aio_readv rbd_aio_writev rbd_aio_flush rbd_aio_write_zeroes \
        rbd_aio_discard rbd_aio_release rbd_close rbd_snap_list rbd_diff_iterate2; do
        grep -qF "block-rbd.so [0] to $LIB [0]: normal symbol \`$s'" "$f" || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$name" "not bound to $LIB: ${missing[*]}"
    else
        pass "$name"
    fi
}

if want base; then
    SECTION=base
    ((REFERENCE)) || bindings_check
    # Without conf= in the name, librados finds the cluster through
    # CEPH_CONF in the environment, as any rbd client does.
    if q "$TMP/info-env.log" qemu-img info -f raw "rbd:$POOL/$IMG_PLAIN" &&
        grep -q "virtual size: 64 MiB ($SIZE bytes)" "$TMP/info-env.log"; then
        pass qemu-img-info-finds-CEPH_CONF
    else
        fail qemu-img-info-finds-CEPH_CONF "qemu-img info rbd:$POOL/$IMG_PLAIN failed"
        show_log "$TMP/info-env.log"
    fi
    base_io plain "$IMG_PLAIN"
    base_io default "$IMG_DEF"
    # Layering only: no fast-diff, so both libraries report all data.
    map_check map-plain-equals-librbd "$IMG_PLAIN" 1
    map_check map-default-consistent "$IMG_DEF" 0
    base_convert_from plain "$IMG_PLAIN"
    base_convert_from default "$IMG_DEF"
fi

# ==== pending: rbd_create, snapshots, resize, diff_iterate2 =================

if want pending; then
    SECTION=pending

    # Block status through rbd_diff_iterate2 on a fast-diff image (after
    # base, it holds SRC): the same map as librbd's.
    if want base; then
        map_check map-default-equals-librbd "$IMG_DEF" 1
    fi

    # qemu-img create: rbd_create, default object size; reads as zeros.
    new=$UNIQ-created
    IMAGES+=("$new")
    if check qemu-img-create "$TMP/create.log" qemu-img create -f raw "$(url "$new")" 32M; then
        if c_rbd info --format json "$POOL/$new" >"$TMP/new.json" 2>&1 &&
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["size"]==32<<20 and d["order"]==22 and d["format"]==2 else "size %s order %s" % (d["size"], d["order"]))' "$TMP/new.json"; then
            pass "created-image-size-and-order"
        else
            fail "created-image-size-and-order" "$(tail -n 1 "$TMP/new.json")"
        fi
        check created-image-reads-zeros "$TMP/new-read.log" \
            qemu-io -f raw -r -c "read -P 0 0 32M" "$(url "$new")"
        truncate -s 32M "$TMP/zero32.raw"
        export_cmp librbd-reads-created-zeros "$new" "$TMP/zero32.raw"
        rm -f "$TMP/zero32.raw"
    fi
    new1m=$UNIQ-created-1m
    IMAGES+=("$new1m")
    if check qemu-img-create-cluster-size "$TMP/create1m.log" \
        qemu-img create -f raw -o cluster_size=1M "$(url "$new1m")" 8M; then
        if c_rbd info --format json "$POOL/$new1m" >"$TMP/new1m.json" 2>&1 &&
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["size"]==8<<20 and d["order"]==20 else "size %s order %s" % (d["size"], d["order"]))' "$TMP/new1m.json"; then
            pass "created-image-cluster-size-1M"
        else
            fail "created-image-cluster-size-1M" "$(tail -n 1 "$TMP/new1m.json")"
        fi
    fi

    # snapshot -c / -l / -a / -d on both kinds of image
    for kind in plain default; do
        if [[ $kind == plain ]]; then img=$IMG_PLAIN; else img=$IMG_DEF; fi
        u=$(url "$img")
        check "snap-write-1-$kind" "$TMP/s1-$kind.log" qemu-io -f raw -c "write -P 0xb1 0 1M" "$u" || continue
        check "qemu-img-snapshot-create-$kind" "$TMP/sc-$kind.log" qemu-img snapshot -c s1 "$u"
        if c_rbd snap ls --format json "$POOL/$img" >"$TMP/sl-$kind.json" 2>&1 &&
            python3 -c 'import json,sys; s=[x["name"] for x in json.load(open(sys.argv[1]))]; sys.exit(0 if s==["s1"] else "snapshots: %s" % s)' "$TMP/sl-$kind.json" 2>"$TMP/sl-$kind.err"; then
            pass "librbd-sees-snapshot-$kind"
        else
            fail "librbd-sees-snapshot-$kind" "$(tail -n 1 "$TMP/sl-$kind.err" "$TMP/sl-$kind.json" 2>/dev/null | grep -v '^==>' | grep . | head -n 1)"
        fi
        check "snap-write-2-$kind" "$TMP/s2-$kind.log" qemu-io -f raw -c "write -P 0xb2 0 1M" "$u"
        if q "$TMP/sll-$kind.log" qemu-img snapshot -l "$u" &&
            grep -Eq '^[^ ]+ +s1 +64 MiB' "$TMP/sll-$kind.log"; then
            pass "qemu-img-snapshot-list-$kind"
        else
            fail "qemu-img-snapshot-list-$kind" "s1 not listed"
            show_log "$TMP/sll-$kind.log"
        fi
        # What the image held before: SRC after the base section, else zeros.
        rm -f "$TMP/snap.raw"
        if want base; then cp "$SRC" "$TMP/snap.raw"; else truncate -s "$SIZE" "$TMP/snap.raw"; fi
        mirror "$TMP/snap.raw" write 0 "$M" 0xb1
        export_cmp "librbd-reads-snapshot-$kind" "$img@s1" "$TMP/snap.raw"
        check "qemu-img-snapshot-apply-$kind" "$TMP/sa-$kind.log" qemu-img snapshot -a s1 "$u" &&
            check "rolled-back-data-$kind" "$TMP/sar-$kind.log" qemu-io -f raw -r -c "read -P 0xb1 0 1M" "$u"
        if check "qemu-img-snapshot-delete-$kind" "$TMP/sd-$kind.log" qemu-img snapshot -d s1 "$u"; then
            if [[ -z $(c_rbd snap ls "$POOL/$img" 2>&1) ]]; then
                pass "snapshot-gone-$kind"
            else
                fail "snapshot-gone-$kind" "rbd snap ls still lists: $(c_rbd snap ls "$POOL/$img" 2>&1 | tail -n +2)"
            fi
        fi
        # Leave no snapshot behind for the next steps, whatever happened.
        c_rbd snap purge --no-progress "$POOL/$img" >/dev/null 2>&1
        rm -f "$TMP/snap.raw"
    done

    # resize: grow (the new part reads as zeros), write there, shrink
    u=$(url "$IMG_PLAIN")
    if check qemu-img-resize-grow "$TMP/rg.log" qemu-img resize -f raw "$u" 96M; then
        [[ $(c_rbd info --format json "$POOL/$IMG_PLAIN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])') == $((96 * M)) ]] &&
            pass "librbd-sees-grown-size" || fail "librbd-sees-grown-size" "size is not 96 MiB"
        check grown-part-reads-zeros "$TMP/rgz.log" qemu-io -f raw \
            -c "read -P 0 64M 32M" -c "write -P 0xc1 90M 1M" -c "read -P 0xc1 90M 1M" "$u"
    fi
    if check qemu-img-resize-shrink "$TMP/rs.log" qemu-img resize -f raw --shrink "$u" 80M; then
        [[ $(c_rbd info --format json "$POOL/$IMG_PLAIN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])') == $((80 * M)) ]] &&
            pass "librbd-sees-shrunk-size" || fail "librbd-sees-shrunk-size" "size is not 80 MiB"
        if q "$TMP/rsi.log" qemu-img info -f raw "$u" && grep -q "virtual size: 80 MiB" "$TMP/rsi.log"; then
            pass "qemu-img-info-after-shrink"
        else
            fail "qemu-img-info-after-shrink" "size not 80 MiB"
            show_log "$TMP/rsi.log"
        fi
    fi

    # convert to a new image: qemu-img creates it (rbd_create)
    conv=$UNIQ-converted
    IMAGES+=("$conv")
    check qemu-img-convert-to-new-image "$TMP/cn.log" \
        qemu-img convert -f raw -O raw "$SRC" "$(url "$conv")" &&
        export_cmp librbd-reads-new-converted-image "$conv" "$SRC"

    # A clone (v2, default features) of the fast-diff image: qemu reads
    # through to the parent, its block status (rbd_diff_iterate2 with
    # include_parent) equals librbd's, so qemu-img convert copies every
    # parent-backed byte; a write copies the object up.
    cl=$UNIQ-clone
    if c_rbd snap create --no-progress "$POOL/$IMG_DEF@cs" >"$TMP/cs.log" 2>&1 &&
        c_rbd clone --rbd-default-clone-format 2 "$POOL/$IMG_DEF@cs" "$POOL/$cl" \
            >>"$TMP/cs.log" 2>&1 &&
        c_rbd export --no-progress "$POOL/$IMG_DEF@cs" "$TMP/cs.raw" >>"$TMP/cs.log" 2>&1; then
        IMAGES+=("$cl")
        map_check map-clone-equals-librbd "$cl" 1
        rm -f "$TMP/clconv.raw"
        if check qemu-img-convert-from-clone "$TMP/clconv.log" \
            qemu-img convert -f raw -O raw "$(url "$cl")" "$TMP/clconv.raw" &&
            cmp "$TMP/clconv.raw" "$TMP/cs.raw" >"$TMP/clconv.cmp" 2>&1; then
            pass "clone-converted-equals-parent-snapshot"
        else
            fail "clone-converted-equals-parent-snapshot" "$(head -n 1 "$TMP/clconv.cmp" 2>/dev/null)"
        fi
        mirror "$TMP/cs.raw" write $((5 * M + 4096)) 4096 0xd1
        check clone-write-copies-up "$TMP/clw.log" qemu-io -f raw \
            -c "write -P 0xd1 $((5 * M + 4096)) 4k" "$(url "$cl")" &&
            export_cmp librbd-reads-clone-after-copy-up "$cl" "$TMP/cs.raw"
        rm -f "$TMP/clconv.raw" "$TMP/cs.raw"
    else
        fail "make-clone" "snapshot, clone or export failed"
        show_log "$TMP/cs.log"
    fi
fi

if want encryption; then
    SECTION=encryption
    SECRET=(--object secret,id=sec0,data=qemu-luks-pass)
    # espec IMG FORMAT: the json drive of an encrypted rbd image
    espec() {
        printf 'json:{"driver":"rbd","pool":"%s","image":"%s","conf":"%s","user":"admin","encrypt":{"format":"%s","key-secret":"sec0"}}' \
            "$POOL" "$1" "$CEPH_CONF" "$2"
    }
    # Writes of each library, by a tag: 0x5a/0x5b for the wrapper's,
    # 0xa5/0xa6 for librbd's; unaligned ones cross LUKS2's 4 KiB blocks
    # and an object boundary.
    ewrites() { # ewrites LO HI
        printf '%s\n' -c "write -P $1 0 64k" -c "write -P $2 1000 3000" \
            -c "write -P $2 $((4 * M - 300)) 600" -c "write -P $1 $((9 * M)) 4k"
    }
    ereads() { # ereads LO HI: the ranges ewrites wrote, checked
        printf '%s\n' -c "read -P $1 0 1000" -c "read -P $2 1000 3000" \
            -c "read -P $1 4000 $((64 * 1024 - 4000))" \
            -c "read -P $2 $((4 * M - 300)) 600" -c "read -P $1 $((9 * M)) 4k"
    }
    for fmt in luks luks2; do
        il=$UNIQ-enc-$fmt-lite ir=$UNIQ-enc-$fmt-ref
        IMAGES+=("$il" "$ir")
        check "qemu-img-create-encrypt-$fmt" "$TMP/ec-$fmt.log" \
            qemu-img create -f raw "${SECRET[@]}" \
            -o "encrypt.format=$fmt,encrypt.key-secret=sec0" "$(url "$il")" 32M ||
            continue
        if ! real "$TMP/ecr-$fmt.log" qemu-img create -f raw "${SECRET[@]}" \
            -o "encrypt.format=$fmt,encrypt.key-secret=sec0" "$(url "$ir")" 32M; then
            fail "librbd-qemu-img-create-encrypt-$fmt" "exit status $?"
            show_log "$TMP/ecr-$fmt.log"
            continue
        fi
        for img in "$il" "$ir"; do
            side=${img##*-}
            mapfile -t w < <(ewrites 0x5a 0x5b)
            check "$fmt-$side-image: qemu-io writes under the wrapper" \
                "$TMP/ew-$fmt-$side.log" qemu-io "${SECRET[@]}" "${w[@]}" "$(espec "$img" "$fmt")" ||
                continue
            mapfile -t r < <(ereads 0x5a 0x5b)
            if real "$TMP/er-$fmt-$side.log" qemu-io "${SECRET[@]}" "${r[@]}" "$(espec "$img" "$fmt")" &&
                ! grep -q "verification failed" "$TMP/er-$fmt-$side.log"; then
                pass "$fmt-$side-image: librbd reads what the wrapper wrote"
            else
                fail "$fmt-$side-image: librbd reads what the wrapper wrote" "pattern check failed"
                show_log "$TMP/er-$fmt-$side.log"
            fi
            mapfile -t w < <(ewrites 0xa5 0xa6)
            if ! real "$TMP/ew2-$fmt-$side.log" qemu-io "${SECRET[@]}" "${w[@]}" "$(espec "$img" "$fmt")"; then
                fail "$fmt-$side-image: librbd writes" "exit status $?"
                show_log "$TMP/ew2-$fmt-$side.log"
                continue
            fi
            mapfile -t r < <(ereads 0xa5 0xa6)
            if check "$fmt-$side-image: qemu-io reads librbd's writes under the wrapper" \
                "$TMP/er2-$fmt-$side.log" qemu-io "${SECRET[@]}" "${r[@]}" "$(espec "$img" "$fmt")"; then
                if grep -q "verification failed" "$TMP/er2-$fmt-$side.log"; then
                    fail "$fmt-$side-image: patterns under the wrapper" "pattern check failed"
                    show_log "$TMP/er2-$fmt-$side.log"
                else
                    pass "$fmt-$side-image: patterns under the wrapper"
                fi
            fi
        done
        # A wrong passphrase: the open fails as with librbd.
        if q "$TMP/ebad-$fmt.log" qemu-io --object secret,id=sec0,data=wrong \
            -c "read 0 4k" "$(espec "$il" "$fmt")"; then
            fail "$fmt: a wrong passphrase is refused" "qemu-io opened the image"
        elif grep -q "Operation not permitted" "$TMP/ebad-$fmt.log"; then
            pass "$fmt: a wrong passphrase is refused (EPERM)"
        else
            fail "$fmt: a wrong passphrase is refused" "not with EPERM"
            show_log "$TMP/ebad-$fmt.log"
        fi
    done
fi

for s in "${SECTIONS[@]}"; do
    printf 'section %s: %s passed, %s failed\n' "$s" "${SEC_PASS[$s]:-0}" "${SEC_FAIL[$s]:-0}"
done
rbdl_summary
