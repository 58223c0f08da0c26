# shellcheck shell=bash disable=SC2034
# testlib.sh - the preamble shared by the cluster test scripts
# (tests/cluster/test-*.sh).  Sourced, not run: the script sets
# `set -uo pipefail` and then does
#
#     HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
#     . "$HERE/testlib.sh"
#
# Sourcing defines PROG (the script's name), PASS=0 and FAIL=0, and these
# functions; the script keeps its own checks and its own cleanup().
#
#   die MSG            "PROG: MSG" on stderr, then the summary with one more
#                      failure, and exit 1.  A test that cannot run fails;
#                      it never skips.
#   rbdl_need_cluster [VAR...]
#                      the test cluster's environment must be set (default:
#                      CEPH_CONF RBDLITE_TEST_POOL RBDLITE_TEST_DATA_POOL),
#                      else die.  Exports CEPH_CONF and sets POOL,
#                      DATA_POOL (when RBDLITE_TEST_DATA_POOL is set) and
#                      BUILDDIR ($RBDLITE_BUILDDIR, default two levels
#                      above this file).
#   rbdl_need_cmds CMD...    each command must be in PATH, else die.
#   rbdl_need_progs FILE...  each program must be built, else die.
#   rbdl_find_python   sets PY to a python3 that has Ceph's rados and rbd
#                      modules (a python3 earlier in PATH may lack them);
#                      returns 1, PY empty, if there is none.
#   rbdl_workdir TAG   makes a temporary directory and sets TMP (and WORK)
#                      to it; rbdl_rm_workdir removes it at the end, unless
#                      RBDLITE_KEEP_LOGS=1.
#   rbdl_traps         runs cleanup() at exit, and exits 130/143/129 on
#                      SIGINT/SIGTERM/SIGHUP (so that cleanup still runs).
#   rbdl_remove_image POOL/NAME DEADLINE
#                      purge the snapshots of and remove an image; a
#                      program that died leaves its watch for ~30 s, during
#                      which `rbd rm` refuses, so retry until SECONDS
#                      reaches DEADLINE, then warn and return 1.
#   rbdl_await_waiting OUT PID
#                      wait (up to 30 s) until the cloneop run PID, writing
#                      to OUT, prints its "  waiting" line (its waitfile
#                      command has started), or has exited.
#   pass NAME / fail NAME [WHY]
#                      one sub-test's "PASS NAME" / "FAIL NAME[: WHY]" line
#                      (rbdl_pass / rbdl_fail; a script may wrap them).
#   rbdl_summary       the final "N passed, M failed" line; returns 0 only
#                      if nothing failed.

# Sourced once (preload-env.sh sources it too): do not reset the counters.
[[ -z ${RBDL_LIBDIR:-} ]] || return 0
PROG=${0##*/}
RBDL_LIBDIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
PASS=0
FAIL=0
TMP=
WORK=

rbdl_summary() {
    echo "$PASS passed, $FAIL failed"
    ((FAIL == 0))
}

die() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    FAIL=$((FAIL + 1))
    rbdl_summary
    exit 1
}

rbdl_need_cluster() {
    local v
    (($#)) || set -- CEPH_CONF RBDLITE_TEST_POOL RBDLITE_TEST_DATA_POOL
    for v in "$@"; do
        [[ -n ${!v:-} ]] || die "$v is not set: this test needs a running cluster" \
            "(run it through tests/run-cluster-tests.sh or tests/cluster/with-cluster.sh)"
    done
    export CEPH_CONF
    POOL=$RBDLITE_TEST_POOL
    DATA_POOL=${RBDLITE_TEST_DATA_POOL:-}
    BUILDDIR=${RBDLITE_BUILDDIR:-$(cd -- "$RBDL_LIBDIR/../.." && pwd)}
}

rbdl_need_cmds() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || die "required command '$c' not found"
    done
}

rbdl_need_progs() {
    local b
    for b in "$@"; do
        [[ -x $b ]] || die "$b not found (build it with 'make check', or set RBDLITE_BUILDDIR)"
    done
}

rbdl_find_python() {
    local p
    PY=
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import rados, rbd' 2>/dev/null; then
            PY=$p
            return 0
        fi
    done
    return 1
}

rbdl_workdir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/rbdlite-$1.XXXXXX") || die "mktemp failed"
    WORK=$TMP
}

rbdl_rm_workdir() {
    [[ -n $TMP ]] || return 0
    if [[ ${RBDLITE_KEEP_LOGS:-0} == 1 ]]; then
        printf '%s: logs kept in %s\n' "$PROG" "$TMP" >&2
    else
        rm -rf -- "$TMP"
    fi
}

rbdl_traps() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

rbdl_remove_image() {
    while :; do
        rbd snap purge --no-progress "$1" >/dev/null 2>&1
        rbd rm --no-progress "$1" >/dev/null 2>&1 && return 0
        rbd info "$1" >/dev/null 2>&1 || return 0
        if ((SECONDS >= $2)); then
            echo "$PROG: could not remove image $1" >&2
            return 1
        fi
        sleep 3
    done
}

rbdl_pass() {
    PASS=$((PASS + 1))
    printf 'PASS %s\n' "$1"
}

rbdl_fail() {
    FAIL=$((FAIL + 1))
    printf 'FAIL %s%s\n' "$1" "${2+: $2}"
}

rbdl_await_waiting() {
    local _
    for _ in $(seq 300); do
        grep -q '^  waiting' "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 0
        sleep 0.1
    done
}

pass() { rbdl_pass "$@"; }
fail() { rbdl_fail "$@"; }
