# shellcheck shell=bash disable=SC2034
# preload-env.sh - sourced by the cluster test scripts that run programs
# with librbdlite preloaded (test-fio-preload.sh, test-rbd-cli.sh,
# test-exclusive-lock.sh, test-dropin.sh, test-qemu.sh).  Not executable on
# its own.  Sources testlib.sh (die, pass/fail, the summary, ...).
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
#
# rbdl_qemu_sanrt
#   For scripts that run qemu through lib/tools/rbdlite-run: sets WRAPPER
#   (which must be built) and SANRT, what goes into LD_PRELOAD before the
#   library (the sanitizer runtime and libstdc++, or nothing), and
#   WRAPPED, the command prefix (an array) that runs a program under the
#   wrapper with SANRT and SAN_ENV and nothing else preloaded.
#   san_filter FILE prints FILE without the sanitizer's warnings about
#   qemu's coroutines.
#
# c_rbd (the real rbd CLI), fio's verdicts and the other shared helpers
# are testlib.sh's.

# shellcheck source=tests/cluster/testlib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/testlib.sh"

rbdl_preload_env() {
    rbdl_need_cluster
    rbdl_need_cmds "$@"

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

rbdl_qemu_sanrt() {
    WRAPPER=$BUILDDIR/lib/tools/rbdlite-run
    [[ -x $WRAPPER ]] || die "wrapper not built: $WRAPPER"
    SANRT=${PRELOAD%"$LIB"}
    SANRT=${SANRT% }
    if [[ -n $SANRT ]]; then
        # The runtime's C++ interceptors need libstdc++ loaded at startup; a C
        # program (qemu) only gets it later, from dlopen'ing block-rbd.so.
        CXXRT=$(${CC:-gcc} -print-file-name=libstdc++.so.6)
        [[ $CXXRT == /* ]] || die "cannot locate libstdc++.so.6 (got '$CXXRT')"
        SANRT="$SANRT $CXXRT"
    fi
    WRAPPED=(env -u LD_PRELOAD ${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}"
        RBDLITE_RUN_LIB="$LIB" "$WRAPPER")
}

san_filter() {
    grep -v -e '^==[0-9]*==WARNING: ASan' -e '^False positive error reports may follow' \
        -e '^For details see https://github.com/google/sanitizers' -- "$1"
}
