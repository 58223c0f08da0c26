#!/usr/bin/env bash
# test-dropin.sh - the two ways of substituting librbdlite for librbd in an
# unmodified program, end to end on a cluster:
#
#   wrapper  rbdlite-run CMD...                  (LD_PRELOAD of librbdlite)
#   libpath  LD_LIBRARY_PATH=<librbd1 dir> CMD... (the drop-in librbd.so.1;
#                                                 the real librbd is not
#                                                 loaded at all)
#
# For each, on a plain (layering) image and on one with the default
# features (exclusive-lock, object-map, fast-diff, deep-flatten):
#   - fio --ioengine=rbd writes with verify=crc32c and reads back
#     (do_verify), under LD_DEBUG=bindings,files: every rbd_* fio imports
#     must bind to librbdlite (the drop-in), and in libpath mode the real
#     librbd must never be initialised;
#   - fio on the real librbd (no substitution) re-verifies every block;
#   - qemu-img info prints exactly what it prints on the real librbd;
#   - qemu-io writes a pattern (its rbd_* calls bound to librbdlite, checked
#     the same way) and qemu-io on the real librbd reads it back;
#   - qemu-img creates a LUKS2 (substitute) and a LUKS1 (wrapper) image,
#     qemu-io writes through encrypt.format and qemu-io on the real librbd
#     reads the patterns back.
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL (a running
# cluster), fio, qemu-img, qemu-io, rbd, python3.  Uses the build tree:
# lib/.libs/librbdlite.so (or $RBDLITE_LIB), lib/tools/rbdlite-run and
# lib/librbd1/.libs/librbd.so.1 (or $RBDLITE_DROPIN_DIR/librbd.so.1).
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
rbdl_preload_env fio qemu-img qemu-io rbd python3 timeout nm
# WRAPPER, WRAPPED; SANRT: a sanitizer runtime (preload-env.sh puts it
# before the library) must still be preloaded first in both modes.
rbdl_qemu_sanrt

DROPIN_DIR=${RBDLITE_DROPIN_DIR:-$BUILDDIR/lib/librbd1/.libs}
[[ -e $DROPIN_DIR/librbd.so.1 ]] || die "drop-in library not built: $DROPIN_DIR/librbd.so.1"
DROPIN_DIR=$(cd -- "$DROPIN_DIR" && pwd)
DROPIN=$DROPIN_DIR/librbd.so.1
# The bindings checks below trust these two files to be librbdlite.
for f in "$LIB" "$DROPIN"; do
    nm -D --defined-only "$f" 2>/dev/null | grep -q ' rbdlite_is_librbdlite$' ||
        die "$f is not librbdlite (it does not define rbdlite_is_librbdlite)"
done
TMO=${RBDLITE_FIO_TIMEOUT:-120}
MiB=$((1024 * 1024))
rbdl_workdir dropin
rbdl_images_cleanup 0 "$POOL/"

# sub MODE LOG [VAR=VALUE...] -- CMD...: run CMD (in $TMP) with librbdlite
# substituted (MODE wrapper or libpath), or on the real librbd (MODE
# librbd), with the extra environment; output to LOG.
sub() {
    local mode=$1 log=$2 rc
    shift 2
    local -a extra=()
    while [[ $1 != -- ]]; do
        extra+=("$1")
        shift
    done
    shift
    local -a pre=(env -u LD_PRELOAD -u LD_LIBRARY_PATH)
    case $mode in
    wrapper) pre+=("${extra[@]}" "${WRAPPED[@]}") ;;
    libpath)
        pre+=(${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}" "${extra[@]}"
            LD_LIBRARY_PATH="$DROPIN_DIR")
        ;;
    librbd) pre+=("${extra[@]}") ;;
    esac
    (cd -- "$TMP" && exec timeout -k 5 "$TMO" "${pre[@]}" "$@") >"$log" 2>&1
    rc=$?
    if ((rc == 0)) && rbdl_san_report "$log"; then
        echo "sanitizer report" >>"$log"
        rc=1
    fi
    return $rc
}

# target MODE: the file LD_DEBUG names as the provider of rbd_*.
target() {
    case $1 in
    wrapper) echo "$LIB" ;;
    libpath) echo "$DROPIN" ;;
    esac
}

# bound_check NAME MODE DIR OBJ SYMS...: in the LD_DEBUG files DIR/b.*,
# every SYM imported by OBJ (a path suffix) is bound to the mode's target,
# none to another librbd; in libpath mode no other librbd is initialised.
bound_check() {
    local name=$1 mode=$2 dir=$3 obj=$4 t s f missing=()
    shift 4
    t=$(target "$mode")
    f=$(grep -l "$obj \[0\] to .*symbol \`rbd_open'" "$dir"/b.* 2>/dev/null | head -n 1)
    if [[ -z $f ]]; then
        fail "$name" "no LD_DEBUG binding of $obj's rbd_open found"
        return 1
    fi
    for s in "$@"; do
        grep -qF "$obj [0] to $t [0]: normal symbol \`$s'" "$f" || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$name" "not bound to $t: ${missing[*]}"
        grep -E "$obj \[0\] to .*symbol \`rbd_" "$f" | head -n 5 | sed 's/^/    | /'
        return 1
    fi
    if grep -E "$obj \[0\] to [^ ]*librbd\.so[^ ]* \[0\]: normal symbol \`rbd_" "$f" |
        grep -vF "to $t [0]" >"$TMP/bad"; then
        fail "$name" "rbd_* bound to another librbd"
        show_log "$TMP/bad"
        return 1
    fi
    if [[ $mode == libpath ]]; then
        if grep -h 'calling init: .*librbd\.so' "$f" | grep -vF "$DROPIN_DIR/" >"$TMP/bad"; then
            fail "$name" "the real librbd was loaded as well"
            show_log "$TMP/bad"
            return 1
        fi
        if ! grep -qF "calling init: $DROPIN_DIR/librbd.so.1" "$f"; then
            fail "$name" "the drop-in $DROPIN was not loaded"
            return 1
        fi
    fi
    pass "$name"
}

FIO_IMPORTS=(rbd_open rbd_close rbd_stat rbd_flush rbd_invalidate_cache
    rbd_set_image_notification rbd_poll_io_events rbd_aio_create_completion
    rbd_aio_read rbd_aio_write rbd_aio_discard rbd_aio_flush
    rbd_aio_get_return_value rbd_aio_get_arg rbd_aio_release)
QEMU_IMPORTS=(rbd_open rbd_close rbd_stat rbd_get_size rbd_read rbd_snap_list
    rbd_snap_list_end rbd_aio_create_completion rbd_aio_readv rbd_aio_writev
    rbd_aio_discard rbd_aio_flush rbd_aio_write_zeroes rbd_aio_get_return_value
    rbd_aio_release rbd_get_features rbd_diff_iterate2 rbd_resize rbd_create)

# fio_pair MODE KIND IMG OFFSET: a verified write by librbdlite, then a
# verify_only pass by the real librbd over the same blocks.
fio_pair() {
    local mode=$1 kind=$2 img=$3 off=$4 name=fio-$1-$2 ld=$TMP/ld-fio-$1-$2 why
    local -a job=(fio --ioengine=rbd --clientname=admin --pool="$POOL" --rbdname="$img"
        --name="$name" --rw=randwrite --bsrange=4k-128k --offset="$off" --size=16M
        --iodepth=16 --verify=crc32c --output-format=json)
    mkdir -p "$ld"
    if ! sub "$mode" "$TMP/$name.log" LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$ld/b" -- \
        "${job[@]}" --output="$TMP/$name.json" --do_verify=1; then
        fail "$name-verified-write" "fio failed (exit $?)"
        show_log "$TMP/$name.log"
        return
    fi
    if why=$(rbdl_fio_json "$TMP/$name.json" a); then
        pass "$name-verified-write"
    else
        fail "$name-verified-write" "$why"
        return
    fi
    bound_check "$name-bound-to-librbdlite" "$mode" "$ld" "file fio" "${FIO_IMPORTS[@]}"
    rm -rf -- "$ld"
    if sub librbd "$TMP/$name-ref.log" -- "${job[@]}" --output="$TMP/$name-ref.json" \
        --verify_only=1 && why=$(rbdl_fio_json "$TMP/$name-ref.json" a); then
        pass "$name-librbd-verifies"
    else
        fail "$name-librbd-verifies" "${why:-fio on librbd failed}"
        show_log "$TMP/$name-ref.log"
    fi
}

url() { echo "rbd:$POOL/$1:conf=$CEPH_CONF:id=admin"; }

# qemu_pair MODE KIND IMG PATTERN OFFSET
qemu_pair() {
    local mode=$1 kind=$2 img=$3 pat=$4 off=$5 name=qemu-$1-$2 ld=$TMP/ld-qemu-$1-$2
    if sub "$mode" "$TMP/$name-info.log" -- qemu-img info -f raw "$(url "$img")" &&
        sub librbd "$TMP/$name-info.ref" -- qemu-img info -f raw "$(url "$img")" &&
        cmp -s <(san_filter "$TMP/$name-info.log") "$TMP/$name-info.ref"; then
        pass "$name-img-info-same-as-librbd"
    else
        fail "$name-img-info-same-as-librbd" "failed or differs"
        show_log "$TMP/$name-info.log"
        [[ -f $TMP/$name-info.ref ]] &&
            diff "$TMP/$name-info.ref" <(san_filter "$TMP/$name-info.log") | head -n 8 | sed 's/^/    | /'
    fi
    mkdir -p "$ld"
    if ! sub "$mode" "$TMP/$name-io.log" LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$ld/b" -- \
        qemu-io -f raw -c "write -P $pat $off 1M" -c "aio_write -P $pat $((off + MiB)) 64k" \
        -c aio_flush -c "read -P $pat $off 1M" -c flush "$(url "$img")"; then
        fail "$name-io-write" "qemu-io failed"
        show_log "$TMP/$name-io.log"
        return
    fi
    pass "$name-io-write"
    bound_check "$name-bound-to-librbdlite" "$mode" "$ld" "block-rbd.so" "${QEMU_IMPORTS[@]}"
    rm -rf -- "$ld"
    if sub librbd "$TMP/$name-io-ref.log" -- qemu-io -f raw -r \
        -c "read -P $pat $off $((MiB + 65536))" "$(url "$img")"; then
        pass "$name-librbd-reads-back"
    else
        fail "$name-librbd-reads-back" "qemu-io on librbd: pattern mismatch or failure"
        show_log "$TMP/$name-io-ref.log"
    fi
}

# qemu_enc MODE FORMAT: qemu-img creates a LUKS image (rbd_encryption_
# format), qemu-io writes through encrypt.format (rbd_encryption_load), and
# qemu-io on the real librbd reads the patterns back.
qemu_enc() {
    local mode=$1 fmt=$2 img=$UNIQ-enc-$1-$2 name=qemu-$1-encrypt-$2 spec
    local -a sec=(--object secret,id=sec0,data=dropin-pass)
    spec=$(printf 'json:{"driver":"rbd","pool":"%s","image":"%s","conf":"%s","user":"admin","encrypt":{"format":"%s","key-secret":"sec0"}}' \
        "$POOL" "$img" "$CEPH_CONF" "$fmt")
    if ! sub "$mode" "$TMP/$name-create.log" -- qemu-img create -f raw "${sec[@]}" \
        -o "encrypt.format=$fmt,encrypt.key-secret=sec0" "$(url "$img")" 32M; then
        fail "$name-create" "qemu-img failed"
        show_log "$TMP/$name-create.log"
        return
    fi
    IMAGES+=("$img")
    if sub "$mode" "$TMP/$name-io.log" -- qemu-io "${sec[@]}" -c "write -P 0x6e 0 64k" \
        -c "write -P 0x6f 1000 3000" -c "read -P 0x6f 1000 3000" "$spec" &&
        ! grep -q "verification failed" "$TMP/$name-io.log"; then
        pass "$name-io-write"
    else
        fail "$name-io-write" "qemu-io failed"
        show_log "$TMP/$name-io.log"
        return
    fi
    if sub librbd "$TMP/$name-ref.log" -- qemu-io "${sec[@]}" -c "read -P 0x6e 0 1000" \
        -c "read -P 0x6f 1000 3000" -c "read -P 0x6e 4000 61536" "$spec" &&
        ! grep -q "verification failed" "$TMP/$name-ref.log"; then
        pass "$name-librbd-reads-back"
    else
        fail "$name-librbd-reads-back" "pattern mismatch or failure"
        show_log "$TMP/$name-ref.log"
    fi
}

UNIQ="dropin-$$-$RANDOM"
for kind in plain default; do
    img=$UNIQ-$kind
    opts=()
    [[ $kind == plain ]] && opts=(--image-feature layering)
    rbdl_mkimage "$img" 64M "${opts[@]}"
done

# Each mode writes its own ranges, so the read-back checks cannot pass on
# data left by the other mode.
for mode in wrapper libpath; do
    if [[ $mode == wrapper ]]; then
        fio_off=0 pat=0x3c qoff=$((40 * MiB))
    else
        fio_off=16M pat=0x4d qoff=$((48 * MiB))
    fi
    fio_pair "$mode" plain "$UNIQ-plain" "$fio_off"
    fio_pair "$mode" default "$UNIQ-default" "$fio_off"
    qemu_pair "$mode" plain "$UNIQ-plain" "$pat" "$qoff"
    qemu_pair "$mode" default "$UNIQ-default" "$pat" "$qoff"
done
qemu_enc libpath luks2
qemu_enc wrapper luks

rbdl_summary
