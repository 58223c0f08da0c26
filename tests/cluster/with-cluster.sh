#!/usr/bin/env bash
# with-cluster.sh CMD [ARGS...]
#
# Start a throwaway Ceph cluster (tests/cluster/cluster.sh) in a fresh
# temporary directory under ${TMPDIR:-/tmp}, export its environment
# (CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL, RBDLITE_CLUSTER_DIR),
# run CMD, and always stop the cluster and remove the directory afterwards:
# on normal exit, on failure, and on SIGINT/SIGTERM/SIGHUP.  Exits with CMD's
# status (or re-raises the signal that interrupted it).
#
# The daemons run in their own session, so a Ctrl-C aimed at the test's
# process group does not reach them; this script stops them.  Should this
# script itself be SIGKILLed, a small watchdog (also in its own session)
# notices within a second and stops the cluster.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

PROG=${0##*/}
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }

if (($# == 0)); then
    echo "usage: $PROG CMD [ARGS...]" >&2
    exit 2
fi
if ! command -v -- "$1" >/dev/null; then
    log "$1: command not found"
    exit 127
fi

DIR=
CHILD=       # the process we are waiting for (cluster start, then CMD)
WATCHDOG=
CLEANED=0
PHASE=start

alive() { # alive PID: exists and is not a zombie
    local state
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

# descendants PID: the pids of PID's children, grandchildren, ...
descendants() {
    local c
    for c in $(pgrep -P "$1"); do
        echo "$c"
        descendants "$c"
    done
}

# stop_child SIG: pass SIG on to the child and everything it started, give
# the child 10 s to exit, then SIGKILL what is left of that process tree.
stop_child() {
    local sig=$1 i tree
    [[ -n $CHILD ]] || return 0
    mapfile -t tree < <(echo "$CHILD"; descendants "$CHILD")
    kill "-$sig" "${tree[@]}" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        alive "$CHILD" || break
        sleep 0.05
    done
    if alive "$CHILD"; then
        log "pid $CHILD still running 10 s after SIG$sig; sending SIGKILL"
    fi
    for i in "${tree[@]}"; do
        if alive "$i"; then kill -KILL "$i" 2>/dev/null || true; fi
    done
    wait "$CHILD" 2>/dev/null
    CHILD=
}

cleanup() {
    ((CLEANED)) && return 0
    CLEANED=1
    trap '' INT TERM HUP # finish cleaning up even if signalled again
    if [[ -n $WATCHDOG ]]; then
        local wd
        mapfile -t wd < <(echo "$WATCHDOG"; descendants "$WATCHDOG")
        kill "${wd[@]}" 2>/dev/null || true
        wait "$WATCHDOG" 2>/dev/null
    fi
    if [[ -n $DIR ]]; then
        "$CLUSTER" stop "$DIR" || log "warning: '$CLUSTER stop $DIR' failed"
    fi
}

on_signal() {
    local sig=$1
    trap '' INT TERM HUP # a second Ctrl-C must not cut the cleanup short
    # The cluster start runs with SIGINT ignored (a background job); it
    # tears down what it started on SIGTERM.
    if [[ $PHASE == start ]]; then stop_child TERM; else stop_child "$sig"; fi
    cleanup
    # Die of the same signal, so the caller (a shell, make) sees it.
    trap - "$sig" EXIT
    kill "-$sig" "$$"
    exit $((128 + $(kill -l "$sig")))
}

trap cleanup EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

DIR=$(mktemp -d "${TMPDIR:-/tmp}/rbdlite-cluster.XXXXXX") || exit 1

# Watchdog: if this script vanishes without running its traps (SIGKILL),
# stop the cluster.  setsid keeps it out of our process group and session.
# shellcheck disable=SC2016 # $1.. expand in the inner shell
setsid bash -c '
    for fd in /proc/"$BASHPID"/fd/*; do     # keep none of the caller pipes open
        fd=${fd##*/}
        if ((fd > 2)); then exec {fd}>&-; fi
    done
    while s=$(sed -n "s/^State:[[:space:]]*\([A-Z]\).*/\1/p" "/proc/$1/status" 2>/dev/null) &&
          [[ -n $s && $s != Z ]]; do
        sleep 1
    done
    exec "$2" stop "$3"' rbdlite-cluster-watchdog "$$" "$CLUSTER" "$DIR" \
    </dev/null >/dev/null 2>&1 &
WATCHDOG=$!

# Run children in the background and `wait` for them: bash runs a trap only
# after a foreground child finishes, but interrupts `wait` at once.
"$CLUSTER" start "$DIR" &
CHILD=$!
wait "$CHILD"
rc=$?
CHILD=
if ((rc != 0)); then
    log "could not start a cluster (status $rc)"
    exit "$rc"
fi

# shellcheck source=/dev/null
source "$DIR/env"
PHASE=run

# Background jobs of a non-interactive shell start with SIGINT/SIGQUIT
# ignored and stdin from /dev/null; undo both, so CMD behaves as if run
# directly (Ctrl-C stops it, it can read the terminal).
env --default-signal=INT,QUIT -- "$@" 0<&0 &
CHILD=$!
wait "$CHILD"
rc=$?
CHILD=
exit "$rc"
