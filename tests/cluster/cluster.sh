#!/usr/bin/env bash
# cluster.sh - a throwaway one-monitor, one-OSD (memstore) Ceph cluster for
# the librbdlite tests, or (RBDLITE_OSDS=3) a one-monitor, three-OSD
# (BlueStore) one for fault-injection tests.  Everything (config, mon/osd
# data, logs, admin sockets, pid files) lives inside one directory; nothing
# in /etc/ceph or /var/lib/ceph is read or written.
#
#   cluster.sh start      DIR   create and start a cluster in DIR (new or empty)
#   cluster.sh stop       DIR   stop the daemons and remove DIR (idempotent)
#   cluster.sh status     DIR   exit 0 if the cluster answers `ceph -s`
# Fault injection (N is an OSD id, 0..OSDS-1):
#   cluster.sh osd-kill   DIR N  SIGKILL osd.N, wait until it is gone
#   cluster.sh osd-start  DIR N  restart osd.N (same data and config), wait
#                                until the monitor has it up (BlueStore only:
#                                a killed memstore OSD has lost its data)
#   cluster.sh osd-stop   DIR N  SIGSTOP osd.N (freeze it)
#   cluster.sh osd-cont   DIR N  SIGCONT osd.N
#   cluster.sh mon-kill   DIR    SIGKILL the monitor
#   cluster.sh mon-start  DIR    restart it (same port, same data), wait
#                                until it answers
#   cluster.sh wait-clean DIR [SECS]  wait (default 120 s) until every OSD
#                                runs and is up and every PG is active+clean
#
# After `start`, DIR/env is shell-sourceable:
#   export CEPH_CONF=DIR/ceph.conf RBDLITE_TEST_POOL=rbd \
#          RBDLITE_TEST_DATA_POOL=rbd-data RBDLITE_CLUSTER_DIR=DIR
# (and, with RBDLITE_OSDS=3, RBDLITE_CLUSTER_OSDS=3).
#
# The three-OSD cluster: OSDs 0, 1, 2 on 127.0.0.1, CRUSH failure domain
# osd, pools rbd and rbd-data of size 3 / min_size 2 (one OSD down: I/O
# goes on; two down: I/O blocks until one is back).  Its OSDs use BlueStore
# on sparse files in DIR, not memstore: memstore keeps everything in memory
# and loses it when the OSD is killed, BlueStore survives SIGKILL.  A dead
# or frozen OSD is marked down within seconds (heartbeat grace 4 s, one
# reporter is enough), but never marked out: data must not migrate during
# a test.  Clients keep the default rados_osd_op_timeout=0, so their I/O
# blocks (does not fail) while a PG is below min_size.  A manager runs too,
# for pool quotas (its PG statistics); wait-clean still asks each PG's
# primary OSD for its state (`pg query`), which needs none.
#
# Environment knobs:
#   RBDLITE_OSDS             number of OSDs: 1 (default; memstore) or 3
#                            (BlueStore, for fault injection)
#   RBDLITE_MEMSTORE_BYTES   memstore device size (default 3 GiB)
#   RBDLITE_BLUESTORE_BYTES  size of each BlueStore OSD's sparse block file
#                            (default 4G; RBDLITE_OSDS=3 only)
#   RBDLITE_PORT_MIN/MAX     range the monitor port is picked from
#                            (default 10000..32000, below Linux' ephemeral range)
#   RBDLITE_START_TIMEOUT    seconds to wait for a writable pool (default 60;
#                            also the limit for osd-start and mon-start)
#   RBDLITE_KEEP_FAILED=1    on a failed start, keep DIR for inspection
#
# Needs: ceph-mon ceph-osd ceph-common uuid-runtime python3, and ceph-mgr for
# RBDLITE_OSDS=3 (tests/deps.sh cluster).

set -euo pipefail

PROG=${0##*/}
# The caller's CEPH_ARGS/CEPH_CONF must not leak into our daemons and tools;
# every command below gets `-c "$CONF"` explicitly.
unset CEPH_ARGS CEPH_CONF

OSDS=${RBDLITE_OSDS:-1}
MEMSTORE_BYTES=${RBDLITE_MEMSTORE_BYTES:-$((3 * 1024 * 1024 * 1024))}
BLUESTORE_BYTES=${RBDLITE_BLUESTORE_BYTES:-4G}
PORT_MIN=${RBDLITE_PORT_MIN:-10000}
PORT_MAX=${RBDLITE_PORT_MAX:-32000}
START_TIMEOUT=${RBDLITE_START_TIMEOUT:-60}
CMD_TIMEOUT=20            # any single ceph/rados/rbd call during setup
STOP_TIMEOUT=10           # TERM grace before KILL
MARKER=.rbdlite-cluster   # marks a directory this script owns (stop removes only those)
POOLS=(rbd rbd-data)

[[ $MEMSTORE_BYTES =~ ^[0-9]+([KMGT]i?)?$ ]] ||
    { echo "$PROG: RBDLITE_MEMSTORE_BYTES='$MEMSTORE_BYTES' is not a size (bytes, or e.g. 3G)" >&2; exit 2; }
[[ $BLUESTORE_BYTES =~ ^[0-9]+([KMGT]i?)?$ ]] ||
    { echo "$PROG: RBDLITE_BLUESTORE_BYTES='$BLUESTORE_BYTES' is not a size (bytes, or e.g. 4G)" >&2; exit 2; }
[[ $OSDS == 1 || $OSDS == 3 ]] ||
    { echo "$PROG: RBDLITE_OSDS='$OSDS' must be 1 or 3" >&2; exit 2; }
# Replication: size 1 on one OSD; size 3, min_size 2 on three.
if ((OSDS == 1)); then POOL_SIZE=1 POOL_MIN_SIZE=1; else POOL_SIZE=3 POOL_MIN_SIZE=2; fi

# Our real stderr, for messages from traps (a trap can run while a
# function's output is redirected to the setup log).
exec {ERR}>&2
log() { printf '%s: %s\n' "$PROG" "$*" >&"$ERR"; }
die() { log "error: $*"; exit 1; }

usage() {
    cat >&2 <<EOF
usage: $PROG start DIR     create and start a throwaway cluster in DIR
                           (RBDLITE_OSDS=3: three BlueStore OSDs, size 3)
       $PROG stop DIR      stop it and remove DIR (succeeds if already gone)
       $PROG status DIR    exit 0 if the cluster answers 'ceph -s'
       $PROG osd-kill DIR N     SIGKILL osd.N and wait until it is gone
       $PROG osd-start DIR N    restart osd.N, wait until it is up (BlueStore)
       $PROG osd-stop DIR N     SIGSTOP osd.N
       $PROG osd-cont DIR N     SIGCONT osd.N
       $PROG mon-kill DIR       SIGKILL the monitor
       $PROG mon-start DIR      restart the monitor, wait until it answers
       $PROG wait-clean DIR [SECS]  wait until all OSDs are up and all PGs
                           active+clean (default 120 s)
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
    FAULT_LOG=$LOGDIR/faults.log
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
    [[ $comm == ceph-mon || $comm == ceph-osd || $comm == ceph-mgr ]] || return 1
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

# kill_daemons: stop the OSDs first, then the monitor (an OSD whose monitor
# is gone waits 5 s for a shutdown ack).  Each: SIGTERM (and SIGCONT, for a
# daemon frozen by osd-stop), up to STOP_TIMEOUT s grace, SIGKILL, then wait
# until it is gone.  The OSDs use osd_fast_shutdown, so SIGTERM does not
# make memstore write its data out.
kill_daemons() {
    local comm pids pid deadline
    for comm in ceph-mgr ceph-osd ceph-mon; do
        mapfile -t pids < <(our_daemons "$comm")
        ((${#pids[@]})) || continue
        kill -TERM "${pids[@]}" 2>/dev/null || true
        kill -CONT "${pids[@]}" 2>/dev/null || true
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
osd pool default size = $POOL_SIZE
osd pool default min size = $POOL_MIN_SIZE
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
EOF
    ((OSDS == 1)) || cat >>"$CONF" <<EOF
# Fault injection: a killed OSD is reported at once (its peers' connections
# are refused), a frozen one after the heartbeat grace; one reporter is
# enough (three OSDs, no host level) and the grace never grows with an
# OSD's history of lagging.  OSDs are never marked out (down out interval
# 0 = never): with three OSDs there is nowhere to move data to, and no
# test wants a migration.  An OSD that finds itself marked down after a
# SIGSTOP rejoins however often that happens (default: 5 times in 10 min,
# then it shuts itself down).
osd heartbeat interval = 1
osd heartbeat grace = 4
mon osd adjust heartbeat grace = false
mon osd adjust down out interval = false
mon osd min down reporters = 1
mon osd reporter subtree level = osd
mon osd down out interval = 0
mon warn on osd down out interval zero = false
osd max markdown count = 1000
# A manager (three-OSD mode only) aggregates the PG statistics the monitor
# needs to enforce pool quotas; report them every second.
mgr data = $DIR/mgr/\$cluster-\$id
mgr stats period = 1
mon mgr beacon grace = 60
EOF
    cat >>"$CONF" <<EOF

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

[mgr]
pid file = $RUN/\$name.pid
# Only what a test cluster needs: no dashboard, no telemetry, no orchestrator.
mgr initial modules = status

[osd]
pid file = $RUN/\$name.pid
public addr = 127.0.0.1
cluster addr = 127.0.0.1
EOF
    if ((OSDS == 1)); then
        cat >>"$CONF" <<EOF
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd memory target = 1073741824
EOF
    else
        cat >>"$CONF" <<EOF
# BlueStore on a sparse file per OSD (survives SIGKILL, unlike memstore),
# small fixed caches, no fsck or discard: a quick mkfs and mount.  The
# file is the default block path, osd data/block (setting that path
# explicitly makes mkfs symlink it to itself).
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $BLUESTORE_BYTES
bluestore fsck on mkfs = false
bluestore fsck on mount = false
bdev enable discard = false
bluestore cache autotune = false
bluestore cache size = 134217728
osd memory target = 536870912
# A frozen (osd-stop) OSD must not, once continued, count a work item it
# was in the middle of as a hung thread and abort itself.
osd op thread timeout = 30
osd op thread suicide timeout = 0
EOF
    fi
    cat >>"$CONF" <<EOF
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
    local tools=(ceph ceph-mon ceph-osd ceph-authtool monmaptool rados rbd uuidgen python3 timeout)
    ((OSDS == 1)) || tools+=(ceph-mgr)
    for tool in "${tools[@]}"; do
        command -v "$tool" >/dev/null || die "$tool not found (run tests/deps.sh cluster as root)"
    done
    ((OSDS == 1)) || ceph_python >/dev/null || die "no python with the rados module (python3-rados) for the PG checks"

    # From here on, any failure (or signal) tears down what we started.
    START_CREATED_DIR=$created_dir
    trap 'start_failed $?' EXIT
    trap 'INTERRUPTED=INT; exit 130' INT
    trap 'INTERRUPTED=TERM; exit 143' TERM
    trap 'INTERRUPTED=HUP; exit 129' HUP

    : >"$DIR/$MARKER"
    mkdir -p "$RUN" "$LOGDIR" "$DIR/mon" "$DIR/crash"

    local fsid port attempt i
    local osd_uuids=()
    fsid=$(uuidgen)
    for ((i = 0; i < OSDS; i++)); do
        mkdir -p "$DIR/osd/ceph-$i"
        osd_uuids[i]=$(uuidgen)
    done

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

    # OSDs: register them, put them in the CRUSH map, mkfs (in parallel:
    # a BlueStore mkfs takes seconds), start.
    stamp "mon.a is up"
    local osd_id
    for ((i = 0; i < OSDS; i++)); do
        osd_id=$(c_ceph osd create "${osd_uuids[i]}" 2>>"$SETUP_LOG")
        [[ $osd_id == "$i" ]] || die "'ceph osd create' returned '$osd_id', expected $i"
        c_ceph osd crush add "osd.$i" 1 root=default >>"$SETUP_LOG" 2>&1
        stamp "osd.$i created"
    done
    local mkfs_pids=()
    for ((i = 0; i < OSDS; i++)); do
        tmo ceph-osd -c "$CONF" -i "$i" --mkfs --osd-uuid "${osd_uuids[i]}" >>"$SETUP_LOG" 2>&1 &
        mkfs_pids[i]=$!
    done
    for ((i = 0; i < OSDS; i++)); do
        wait "${mkfs_pids[i]}" || die "'ceph-osd -i $i --mkfs' failed"
    done
    for ((i = 0; i < OSDS; i++)); do
        run_daemon ceph-osd -c "$CONF" -i "$i" >>"$SETUP_LOG" 2>&1
    done
    for ((i = 0; i < OSDS; i++)); do
        wait_for_pidfile "osd.$i" || die "ceph-osd -i $i did not start"
        stamp "osd.$i started"
    done
    # Three OSDs: a manager too, for pool quotas (its PG statistics).
    if ((OSDS > 1)); then
        mkdir -p -- "$DIR/mgr/ceph-x"
        run_daemon ceph-mgr -c "$CONF" -i x >>"$SETUP_LOG" 2>&1 ||
            die "ceph-mgr did not start"
        wait_for_pidfile mgr.x || die "ceph-mgr did not start"
        stamp "mgr.x started"
    fi

    # MemStore's omap iterator is not safe against the snapshot trimmer
    # (a 16.2.15 OSD segfaulted in SnapMapper::get_next_objects_to_trim ->
    # MemStore::OmapIteratorImpl::value while clones were being written
    # and snapshots removed).  Never trim: removed snapshots keep their
    # clones until the throwaway cluster is deleted, which costs memory
    # only.  (BlueStore trims safely.)
    if ((OSDS == 1)); then
        c_ceph osd set nosnaptrim >>"$SETUP_LOG" 2>&1 ||
            die "'ceph osd set nosnaptrim' failed"
    fi

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

    # Three OSDs: writable needs only min_size of them; wait for all PGs
    # on all three.
    if ((OSDS > 1)); then
        wait_clean "$START_TIMEOUT" "$SETUP_LOG" || die "PGs not active+clean after ${START_TIMEOUT}s"
        stamp "all PGs active+clean"
    fi

    cat >"$DIR/env" <<EOF
export CEPH_CONF=$(printf '%q' "$CONF")
export RBDLITE_TEST_POOL=rbd
export RBDLITE_TEST_DATA_POOL=rbd-data
export RBDLITE_CLUSTER_DIR=$(printf '%q' "$DIR")
EOF
    ((OSDS == 1)) || echo "export RBDLITE_CLUSTER_OSDS=$OSDS" >>"$DIR/env"

    trap - EXIT INT TERM HUP
    stamp "done"
    local ms=$(($(now_ms) - T0)) what="memstore $MEMSTORE_BYTES bytes"
    ((OSDS == 1)) || what="$OSDS OSDs, bluestore $BLUESTORE_BYTES each, size $POOL_SIZE/$POOL_MIN_SIZE"
    log "cluster up in $DIR (mon 127.0.0.1:$port, $what) in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s"
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
    local deadline=$((SECONDS + START_TIMEOUT)) pool obj i
    obj=rbdlite-probe.$$
    for pool in "${POOLS[@]}"; do
        while :; do
            check_alive mon.a
            for ((i = 0; i < OSDS; i++)); do check_alive "osd.$i"; done
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

# ---- fault injection -------------------------------------------------------

# ceph_python: the interpreter the ceph CLI runs with; it has the rados
# module, which a python3 earlier in PATH (a virtualenv, pyenv) may lack.
ceph_python() {
    local line words
    read -r line <"$(command -v ceph)" || return 1
    read -ra words <<<"${line#\#!}"
    if [[ ${words[0]:-} == */env ]]; then words=("${words[@]:1}"); fi
    [[ -n ${words[0]:-} ]] && "${words[0]}" -c 'import rados' 2>/dev/null || return 1
    echo "${words[0]}"
}

# pg_check PYTHON: one look at the cluster: exit 0 if every OSD in the map
# is up and in and every PG's primary reports it active+clean at the
# current map epoch.  No manager runs (so no `ceph pg stat`): each PG is
# asked directly (`ceph pg ID query`), over one connection.  Prints a
# one-line summary (or what is not clean).
pg_check() {
    tmo "$1" - "$CONF" 5 <<'EOF'
import collections, json, sys
import rados
conf, tmo = sys.argv[1], int(sys.argv[2])
try:
    r = rados.Rados(conffile=conf, conf={"client_mount_timeout": str(tmo)})
    r.connect(timeout=tmo)
    ret, out, err = r.mon_command(json.dumps({"prefix": "osd dump", "format": "json"}),
                                  b"", timeout=tmo)
    if ret:
        sys.exit("osd dump: %s (%d)" % (err, ret))
except rados.Error as e:
    print("monitor: %s" % e)
    sys.exit(1)
m = json.loads(out)
bad = ["osd.%d %s" % (o["osd"], "down" if not o["up"] else "out")
       for o in m["osds"] if not (o["up"] and o["in"])]
if bad:
    print(", ".join(bad))
    sys.exit(1)
states = collections.defaultdict(list)
for p in m["pools"]:
    for i in range(p["pg_num"]):
        pgid = "%d.%x" % (p["pool"], i)
        try:
            ret, out, err = r.pg_command(pgid, json.dumps({"prefix": "query", "pgid": pgid}),
                                         b"", timeout=tmo)
        except rados.Error as e:
            ret, err = -1, str(e)
        if ret:
            states["query failed: %s" % (err or ret)].append(pgid)
            continue
        q = json.loads(out)
        st = q.get("state", "?")
        if int(q.get("epoch", 0)) < m["epoch"]:
            st += " (at epoch %s < %d)" % (q.get("epoch"), m["epoch"])
        states[st].append(pgid)
r.shutdown()
n = sum(len(v) for v in states.values())
if list(states) == ["active+clean"]:
    print("%d osds up, %d pgs active+clean (epoch %d)" % (len(m["osds"]), n, m["epoch"]))
    sys.exit(0)
print("; ".join("%s: %s" % (st, " ".join(ids[:6]) + (" ..." if len(ids) > 6 else ""))
                for st, ids in states.items() if st != "active+clean"))
sys.exit(1)
EOF
}

# is_stopped PID: PID is frozen (SIGSTOP).
is_stopped() {
    [[ $(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) == T ]]
}

# daemon_pids NAME: pids of our live daemon NAME (mon.a, osd.N): ceph-mon
# or ceph-osd processes with our ceph.conf and `-i ID`.
daemon_pids() {
    local comm=ceph-${1%%.*} id=${1#*.} pid i
    local args=()
    for pid in $(our_daemons "$comm"); do
        mapfile -d '' -t args 2>/dev/null <"/proc/$pid/cmdline" || continue
        for ((i = 0; i + 1 < ${#args[@]}; i++)); do
            if [[ ${args[i]} == -i && ${args[i + 1]} == "$id" ]]; then
                echo "$pid"
                break
            fi
        done
    done
}

# osd_ids: the OSD ids of the cluster in DIR.
osd_ids() {
    local d
    for d in "$DIR"/osd/ceph-*; do
        [[ -d $d && ${d##*-} =~ ^[0-9]+$ ]] && echo "${d##*-}"
    done
}

# wait_clean SECS LOG: within SECS seconds, our monitor and every OSD run
# (none frozen) and pg_check passes.  Progress goes to LOG; on failure the
# last complaint goes to stderr.
wait_clean() {
    local secs=$1 logf=$2 deadline=$((SECONDS + $1)) why py n pid
    py=$(ceph_python) || { log "no python with the rados module (python3-rados)"; return 1; }
    while :; do
        why=
        [[ -n $(daemon_pids mon.a) ]] || why="mon.a is not running"
        for n in $(osd_ids); do
            [[ -z $why ]] || break
            pid=$(daemon_pids "osd.$n" | head -n 1)
            if [[ -z $pid ]]; then
                why="osd.$n is not running"
            elif is_stopped "$pid"; then
                why="osd.$n (pid $pid) is stopped (SIGSTOP; osd-cont it)"
            fi
        done
        if [[ -z $why ]]; then
            if why=$(pg_check "$py" 2>>"$logf"); then
                echo "wait-clean: $why" >>"$logf"
                return 0
            fi
            [[ -n $why ]] || why="the PG check failed"
        fi
        if ((SECONDS >= deadline)); then
            log "not clean after ${secs}s: $why"
            return 1
        fi
        sleep 0.5
    done
}

# load_cluster DIR: set_dir, and DIR must hold a cluster made by us.
load_cluster() {
    set_dir "$1"
    [[ -e $DIR/$MARKER && -f $CONF ]] || die "no cluster made by $PROG in $DIR"
    mkdir -p -- "$LOGDIR"
}

# check_osd N: N names an OSD of the cluster.
check_osd() {
    local ids
    ids=$(osd_ids | tr '\n' ' ')
    [[ $1 =~ ^[0-9]+$ && " $ids" == *" $1 "* ]] || die "no osd.$1 in $DIR (OSDs: ${ids% })"
}

# kill_one NAME: SIGKILL daemon NAME and wait (10 s) until it is gone.
kill_one() {
    local name=$1 pids pid i
    mapfile -t pids < <(daemon_pids "$name")
    if ((${#pids[@]} == 0)); then
        log "$name is not running"
        return 0
    fi
    kill -KILL "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
        local live=0
        for pid in "${pids[@]}"; do
            if is_our_daemon "$pid"; then live=1; fi
        done
        if ((!live)); then
            echo "$(date '+%F %T') $name (pid ${pids[*]}) killed" >>"$FAULT_LOG"
            log "$name (pid ${pids[*]}) killed"
            return 0
        fi
        sleep 0.05
    done
    die "$name (pid ${pids[*]}) still there 10 s after SIGKILL"
}

# signal_one NAME STOP|CONT: freeze or continue daemon NAME, and wait (5 s)
# until the kernel says so.
signal_one() {
    local name=$1 sig=$2 pids pid i
    mapfile -t pids < <(daemon_pids "$name")
    ((${#pids[@]})) || die "$name is not running"
    kill "-$sig" "${pids[@]}" || die "kill -$sig ${pids[*]} failed"
    for ((i = 0; i < 100; i++)); do
        local ok=1
        for pid in "${pids[@]}"; do
            if [[ $sig == STOP ]]; then
                is_stopped "$pid" || ok=0
            else
                ! is_stopped "$pid" || ok=0
            fi
        done
        if ((ok)); then
            echo "$(date '+%F %T') $name (pid ${pids[*]}) SIG$sig" >>"$FAULT_LOG"
            log "$name (pid ${pids[*]}) SIG$sig"
            return 0
        fi
        sleep 0.05
    done
    die "$name (pid ${pids[*]}) did not react to SIG$sig within 5 s"
}

cmd_osd_kill() { load_cluster "$1"; check_osd "$2"; kill_one "osd.$2"; }
cmd_osd_stop() { load_cluster "$1"; check_osd "$2"; signal_one "osd.$2" STOP; }
cmd_osd_cont() { load_cluster "$1"; check_osd "$2"; signal_one "osd.$2" CONT; }
cmd_mon_kill() { load_cluster "$1"; kill_one mon.a; }

# cmd_osd_start DIR N: start osd.N (unless it runs), then wait until it
# is active (its admin socket says so: it has seen itself up in a map from
# the monitor) and `ceph osd dump` shows it up, within START_TIMEOUT s.
cmd_osd_start() {
    load_cluster "$1"
    check_osd "$2"
    local n=$2 name=osd.$2 pid deadline=$((SECONDS + START_TIMEOUT))
    pid=$(daemon_pids "$name" | head -n 1)
    if [[ -n $pid ]]; then
        ! is_stopped "$pid" || die "$name (pid $pid) is stopped (SIGSTOP); use osd-cont"
        log "$name is already running (pid $pid)"
    else
        grep -qx 'osd objectstore = bluestore' "$CONF" ||
            die "$name is a memstore OSD: its data died with it (RBDLITE_OSDS=3 makes restartable BlueStore OSDs)"
        rm -f -- "$RUN/$name.pid"
        echo "$(date '+%F %T') starting $name" >>"$FAULT_LOG"
        run_daemon ceph-osd -c "$CONF" -i "$n" >>"$FAULT_LOG" 2>&1 ||
            die "ceph-osd -i $n failed (see $LOGDIR/$name.log)"
        wait_for_pidfile "$name" || die "ceph-osd -i $n did not start (see $LOGDIR/$name.log)"
    fi
    while :; do
        check_alive "$name"
        if timeout -k 2 5 ceph -c "$CONF" --admin-daemon "$RUN/$name.asok" status 2>>"$FAULT_LOG" |
            grep -q '"state": "active"' &&
            c_ceph osd dump 2>>"$FAULT_LOG" | grep -Eq "^osd\.$n up "; then
            break
        fi
        ((SECONDS < deadline)) || die "$name not up within ${START_TIMEOUT}s (see $LOGDIR/$name.log)"
        sleep 0.2
    done
    echo "$(date '+%F %T') $name is up" >>"$FAULT_LOG"
    log "$name is up"
}

# cmd_mon_start DIR: start the monitor (unless it runs) on its port with its
# data, and wait until it answers with our fsid, within START_TIMEOUT s.
cmd_mon_start() {
    load_cluster "$1"
    local pid fsid deadline=$((SECONDS + START_TIMEOUT))
    fsid=$(sed -n 's/^fsid = //p' "$CONF")
    pid=$(daemon_pids mon.a | head -n 1)
    if [[ -n $pid ]]; then
        ! is_stopped "$pid" || die "mon.a (pid $pid) is stopped (SIGSTOP)"
        log "mon.a is already running (pid $pid)"
    else
        rm -f -- "$RUN/mon.a.pid"
        echo "$(date '+%F %T') starting mon.a" >>"$FAULT_LOG"
        if ! run_daemon ceph-mon -c "$CONF" -i a >>"$FAULT_LOG" 2>&1 ||
            ! wait_for_pidfile mon.a; then
            if grep -qs 'unable to bind' "$LOGDIR/mon.a.log"; then
                die "ceph-mon could not bind its port ($(sed -n 's/^mon host = //p' "$CONF")); is another process on it?"
            fi
            die "ceph-mon did not start (see $LOGDIR/mon.a.log)"
        fi
    fi
    while :; do
        check_alive mon.a
        if [[ $(timeout -k 2 6 ceph -c "$CONF" --connect-timeout 4 fsid 2>>"$FAULT_LOG") == "$fsid" ]]; then
            break
        fi
        ((SECONDS < deadline)) || die "mon.a does not answer after ${START_TIMEOUT}s (see $LOGDIR/mon.a.log)"
        sleep 0.2
    done
    echo "$(date '+%F %T') mon.a is up" >>"$FAULT_LOG"
    log "mon.a is up"
}

# cmd_wait_clean DIR [SECS]
cmd_wait_clean() {
    load_cluster "$1"
    local secs=${2:-120}
    [[ $secs =~ ^[0-9]+$ ]] || die "wait-clean: '$secs' is not a number of seconds"
    wait_clean "$secs" "$FAULT_LOG" || exit 1
    log "$(tail -n 1 "$FAULT_LOG" | sed 's/^wait-clean: //')"
}

(($# >= 2)) || usage
case $1 in
start | stop | status | mon-kill | mon-start) (($# == 2)) || usage ;;
osd-kill | osd-start | osd-stop | osd-cont) (($# == 3)) || usage ;;
wait-clean) (($# <= 3)) || usage ;;
*) usage ;;
esac
case $1 in
start) cmd_start "$2" ;;
stop) cmd_stop "$2" ;;
status) cmd_status "$2" ;;
osd-kill) cmd_osd_kill "$2" "$3" ;;
osd-start) cmd_osd_start "$2" "$3" ;;
osd-stop) cmd_osd_stop "$2" "$3" ;;
osd-cont) cmd_osd_cont "$2" "$3" ;;
mon-kill) cmd_mon_kill "$2" ;;
mon-start) cmd_mon_start "$2" ;;
wait-clean) cmd_wait_clean "$2" "${3:-}" ;;
esac
