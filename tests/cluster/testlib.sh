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
#   rbdl_traps         runs cleanup() at exit (with SIGINT/SIGTERM/SIGHUP
#                      ignored, so that a second Ctrl-C does not cut it
#                      short), and exits 130/143/129 on SIGINT/SIGTERM/
#                      SIGHUP (so that cleanup still runs).
#   rbdl_twins NAME    BIN=$BUILDDIR/tests/cluster, LITE=$BIN/NAME-lite and
#                      REF=$BIN/NAME-librbd: a program built against
#                      librbdlite and against the real librbd.
#   c_rbd ARGS...      the real rbd CLI, never with anything preloaded,
#                      within RBDL_CLI_TMO seconds (default 60).
#   rbdl_remove_image POOL/NAME DEADLINE
#                      unprotect and purge the snapshots of an image and
#                      remove it; a program that died leaves its watch for
#                      ~30 s, during which `rbd rm` refuses, so retry until
#                      SECONDS reaches DEADLINE, then warn and return 1.
#   rbdl_remove_images SECS [PREFIX]
#                      rbdl_remove_image PREFIX$i for every i in IMAGES,
#                      newest first (a clone before its parent), retrying
#                      for SECS seconds in all (0: one attempt each).
#   rbdl_images_cleanup SECS [PREFIX]
#                      for a script that has nothing else to clean up:
#                      IMAGES=() and BG=(), and rbdl_traps with a cleanup()
#                      that is rbdl_kill_bg (if BG holds pids), then
#                      rbdl_remove_images SECS PREFIX, then rbdl_rm_workdir.
#   rbdl_kill_bg       SIGTERM every pid in BG, then wait for them all.
#   rbdl_run_prog NAME OUT SECS CMD...
#                      run a test program within SECS seconds, stdout to
#                      OUT, stderr to OUT.err; a sub-test "NAME ran to
#                      completion" (exit 0), else a FAIL with the tail of
#                      its stderr and its last line of output.
#   rbdl_mkimage NAME SIZE [RBD CREATE OPTIONS...]
#                      c_rbd create $POOL/NAME (added to IMAGES), or die
#                      with the tail of its output ($TMP/create-NAME.log).
#   show_log FILE      (rbdl_show_log) the last 15 non-blank lines of a log,
#                      indented, to explain a failure; always returns 0.
#   rbdl_info IMG EXPR  a python expression over d, the image's
#                      `rbd info --format json` (real librbd), printed.
#   rbdl_expect STEP WHAT GOT WANT
#                      GOT == WANT, else a failure "$M: STEP" (M: the mode
#                      the script runs in) and status 1.
#   rbdl_omap_ok STEP IMG[@SNAP]
#                      `rbd object-map check` finds nothing wrong and
#                      `rbd info` shows no flags, else a failure and 1.
#   rbdl_rc_text RC [SECS]
#                      a failed command's exit status in words; SECS is its
#                      time limit (`timeout -k 5 SECS`: 124, 137).
#   rbdl_san_report LOG  LOG holds a sanitizer report.
#   rbdl_fio_json FILE EXPECT
#                      fio's JSON output FILE: every job has error 0, no
#                      short or dropped I/O and no total_err, and for each
#                      letter of EXPECT did some r(ead), w(rite), t(rim),
#                      s(ync) or a(ny data: read or write); else prints why
#                      and returns 1.
#   rbdl_fio_verdict RC LOG JSON EXPECT [SECS]
#                      judge a finished fio run with librbdlite possibly
#                      preloaded (exit status RC, output LOG): exit status,
#                      a failed preload of $LIB, a sanitizer report, then
#                      rbdl_fio_json; prints the reason and returns 1 on
#                      failure.
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
            "(run it through make check or tests/cluster/cluster-test.sh)"
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
    trap 'trap "" INT TERM HUP; cleanup' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

rbdl_twins() {
    BIN=$BUILDDIR/tests/cluster
    LITE=$BIN/$1-lite
    REF=$BIN/$1-librbd
}

c_rbd() { timeout -k 5 "${RBDL_CLI_TMO:-60}" env -u LD_PRELOAD rbd --client_mount_timeout 30 "$@"; }

rbdl_remove_image() {
    local s
    while :; do
        c_rbd snap purge --no-progress "$1" >/dev/null 2>&1
        c_rbd rm --no-progress "$1" >/dev/null 2>&1 && return 0
        c_rbd info "$1" >/dev/null 2>&1 || return 0
        # `rbd snap purge` leaves protected snapshots (of a parent whose
        # clones are gone by now) alone.
        while read -r s; do
            c_rbd snap unprotect "$1@$s" >/dev/null 2>&1
        done < <(c_rbd snap ls --format json "$1" 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s.get("protected") == "true":
        print(s["name"])' 2>/dev/null)
        if ((SECONDS >= $2)); then
            c_rbd snap purge --no-progress "$1" >/dev/null 2>&1
            c_rbd rm --no-progress "$1" >/dev/null 2>&1 && return 0
            echo "$PROG: could not remove image $1" >&2
            return 1
        fi
        sleep 3
    done
}

rbdl_remove_images() {
    local i deadline=$((SECONDS + $1)) rc=0 idx=("${!IMAGES[@]}")
    for ((i = ${#idx[@]} - 1; i >= 0; i--)); do
        rbdl_remove_image "${2:-}${IMAGES[idx[i]]}" "$deadline" || rc=1
    done
    return $rc
}

rbdl_images_cleanup() {
    IMAGES=()
    BG=()
    RBDL_IMAGES_SECS=$1
    RBDL_IMAGES_PREFIX=${2:-}
    # shellcheck disable=SC2317 # runs from the EXIT trap
    cleanup() {
        ((${#BG[@]} == 0)) || rbdl_kill_bg
        rbdl_remove_images "$RBDL_IMAGES_SECS" "$RBDL_IMAGES_PREFIX"
        rbdl_rm_workdir
    }
    rbdl_traps
}

rbdl_kill_bg() {
    local p
    for p in "${BG[@]}"; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    return 0
}

rbdl_run_prog() {
    local name=$1 out=$2 secs=$3 rc
    shift 3
    timeout -k 10 "$secs" "$@" >"$out" 2>"$out.err"
    rc=$?
    if ((rc == 0)); then
        pass "$name ran to completion"
    else
        fail "$name exited with status $rc$( ((rc == 124)) && echo ' (timeout)')"
        tail -n 5 "$out.err" | sed 's/^/    | stderr: /'
        tail -n 1 "$out" | sed 's/^/    | last line: /'
    fi
}

rbdl_mkimage() {
    local name=$1 size=$2
    shift 2
    IMAGES+=("$name")
    c_rbd create --size "$size" "$@" "$POOL/$name" >"$TMP/create-$name.log" 2>&1 ||
        { show_log "$TMP/create-$name.log"; die "rbd create $POOL/$name $* failed"; }
}

rbdl_info() {
    c_rbd info --format json "$POOL/$1" 2>/dev/null |
        python3 -c "import json, sys; d = json.load(sys.stdin); print($2)" 2>/dev/null
}

rbdl_expect() {
    [[ $3 == "$4" ]] && return 0
    fail "${M:+$M: }$1" "$2: got '$3', expected '$4'"
    return 1
}

rbdl_omap_ok() {
    local out flags
    out=$(c_rbd object-map check --no-progress "$POOL/$2" 2>&1)
    flags=$(rbdl_info "$2" '",".join(d.get("flags", []))')
    if [[ $out == *'marked as'* || $out == *failed* || $out == *error* || -n $flags ]]; then
        fail "${M:+$M: }$1" "$POOL/$2: object map check: ${out:-clean}; flags: ${flags:-none}"
        return 1
    fi
}

rbdl_show_log() {
    [[ -s $1 ]] && grep -v '^[[:space:]]*$' -- "$1" | tail -n 15 | sed 's/^/    | /'
    return 0
}

rbdl_rc_text() {
    local t=${2:+ after ${2}s}
    case $1 in
    124) echo "timed out: still running$t (exited on SIGTERM; a hang or a very slow cluster)" ;;
    137) echo "hung: still running$t and ignored SIGTERM for 5s (SIGKILLed)" ;;
    *) if (($1 > 128)); then echo "killed by signal $(($1 - 128))"; else echo "exit status $1"; fi ;;
    esac
}

rbdl_san_report() { grep -Eq 'Sanitizer|runtime error:' -- "$1"; }

rbdl_fio_json() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
path, expect = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        text = f.read()
    # fio may print notes (e.g. about exec_prerun) before the JSON object.
    d = json.loads(text[text.index('{'):])
except Exception as e:
    print("cannot parse fio JSON output %s: %s" % (path, e))
    sys.exit(1)
jobs = d.get("jobs") or []
if not jobs:
    print("no jobs in fio output")
    sys.exit(1)
bad = []
for i, j in enumerate(jobs):
    name = "%s[%d]" % (j.get("jobname"), i)
    if j.get("error", -1) != 0:
        bad.append("%s: error=%s" % (name, j.get("error")))
    for letter, key in (("r", "read"), ("w", "write"), ("t", "trim")):
        if letter in expect and j.get(key, {}).get("io_bytes", 0) <= 0:
            bad.append("%s: no %s bytes" % (name, key))
        if j.get(key, {}).get("short_ios", 0) or j.get(key, {}).get("drop_ios", 0):
            bad.append("%s: short/dropped %s ios" % (name, key))
    if "a" in expect and (j.get("read", {}).get("io_bytes", 0) +
                          j.get("write", {}).get("io_bytes", 0)) <= 0:
        bad.append("%s: moved no data" % name)
    if "s" in expect and j.get("sync", {}).get("total_ios", 0) <= 0:
        bad.append("%s: no fsync ops" % name)
    if j.get("total_err", 0):
        bad.append("%s: total_err=%s" % (name, j.get("total_err")))
if bad:
    print("; ".join(bad))
    sys.exit(1)
EOF
}

rbdl_fio_verdict() {
    local rc=$1 log=$2 json=$3 expect=$4 why
    if ((rc != 0)); then
        why=$(rbdl_rc_text "$rc" "${5:-}")
        [[ -s $json ]] && why+=" ($(rbdl_fio_json "$json" "$expect"))"
        echo "$why"
        return 1
    fi
    if grep -q 'cannot be preloaded' -- "$log"; then
        echo "LD_PRELOAD of ${LIB:-librbdlite} failed"
        return 1
    fi
    if rbdl_san_report "$log"; then
        echo "sanitizer report in fio output"
        return 1
    fi
    rbdl_fio_json "$json" "$expect"
}

rbdl_pass() {
    PASS=$((PASS + 1))
    printf 'PASS %s\n' "$1"
}

rbdl_fail() {
    FAIL=$((FAIL + 1))
    printf 'FAIL %s%s\n' "$1" "${2+: $2}"
}

# rbdl_await_waiting OUT PID: wait (at most 30 s, while PID lives) for
# the tool's "  waiting" line in OUT.  OUT must not exist before the tool
# was started: an earlier run's line would end the wait at once.
rbdl_await_waiting() {
    rbdl_await_answer "$2" 300 grep -q '^  waiting' "$1" 2>/dev/null
    return 0
}

# rbdl_await_answer PID TENTHS CMD...: run CMD every 0.1 s, at most
# TENTHS times, while process PID lives: 0 once CMD succeeds, 1 when PID
# died or the time ran out (the caller tells which with kill -0).
rbdl_await_answer() {
    local pid=$1 n=$2 i
    shift 2
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

pass() { rbdl_pass "$@"; }
fail() { rbdl_fail "$@"; }
show_log() { rbdl_show_log "$@"; }
