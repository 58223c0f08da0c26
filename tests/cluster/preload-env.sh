# shellcheck shell=bash disable=SC2034
# preload-env.sh - sourced by the cluster test scripts that run programs
# with librbdlite preloaded (test-fio-preload.sh, test-rbd-cli.sh,
# test-exclusive-lock.sh, test-dropin.sh, test-qemu.sh).  Not executable on
# its own.
#
# rbdl_preload_env CMD...
#   Checks the test cluster environment (CEPH_CONF, RBDLITE_TEST_POOL,
#   RBDLITE_TEST_DATA_POOL: missing means failure, never a skip) and that
#   each CMD exists, then sets:
#     POOL DATA_POOL BUILDDIR  from the environment / the script location
#     LIB       absolute path of librbdlite.so (RBDLITE_LIB overrides)
#     PRELOAD   what to put in LD_PRELOAD (the sanitizer runtime first
#               when RBDLITE_SAN=asan|tsan)
#     SAN_ENV   extra environment for preloaded runs (array)
#   The caller defines die() and HERE (the script's directory) first.

rbdl_preload_env() {
    local v c
    for v in CEPH_CONF RBDLITE_TEST_POOL RBDLITE_TEST_DATA_POOL; do
        [[ -n ${!v:-} ]] || die "$v is not set; run this under tests/cluster/with-cluster.sh (or tests/run-cluster-tests.sh)"
    done
    export CEPH_CONF
    for c in "$@"; do
        command -v "$c" >/dev/null || die "required command '$c' not found"
    done

    POOL=$RBDLITE_TEST_POOL
    DATA_POOL=$RBDLITE_TEST_DATA_POOL
    BUILDDIR=${RBDLITE_BUILDDIR:-$(cd -- "$HERE/../.." && pwd)}
    LIB=${RBDLITE_LIB:-$BUILDDIR/lib/.libs/librbdlite.so}
    [[ -f $LIB ]] || die "library not found: $LIB (build it, or set RBDLITE_BUILDDIR / RBDLITE_LIB)"
    [[ $LIB == */* ]] || LIB=./$LIB
    # Absolute, as fio runs in a temporary directory (it leaves verify
    # state files in its cwd).
    LIB=$(cd -- "$(dirname -- "$LIB")" && pwd)/${LIB##*/}

    PRELOAD=$LIB
    SAN_ENV=()
    case ${RBDLITE_SAN:-} in
    '' | none) ;;
    asan | tsan)
        local cc=${CC:-gcc} rt
        command -v "${cc%% *}" >/dev/null || die "RBDLITE_SAN=$RBDLITE_SAN needs a compiler to locate lib$RBDLITE_SAN.so"
        rt=$(${cc} -print-file-name="lib$RBDLITE_SAN.so")
        [[ $rt == /* && -e $rt ]] || die "cannot locate lib$RBDLITE_SAN.so (got '$rt')"
        # The sanitizer runtime must come first in the symbol lookup order.
        PRELOAD="$rt $LIB"
        if [[ $RBDLITE_SAN == asan ]]; then
            # fio and Ceph leak at exit; that is not ours to judge here.
            SAN_ENV=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
        fi
        ;;
    *) die "unknown RBDLITE_SAN='$RBDLITE_SAN' (expected asan, tsan or empty)" ;;
    esac
}
