#!/usr/bin/env bash
# cluster-test.sh TEST [ARGS...] - run one test of `make check`: Makefile.am
# makes this script the LOG_COMPILER (programs) and SH_LOG_COMPILER (.sh).
#
# A test outside tests/cluster/ (unit tests, ABI and layering checks) runs
# as it is: no cluster, no added time limit.
#
# A cluster test (tests/cluster/check_* and tests/cluster/test-*.sh; a .sh
# is run with bash) runs within RBDLITE_TEST_TIMEOUT seconds (default 900;
# a script's line "# cluster-test: time limit SECONDS" raises it) against
#
#   - the cluster in the environment, when RBDLITE_USE_CLUSTER=1 and
#     CEPH_CONF (with RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL) are
#     exported: nothing is started or stopped;
#   - else, when RBDLITE_MAKE_PID names the make process that runs the
#     tests (Makefile.am exports it: $$PPID of the test recipes), one of
#     the clusters of that make run: its lanes.  Lane N is a cluster in
#     ${TMPDIR:-/tmp}/rbdlite-make.UID.PID.START/cluster.N and a lock,
#     lock.N; RBDLITE_TEST_LANES (default 2, at most 8) lanes, so that
#     `make -j2 check` runs two cluster tests at once, each on a cluster of
#     its own.  A test takes the first free lane (waiting until one is
#     free) and holds it while it runs.  The first test on a lane starts
#     its cluster (cluster.sh), and the first test of the run a watchdog,
#     in a session of its own, that stops every lane's cluster and removes
#     the directory as soon as that make process has exited: after the
#     last test, after failures, on Ctrl-C, and when only one test was
#     selected.  Later tests on a lane find its cluster there; one that no
#     longer answers is replaced (the test's log says so).  If a lane's
#     cluster could not be started, every later cluster test of the run
#     fails at once;
#   - else (run by hand, e.g. from the build directory:
#     ../tests/cluster/cluster-test.sh ../tests/cluster/test-compat.sh):
#     a cluster of its own (with-cluster.sh).
#
# The cluster tests on one lane take turns: they share the pools and the
# one OSD, and some change pool settings, pause the OSD or time lock
# hand-offs.  With RBDLITE_USE_CLUSTER=1 every test of the run takes lane
# 0's lock (one cluster, one test at a time).  The lock is not passed on to
# the test's processes.
#
# A test script with the line "# cluster-test: own cluster" starts and
# stops the cluster it needs itself (test-faults.sh: three OSDs): it takes
# no lane and is given none, so that it runs beside two lanes' tests (make
# -j3 check).
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
# A script whose own fixed timings need more (the fault matrix) says so on
# a line "# cluster-test: time limit SECONDS"; the larger limit applies.
if [[ $TEST == *.sh ]]; then
    own_tmo=$(sed -n 's/^# cluster-test: time limit \([1-9][0-9]*\)$/\1/p' "$TEST" | head -1)
    [[ -n $own_tmo ]] && ((own_tmo > TMO)) && TMO=$own_tmo
fi

reuse=0 own=0
[[ ${RBDLITE_USE_CLUSTER:-0} == 1 && -n ${CEPH_CONF:-} ]] && reuse=1
[[ $TEST == *.sh ]] && grep -qx '# cluster-test: own cluster' "$TEST" && own=1
if ((!reuse && !own)) && [[ -z ${RBDLITE_MAKE_PID:-} ]]; then
    exec "$HERE/with-cluster.sh" env RBDLITE_USE_CLUSTER=1 "$0" "$@"
fi

CHILD=    # the background job being waited for (cluster start, the test)
PHASE=
LOCK=     # fd of the lock of the lane this test holds
LANE=     # its number

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
# then, lane by lane, once no cluster test holds the lane's lock (or after
# 120 s), stops its cluster, and removes the directory.  It keeps none of
# its caller's file descriptors (make's jobserver, a harness' pipes) open.
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
ok=1
for l in "$dir"/lock.*; do
    [[ -e $l ]] || continue
    n=${l##*.}
    exec {lock}>>"$l"
    flock -w 120 "$lock" || echo "a cluster test still holds $l after 120 s; stopping its cluster anyway"
    if [[ -e $dir/cluster.$n ]] && ! "$cluster" stop "$dir/cluster.$n"; then
        echo "cluster.sh stop $dir/cluster.$n failed"
        ok=0
    fi
    exec {lock}>&-
done
if ((ok)); then rm -rf -- "$dir" "$dir.watchdog.log"; fi'

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

# start_cluster DIR S N: start lane N's cluster in DIR (cluster.sh
# start); on failure mark the make run's directory S so that later tests
# fail at once.
start_cluster() {
    local dir=$1 s=$2 n=$3 rc
    log "starting lane $n's cluster (of this make run's cluster tests) in $dir"
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
    echo "$NAME" >"$s/started-by.$n"
}

# take_lane S LANES: lock the first free lane of make run directory S
# (LOCK, LANE), waiting until one is free.
take_lane() {
    local s=$1 lanes=$2 n waited=0
    while :; do
        for ((n = 0; n < lanes; n++)); do
            exec {LOCK}>>"$s/lock.$n" || exit 1
            if flock -n "$LOCK"; then
                LANE=$n
                ((waited)) && log "lane $n is free"
                return 0
            fi
            exec {LOCK}>&-
        done
        ((waited)) || log "waiting for a free lane: $lanes cluster tests of this make run are running"
        waited=1
        sleep 0.5
    done
}

# shared_cluster: take a lane of this make run; unless reusing a cluster
# from the environment, make sure the lane's cluster is up and export its
# environment.
shared_cluster() {
    local start s dir f wd lanes=${RBDLITE_TEST_LANES:-2}
    if [[ ! $lanes =~ ^[1-8]$ ]]; then
        log "RBDLITE_TEST_LANES='$lanes' is not a number of lanes from 1 to 8"
        exit 99
    fi
    ((reuse)) && lanes=1
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
    take_lane "$s" "$lanes"
    if [[ $(start_time "$RBDLITE_MAKE_PID") != "$start" ]]; then
        log "the make run (pid $RBDLITE_MAKE_PID) has ended; not starting a cluster for it"
        exit 1
    fi
    # Tests on two lanes may get here at once: one watchdog per run.
    exec {wd}>>"$s/watchdog.lock" && flock "$wd" || { log "flock $s/watchdog.lock failed"; exit 1; }
    start_watchdog "$s" "$start"
    exec {wd}>&-
    ((reuse)) && return 0

    if [[ -e $s/start-failed ]]; then
        log "a cluster of this make run could not be started (see the log of $(<"$s/start-failed"))"
        exit 1
    fi
    dir=$s/cluster.$LANE
    if [[ -f $dir/env ]] && answers "$dir"; then
        log "using lane $LANE's cluster of this make run in $dir (started for $(<"$s/started-by.$LANE"))"
    else
        if [[ -f $dir/env ]]; then
            log "lane $LANE's cluster in $dir does not answer 'ceph -s'; replacing it"
            for f in "$dir"/log/mon.a.log "$dir"/log/osd.0.log; do
                [[ -s $f ]] || continue
                printf '==> %s (last 20 lines) <==\n' "$f" >&2
                tail -n 20 -- "$f" >&2
            done
        fi
        if [[ -e $dir ]]; then
            "$CLUSTER" stop "$dir" || { log "cluster.sh stop $dir failed"; exit 1; }
        fi
        start_cluster "$dir" "$s" "$LANE"
    fi
    # shellcheck source=/dev/null
    . "$dir/env"
    export RBDLITE_USE_CLUSTER=1
}

if ((own)); then
    log "running $NAME, which starts a cluster of its own (time limit ${TMO} s)"
else
    [[ -n ${RBDLITE_MAKE_PID:-} ]] && shared_cluster
    log "running $NAME against the cluster of $CEPH_CONF (time limit ${TMO} s)"
fi
PHASE="test"
T0=$SECONDS
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
log "$NAME: exit status $rc after $((SECONDS - T0)) s"
case $rc in
124) log "$NAME: timed out after $TMO s (RBDLITE_TEST_TIMEOUT)" ;;
137) log "$NAME: killed by SIGKILL (still running 10 s after the time limit's SIGTERM, or killed from outside)" ;;
77)
    log "$NAME exited with status 77 (skipped): a cluster test must not skip; counted as a failure"
    rc=1
    ;;
esac
exit "$rc"
