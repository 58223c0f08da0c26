#!/usr/bin/env bash
# cluster.sh - a throwaway one-monitor, one-OSD (memstore) Ceph cluster for
# the librbdlite tests.  Everything (config, mon/osd data, logs, admin
# sockets, pid files) lives inside one directory; nothing in /etc/ceph or
# /var/lib/ceph is read or written.
#
#   cluster.sh start  DIR   create and start a cluster in DIR (new or empty)
#   cluster.sh stop   DIR   stop the daemons and remove DIR (idempotent)
#   cluster.sh status DIR   exit 0 if the cluster answers `ceph -s`
#
# After `start`, DIR/env is shell-sourceable:
#   export CEPH_CONF=DIR/ceph.conf RBDLITE_TEST_POOL=rbd \
#          RBDLITE_TEST_DATA_POOL=rbd-data RBDLITE_CLUSTER_DIR=DIR
#
# Environment knobs:
#   RBDLITE_MEMSTORE_BYTES   memstore device size (default 3 GiB)
#   RBDLITE_PORT_MIN/MAX     range the monitor port is picked from
#                            (default 10000..32000, below Linux' ephemeral range)
#   RBDLITE_START_TIMEOUT    seconds to wait for a writable pool (default 60)
#   RBDLITE_KEEP_FAILED=1    on a failed start, keep DIR for inspection
#
# Needs: ceph-mon ceph-osd ceph-common uuid-runtime python3 (tests/deps.sh cluster).

set -euo pipefail

PROG=${0##*/}
# The caller's CEPH_ARGS/CEPH_CONF must not leak into our daemons and tools;
# every command below gets `-c "$CONF"` explicitly.
unset CEPH_ARGS CEPH_CONF

MEMSTORE_BYTES=${RBDLITE_MEMSTORE_BYTES:-$((3 * 1024 * 1024 * 1024))}
PORT_MIN=${RBDLITE_PORT_MIN:-10000}
PORT_MAX=${RBDLITE_PORT_MAX:-32000}
START_TIMEOUT=${RBDLITE_START_TIMEOUT:-60}
CMD_TIMEOUT=20            # any single ceph/rados/rbd call during setup
STOP_TIMEOUT=10           # TERM grace before KILL
MARKER=.rbdlite-cluster   # marks a directory this script owns (stop removes only those)
POOLS=(rbd rbd-data)

[[ $MEMSTORE_BYTES =~ ^[0-9]+([KMGT]i?)?$ ]] ||
    { echo "$PROG: RBDLITE_MEMSTORE_BYTES='$MEMSTORE_BYTES' is not a size (bytes, or e.g. 3G)" >&2; exit 2; }

# Our real stderr, for messages from traps (a trap can run while a
# function's output is redirected to the setup log).
exec {ERR}>&2
log() { printf '%s: %s\n' "$PROG" "$*" >&"$ERR"; }
die() { log "error: $*"; exit 1; }

usage() {
    cat >&2 <<EOF
usage: $PROG start DIR     create and start a throwaway cluster in DIR
       $PROG stop DIR      stop it and remove DIR (succeeds if already gone)
       $PROG status DIR    exit 0 if the cluster answers 'ceph -s'
EOF
    exit 2
}

# set_dir DIR: absolute paths of everything inside the cluster directory.
set_dir() {
    DIR=$(realpath -m -- "$1")
    [[ $DIR != / ]] || die "refusing to use / as cluster directory"
    CONF=$DIR/ceph.conf
    RUN=$DIR/run
    LOGDIR=$DIR/log
    SETUP_LOG=$LOGDIR/setup.log
}

now_ms() { date +%s%3N; }

# stamp TEXT: a timestamped progress line in the setup log.
stamp() {
    local ms=$(($(now_ms) - T0))
    printf '== +%d.%03ds %s\n' $((ms / 1000)) $((ms % 1000)) "$*" >>"$SETUP_LOG"
}

# Run a ceph CLI tool with our config and a hard time limit.  Output goes to
# the setup log unless the caller redirects it.
tmo() { timeout -k 5 "$CMD_TIMEOUT" "$@"; }
c_ceph() { tmo ceph -c "$CONF" --connect-timeout "$CMD_TIMEOUT" "$@"; }
c_rados() { tmo rados -c "$CONF" --client_mount_timeout "$CMD_TIMEOUT" "$@"; }
c_rbd() { tmo rbd -c "$CONF" --client_mount_timeout "$CMD_TIMEOUT" "$@"; }

# is_our_daemon PID [COMM]: PID is a live (non-zombie) ceph-mon/ceph-osd (or
# just COMM) started with our ceph.conf.  Guards against stale pid files and
# pid reuse.
is_our_daemon() {
    local pid=$1 want=${2:-} comm state
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == ceph-mon || $comm == ceph-osd ]] || return 1
    [[ -z $want || $comm == "$want" ]] || return 1
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
    [[ $state != Z && $state != X ]] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$CONF"
}

# our_daemons [COMM]: pids of our live daemons, from the pid files and - in
# case a daemon has not written one yet, or it was removed - from a scan of
# /proc for ceph-mon/ceph-osd processes running with our ceph.conf.
our_daemons() {
    local want=${1:-} f pid d
    local -A seen=()
    for f in "$RUN"/*.pid; do
        [[ -f $f ]] || continue
        pid=$(<"$f") || continue
        pid=${pid//[!0-9]/}
        if [[ -n $pid && -z ${seen[$pid]:-} ]] && is_our_daemon "$pid" "$want"; then
            seen[$pid]=1
            echo "$pid"
        fi
    done
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ -z ${seen[$pid]:-} ]] || continue
        if is_our_daemon "$pid" "$want"; then
            seen[$pid]=1
            echo "$pid"
        fi
    done
}

# kill_daemons: stop the OSD first, then the monitor (an OSD whose monitor is
# gone waits 5 s for a shutdown ack).  Each: SIGTERM, up to STOP_TIMEOUT s
# grace, SIGKILL, then wait until it is gone.  The OSD uses
# osd_fast_shutdown, so SIGTERM does not make memstore write its data out.
kill_daemons() {
    local comm pids pid deadline
    for comm in ceph-osd ceph-mon; do
        mapfile -t pids < <(our_daemons "$comm")
        ((${#pids[@]})) || continue
        kill -TERM "${pids[@]}" 2>/dev/null || true
        deadline=$((SECONDS + STOP_TIMEOUT))
        while :; do
            local alive=()
            for pid in "${pids[@]}"; do
                if is_our_daemon "$pid"; then alive+=("$pid"); fi
            done
            pids=("${alive[@]}")
            ((${#pids[@]})) || break
            if ((SECONDS >= deadline)); then
                log "$comm ${pids[*]} ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
                kill -KILL "${pids[@]}" 2>/dev/null || true
                deadline=$((SECONDS + 3600))   # KILL cannot be ignored; just wait
            fi
            sleep 0.05
        done
    done
}

print_log_tails() {
    local f
    for f in "$SETUP_LOG" "$LOGDIR"/mon.*.log "$LOGDIR"/osd.*.log; do
        [[ -s $f ]] || continue
        printf '\n==> %s (last 25 lines) <==\n' "$f" >&"$ERR"
        tail -n 25 -- "$f" >&"$ERR"
    done
}

# run_daemon CMD...: run a daemon (which forks into the background) with
# stdin from /dev/null and every inherited file descriptor above 2 closed,
# so it holds no pipe or file of our caller's (a make jobserver, a test
# harness' output pipe...) open for the rest of its life.
run_daemon() {
    (
        local fd
        for fd in /proc/"$BASHPID"/fd/*; do
            fd=${fd##*/}
            if ((fd > 2)); then exec {fd}>&-; fi
        done
        exec timeout -k 5 "$CMD_TIMEOUT" "$@" </dev/null
    )
}

# check_alive NAME: fail (with a message) if daemon NAME has died.
check_alive() {
    local name=$1 pidfile=$RUN/$1.pid pid
    [[ -f $pidfile ]] || return 0            # not started yet
    pid=$(<"$pidfile")
    is_our_daemon "$pid" || die "$name (pid $pid) died"
}

# pick_port: a random port in [PORT_MIN, PORT_MAX) that 127.0.0.1 can bind now.
pick_port() {
    python3 - "$PORT_MIN" "$PORT_MAX" <<'EOF'
import random, socket, sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
for _ in range(500):
    port = random.randrange(lo, hi)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    sys.exit(0)
sys.exit("no free port found in [%d, %d)" % (lo, hi))
EOF
}

write_conf() {
    local fsid=$1 port=$2
    cat >"$CONF" <<EOF
# Generated by $PROG for a throwaway librbdlite test cluster.
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
auth cluster required = none
auth service required = none
auth client required = none
keyring = $DIR/keyring
run dir = $RUN
log file = $LOGDIR/\$name.log
admin socket = $RUN/\$name.asok
mon data = $DIR/mon/\$cluster-\$id
osd data = $DIR/osd/\$cluster-\$id
crash dir = $DIR/crash
ms bind ipv4 = true
ms bind ipv6 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
# The monitor shuts down when its data dir's filesystem is nearly full;
# a test machine's /tmp may well be.
mon data avail warn = 1
mon data avail crit = 0
# MemStore keeps its own count of stored bytes, and that count can drift
# below zero (seen in this suite's runs; its clone accounting is one
# suspect).  Its statfs then reports more free space than the device has,
# the OSD computes a usage ratio in the billions, engages the failsafe and
# silently drops every write for the rest of the run.  Ratios above 1 are
# percentages to Ceph, so these put every threshold beyond any ratio that
# drift can produce: the throwaway cluster never declares itself full (the
# tests remove what they create; memstore device bytes stays the nominal
# size).
mon osd nearfull ratio = 1e14
mon osd backfillfull ratio = 1e14
mon osd full ratio = 1e14
osd failsafe full ratio = 1e14
debug ms = 0/0
debug mon = 0/5
debug paxos = 0/5
debug osd = 0/5
debug monc = 0/5
debug auth = 0/5

[mon]
pid file = $RUN/\$name.pid
# Commit map changes (pool create, ...) almost at once instead of batching
# them for up to a second: one client/one mon needs no batching.
paxos propose interval = 0.05
mon warn on insecure global id reclaim allowed = false
# If the port was grabbed between probe and bind, fail at once (we retry
# with another port) instead of retrying the bind for 10 s.
ms bind retry count = 1
ms bind retry delay = 1

[osd]
pid file = $RUN/\$name.pid
public addr = 127.0.0.1
cluster addr = 127.0.0.1
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd memory target = 1073741824
osd op num shards = 2
osd op num threads per shard = 2
osd crush update on start = false

[client]
# Many short-lived client processes: one log each, no admin sockets.
log file = $LOGDIR/\$name.\$pid.log
admin socket =
EOF
}

cmd_start() {
    set_dir "$1"
    local created_dir=0
    T0=$(now_ms)

    if [[ -e $DIR ]]; then
        [[ -d $DIR ]] || die "$DIR exists and is not a directory"
        [[ -z $(ls -A -- "$DIR") ]] || die "$DIR is not empty"
    else
        mkdir -p -- "$DIR"
        created_dir=1
    fi
    for tool in ceph ceph-mon ceph-osd ceph-authtool monmaptool rados rbd uuidgen python3 timeout; do
        command -v "$tool" >/dev/null || die "$tool not found (run tests/deps.sh cluster as root)"
    done

    # From here on, any failure (or signal) tears down what we started.
    START_CREATED_DIR=$created_dir
    trap 'start_failed $?' EXIT
    trap 'INTERRUPTED=INT; exit 130' INT
    trap 'INTERRUPTED=TERM; exit 143' TERM
    trap 'INTERRUPTED=HUP; exit 129' HUP

    : >"$DIR/$MARKER"
    mkdir -p "$RUN" "$LOGDIR" "$DIR/mon" "$DIR/osd/ceph-0" "$DIR/crash"

    local fsid osd_uuid port attempt
    fsid=$(uuidgen)
    osd_uuid=$(uuidgen)

    tmo ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. \
        --cap mon 'allow *' >>"$SETUP_LOG" 2>&1

    # Monitor.  The port is free when probed, but another process could grab
    # it before ceph-mon binds; if the monitor does not come up, retry with a
    # new port.
    for attempt in 1 2 3 4 5; do
        port=$(pick_port)
        write_conf "$fsid" "$port"
        rm -rf -- "$DIR/mon/ceph-a" "$DIR/monmap"
        tmo monmaptool -c "$CONF" --create --addv a "[v2:127.0.0.1:$port]" \
            --fsid "$fsid" "$DIR/monmap" >>"$SETUP_LOG" 2>&1
        tmo ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" \
            --keyring "$DIR/keyring" >>"$SETUP_LOG" 2>&1
        stamp "starting mon.a on 127.0.0.1:$port (attempt $attempt)"
        # ceph-mon daemonizes (new session, own process group) once it is
        # initialised; the pid file tells us which process it became.
        # Check the fsid: a monitor answering on this port must be ours.
        if run_daemon ceph-mon -c "$CONF" -i a >>"$SETUP_LOG" 2>&1 &&
            wait_for_pidfile mon.a &&
            [[ $(c_ceph fsid 2>>"$SETUP_LOG") == "$fsid" ]]; then
            break
        fi
        if grep -qs 'unable to bind' "$LOGDIR/mon.a.log" &&
            ((attempt < 5)); then
            log "port $port was taken before ceph-mon could bind it; retrying"
            kill_daemons
            mv -f -- "$LOGDIR/mon.a.log" "$LOGDIR/mon.a.log.$attempt" 2>/dev/null || true
            continue
        fi
        die "ceph-mon did not start"
    done

    # OSD: register it, put it in the CRUSH map, mkfs, start.
    stamp "mon.a is up"
    local osd_id
    osd_id=$(c_ceph osd create "$osd_uuid" 2>>"$SETUP_LOG")
    [[ $osd_id == 0 ]] || die "'ceph osd create' returned '$osd_id', expected 0"
    c_ceph osd crush add osd.0 1 root=default >>"$SETUP_LOG" 2>&1
    stamp "osd.0 created"
    tmo ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$SETUP_LOG" 2>&1
    run_daemon ceph-osd -c "$CONF" -i 0 >>"$SETUP_LOG" 2>&1
    wait_for_pidfile osd.0 || die "ceph-osd did not start"
    stamp "osd.0 started"

    # MemStore's omap iterator is not safe against the snapshot trimmer
    # (a 16.2.15 OSD segfaulted in SnapMapper::get_next_objects_to_trim ->
    # MemStore::OmapIteratorImpl::value while clones were being written
    # and snapshots removed).  Never trim: removed snapshots keep their
    # clones until the throwaway cluster is deleted, which costs memory
    # only.
    c_ceph osd set nosnaptrim >>"$SETUP_LOG" 2>&1 ||
        die "'ceph osd set nosnaptrim' failed"

    # Pools (monitor-only commands; they need not wait for the OSD).
    local pool
    for pool in "${POOLS[@]}"; do
        c_ceph osd pool create "$pool" 8 >>"$SETUP_LOG" 2>&1
        c_ceph osd pool application enable "$pool" rbd >>"$SETUP_LOG" 2>&1
    done

    stamp "pools created"
    wait_writable
    stamp "pools writable"

    # `rbd pool init` works without a manager; it also writes to the pool.
    c_rbd pool init rbd >>"$SETUP_LOG" 2>&1 || die "'rbd pool init rbd' failed"

    cat >"$DIR/env" <<EOF
export CEPH_CONF=$(printf '%q' "$CONF")
export RBDLITE_TEST_POOL=rbd
export RBDLITE_TEST_DATA_POOL=rbd-data
export RBDLITE_CLUSTER_DIR=$(printf '%q' "$DIR")
EOF

    trap - EXIT INT TERM HUP
    stamp "done"
    local ms=$(($(now_ms) - T0))
    log "cluster up in $DIR (mon 127.0.0.1:$port, memstore $MEMSTORE_BYTES bytes) in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s"
}

# wait_for_pidfile NAME: the daemonized NAME wrote its pid file and is alive.
wait_for_pidfile() {
    local name=$1 f=$RUN/$1.pid i
    for ((i = 0; i < 100; i++)); do
        if [[ -s $f ]] && is_our_daemon "$(<"$f")"; then return 0; fi
        sleep 0.1
    done
    return 1
}

# wait_writable: every pool accepts a write (so the OSD is up and its PGs
# are active), within START_TIMEOUT seconds.
wait_writable() {
    local deadline=$((SECONDS + START_TIMEOUT)) pool obj
    obj=rbdlite-probe.$$
    for pool in "${POOLS[@]}"; do
        while :; do
            check_alive mon.a
            check_alive osd.0
            if timeout -k 2 5 rados -c "$CONF" -p "$pool" put "$obj" "$CONF" >>"$SETUP_LOG" 2>&1 &&
                timeout -k 2 5 rados -c "$CONF" -p "$pool" rm "$obj" >>"$SETUP_LOG" 2>&1; then
                break
            fi
            ((SECONDS < deadline)) || die "pool $pool not writable after ${START_TIMEOUT}s"
            sleep 0.2
        done
    done
}

start_failed() {
    local rc=$1
    trap - EXIT INT TERM HUP
    ((rc != 0)) || rc=1
    if [[ -n ${INTERRUPTED:-} ]]; then
        log "start interrupted by SIG$INTERRUPTED; tearing down"
    else
        log "start failed (status $rc); tearing down"
        print_log_tails
    fi
    kill_daemons
    if [[ ${RBDLITE_KEEP_FAILED:-0} == 1 ]]; then
        log "kept $DIR (RBDLITE_KEEP_FAILED=1)"
    elif ((START_CREATED_DIR)); then
        rm -rf -- "$DIR"
    else
        # DIR was given to us empty: leave it empty.
        find "$DIR" -mindepth 1 -delete 2>/dev/null || rm -rf -- "${DIR:?}"/* "${DIR:?}"/.[!.]* 2>/dev/null || true
    fi
    exit "$rc"
}

cmd_stop() {
    set_dir "$1"
    if [[ ! -e $DIR ]]; then
        return 0
    fi
    [[ -d $DIR ]] || die "$DIR is not a directory"
    if [[ ! -e $DIR/$MARKER ]]; then
        # Not ours (or already half-removed): remove only if empty.
        if [[ -z $(ls -A -- "$DIR") ]]; then
            rmdir -- "$DIR"
            return 0
        fi
        die "$DIR does not look like a cluster directory made by $PROG (no $MARKER); not removing it"
    fi
    kill_daemons
    rm -rf -- "$DIR"
}

cmd_status() {
    set_dir "$1"
    [[ -f $CONF ]] || { log "no cluster in $DIR"; return 1; }
    timeout -k 2 6 ceph -c "$CONF" --connect-timeout 4 -s
}

(($# == 2)) || usage
case $1 in
start) cmd_start "$2" ;;
stop) cmd_stop "$2" ;;
status) cmd_status "$2" ;;
*) usage ;;
esac
