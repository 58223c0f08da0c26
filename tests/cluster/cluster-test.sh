#!/usr/bin/env bash
# cluster-test.sh TEST [ARGS...] - run one test of `make check`: Makefile.am
# makes this script the LOG_COMPILER (programs) and SH_LOG_COMPILER (.sh).
#
# A test outside tests/cluster/ (unit tests, ABI and layering checks) runs
# as it is: no cluster, no added time limit.
#
# A cluster test (tests/cluster/check_* and tests/cluster/test-*.sh; a .sh
# is run with bash) runs within RBDLITE_TEST_TIMEOUT seconds (default 900)
# against
#
#   - the cluster in the environment, when RBDLITE_USE_CLUSTER=1 and
#     CEPH_CONF (with RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL) are
#     exported: nothing is started or stopped;
#   - else, when RBDLITE_MAKE_PID names the make process that runs the
#     tests (Makefile.am exports it: $$PPID of the test recipes), the one
#     cluster of that make run.  The first cluster test starts it
#     (cluster.sh) in ${TMPDIR:-/tmp}/rbdlite-make.UID.PID.START/cluster,
#     and with it a watchdog, in a session of its own, that stops the
#     cluster and removes the directory as soon as that make process has
#     exited: after the last test, after failures, on Ctrl-C, and when only
#     one test was selected.  Later tests find the cluster there; one that
#     no longer answers is replaced (the test's log says so).  If it could
#     not be started, every later cluster test of the run fails at once;
#   - else (run by hand, e.g. from the build directory:
#     ../tests/cluster/cluster-test.sh ../tests/cluster/test-compat.sh):
#     a cluster of its own (with-cluster.sh).
#
# The cluster tests of one make run take turns (a lock in that directory),
# also under make -j: they share the pools and the one OSD, and some change
# pool settings or time lock hand-offs.  The lock is not passed on to the
# test's processes.
#
# A cluster test fails - never skips - when it has no cluster: status 77
# (automake's SKIP) from a cluster test is reported as a failure.  SIGINT,
# SIGTERM and SIGHUP are passed on to the test (which then cleans up, for
# at most 60 s), and this script dies of the same signal.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

PROG=${0##*/}
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

TEST=${1:?usage: $PROG TEST [ARGS...]}
NAME=${TEST##*/}
TDIR=$(cd -- "$(dirname -- "$TEST")" 2>/dev/null && pwd) || TDIR=
if [[ $TDIR != */tests/cluster ]]; then
    exec "$@"
fi

export RBDLITE_SRCDIR=${RBDLITE_SRCDIR:-$(cd -- "$HERE/../.." && pwd)}
export RBDLITE_BUILDDIR=${RBDLITE_BUILDDIR:-$PWD}
TMO=${RBDLITE_TEST_TIMEOUT:-900}
if [[ ! $TMO =~ ^[1-9][0-9]*$ ]]; then
    log "RBDLITE_TEST_TIMEOUT='$TMO' is not a number of seconds"
    exit 99
fi
if [[ $TEST == *.sh ]]; then CMD=(bash "$@"); else CMD=("$@"); fi

reuse=0
[[ ${RBDLITE_USE_CLUSTER:-0} == 1 && -n ${CEPH_CONF:-} ]] && reuse=1
if ((!reuse)) && [[ -z ${RBDLITE_MAKE_PID:-} ]]; then
    exec "$HERE/with-cluster.sh" env RBDLITE_USE_CLUSTER=1 "$0" "$@"
fi

CHILD=    # the background job being waited for (cluster start, the test)
PHASE=
LOCK=     # fd of the lock the cluster tests of one make run take turns by

# start_time PID: the start time of live process PID (clock ticks since
# boot, field 22 of /proc/PID/stat); fails if there is none.  Together
# with the pid it names one process, not whichever reuses its pid later.
start_time() {
    local stat f
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    read -r -a f <<<"${stat##*) }"
    [[ ${f[0]} != Z && ${f[0]} != X && -n ${f[19]:-} ]] || return 1
    echo "${f[19]}"
}
alive() { start_time "$1" >/dev/null; } # alive PID: exists, not a zombie

on_signal() {
    local sig=$1 i
    trap '' INT TERM HUP # a second Ctrl-C must not cut this short
    if [[ -n $CHILD ]]; then
        # cluster.sh start (a background job, SIGINT ignored) tears down
        # what it started on SIGTERM; `timeout` passes the signal on to
        # the test's process group.
        if [[ $PHASE == start ]]; then kill -TERM "$CHILD" 2>/dev/null; else kill "-$sig" "$CHILD" 2>/dev/null; fi
        for ((i = 0; i < 600; i++)); do
            alive "$CHILD" || break
            sleep 0.1
        done
        if alive "$CHILD"; then
            log "$NAME still running 60 s after SIG$sig; sending SIGKILL"
            # `timeout` leads a process group of its own
            kill -KILL -- "-$CHILD" 2>/dev/null || kill -KILL "$CHILD" 2>/dev/null
        fi
        wait "$CHILD" 2>/dev/null
        # What the test left running in its process group goes too.
        [[ $PHASE == test ]] && kill -KILL -- "-$CHILD" 2>/dev/null
    fi
    log "$NAME interrupted by SIG$sig"
    trap - "$sig"
    kill "-$sig" "$$"
    exit $((128 + $(kill -l "$sig")))
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

# The watchdog: waits until make process PID (started at START) is gone,
# then, once no cluster test holds the lock (or after 120 s), stops the
# cluster and removes the directory.  It keeps none of its caller's file
# descriptors (make's jobserver, a harness' pipes) open.
# shellcheck disable=SC2016 # expanded by the watchdog's shell
WATCHDOG='
set -u
dir=$1 pid=$2 start=$3 cluster=$4
for fd in /proc/"$BASHPID"/fd/*; do
    fd=${fd##*/}
    if ((fd > 2)); then exec {fd}>&-; fi
done
running() {
    local stat f
    { stat=$(<"/proc/$pid/stat"); } 2>/dev/null || return 1
    read -r -a f <<<"${stat##*) }"
    [[ ${f[0]} != Z && ${f[0]} != X && ${f[19]:-} == "$start" ]]
}
while running; do sleep 0.2; done
exec {lock}>>"$dir/lock"
flock -w 120 "$lock" || echo "a cluster test still holds $dir/lock after 120 s; stopping the cluster anyway"
if "$cluster" stop "$dir/cluster"; then
    rm -rf -- "$dir" "$dir.watchdog.log"
else
    echo "cluster.sh stop $dir/cluster failed"
fi'

# start_watchdog DIR START: unless one runs already for DIR.
start_watchdog() {
    local dir=$1 start=$2 pid
    if [[ -s $dir/watchdog.pid ]]; then
        pid=$(<"$dir/watchdog.pid")
        if alive "$pid" && tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$dir"; then
            return 0
        fi
    fi
    setsid bash -c "$WATCHDOG" rbdlite-cluster-watchdog "$dir" "$RBDLITE_MAKE_PID" \
        "$start" "$CLUSTER" </dev/null >>"$dir.watchdog.log" 2>&1 &
    echo "$!" >"$dir/watchdog.pid"
}

# answers DIR: the cluster in DIR answers `ceph -s` (twice, on a loaded
# machine).
answers() {
    "$CLUSTER" status "$1" >/dev/null 2>&1 || { sleep 2; "$CLUSTER" status "$1" >/dev/null 2>&1; }
}

# start_cluster DIR S: start a cluster in DIR (cluster.sh start); on
# failure mark the make run's directory S so that later tests fail at once.
start_cluster() {
    local dir=$1 s=$2 rc
    log "starting the cluster shared by this make run's cluster tests in $dir"
    PHASE=start
    "$CLUSTER" start "$dir" &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD=
    if ((rc != 0)); then
        echo "$NAME" >"$s/start-failed"
        log "could not start the cluster (cluster.sh start $dir: exit status $rc)"
        exit 1
    fi
    echo "$NAME" >"$s/started-by"
}

# shared_cluster: take this make run's turn lock; unless reusing a cluster
# from the environment, make sure the run's cluster is up and export its
# environment.
shared_cluster() {
    local start s dir f
    if ! start=$(start_time "$RBDLITE_MAKE_PID"); then
        log "RBDLITE_MAKE_PID=$RBDLITE_MAKE_PID: no such process (the make run that was to share a cluster)"
        exit 1
    fi
    s=${TMPDIR:-/tmp}/rbdlite-make.$(id -u).$RBDLITE_MAKE_PID.$start
    mkdir -m 700 -- "$s" 2>/dev/null || [[ -d $s ]] || { log "cannot make $s"; exit 1; }
    if [[ -L $s || ! -O $s ]]; then
        log "$s is not a directory of ours"
        exit 1
    fi
    exec {LOCK}>>"$s/lock" || exit 1
    if ! flock -n "$LOCK"; then
        log "waiting for the other cluster test of this make run to finish"
        flock "$LOCK" || { log "flock $s/lock failed"; exit 1; }
    fi
    if [[ $(start_time "$RBDLITE_MAKE_PID") != "$start" ]]; then
        log "the make run (pid $RBDLITE_MAKE_PID) has ended; not starting a cluster for it"
        exit 1
    fi
    start_watchdog "$s" "$start"
    ((reuse)) && return 0

    if [[ -e $s/start-failed ]]; then
        log "the cluster of this make run could not be started (see the log of $(<"$s/start-failed"))"
        exit 1
    fi
    dir=$s/cluster
    if [[ -f $dir/env ]] && answers "$dir"; then
        log "using the cluster of this make run in $dir (started for $(<"$s/started-by"))"
    else
        if [[ -f $dir/env ]]; then
            log "the cluster of this make run in $dir does not answer 'ceph -s'; replacing it"
            for f in "$dir"/log/mon.a.log "$dir"/log/osd.0.log; do
                [[ -s $f ]] || continue
                printf '==> %s (last 20 lines) <==\n' "$f" >&2
                tail -n 20 -- "$f" >&2
            done
        fi
        if [[ -e $dir ]]; then
            "$CLUSTER" stop "$dir" || { log "cluster.sh stop $dir failed"; exit 1; }
        fi
        start_cluster "$dir" "$s"
    fi
    # shellcheck source=/dev/null
    . "$dir/env"
    export RBDLITE_USE_CLUSTER=1
}

if [[ -n ${RBDLITE_MAKE_PID:-} ]]; then
    shared_cluster
fi

log "running $NAME against the cluster of $CEPH_CONF (time limit ${TMO} s)"
PHASE="test"
# The test's own processes must not hold the turn lock.
if [[ -n $LOCK ]]; then
    timeout -k 10 "$TMO" "${CMD[@]}" {LOCK}>&- &
else
    timeout -k 10 "$TMO" "${CMD[@]}" &
fi
CHILD=$!
wait "$CHILD"
rc=$?
# Nothing the test started may outlive it (`timeout` led its process group).
if left=$(pgrep -a -g "$CHILD") && [[ -n $left ]]; then
    log "$NAME left processes running; killing them:"
    printf '    %s\n' "$left" >&2
    kill -KILL -- "-$CHILD" 2>/dev/null
fi
CHILD=
case $rc in
124) log "$NAME: timed out after $TMO s (RBDLITE_TEST_TIMEOUT)" ;;
137) log "$NAME: killed by SIGKILL (still running 10 s after the time limit's SIGTERM, or killed from outside)" ;;
77)
    log "$NAME exited with status 77 (skipped): a cluster test must not skip; counted as a failure"
    rc=1
    ;;
esac
exit "$rc"
