#!/usr/bin/env bash
# test-exclusive-lock.sh - librbdlite on images with Pacific's default
# features (layering, exclusive-lock, object-map, fast-diff, deep-flatten),
# judged by the real librbd (fio without preload) and the real rbd CLI.
#
#   default-rw        librbdlite (fio, LD_PRELOAD) writes with mixed block
#                     sizes at iodepth 16 and verifies; fio on the real
#                     librbd verifies again; object-map check is clean, no
#                     flags are set and no lock is left behind
#   discard-objmap    writes, whole-object and partial discards, discards of
#                     never-written objects and a rewrite of a discarded
#                     object through librbdlite; object-map check is clean,
#                     `rbd diff --whole-object` lists exactly the objects
#                     present in RADOS (and the expected ones), librbd reads
#                     zeros where data was discarded and verifies the rest
#   concurrent        librbd and librbdlite write disjoint halves of one
#                     image (separate data pool) at the same time for about
#                     10 s; both verify their own half, then each half is
#                     verified by the other library; the write-completion
#                     logs show the lock moving in both directions
#   concurrent-no-stall  in that run librbdlite's slowest write took under
#                     8 s, or at most twice librbd's slowest (a missed lock
#                     hand-off costs a 10 s retry; a loaded cluster slows
#                     both sides alike)
#   maint-ops         rbd snap create and rbd resize succeed while a
#                     librbdlite writer holds the lock; the writer sees no
#                     error; object maps of head and snapshot are clean
#   kill-lite         fio/librbdlite is SIGKILLed while writing; a librbd
#                     writer (rbd bench) takes over within 90 s and the dead
#                     client's address is on the OSD blocklist
#   kill-librbd       rbd bench is SIGKILLed while writing; a librbdlite
#                     writer takes over within 90 s and blocklists it
#   journaling        on an image with journaling, librbdlite reads and
#                     verifies librbd's data, writes and verifies its own
#                     (run by the system's librbd), librbd verifies both,
#                     and the journal holds each of librbdlite's writes
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL (a running
# cluster, e.g. from tests/cluster/with-cluster.sh), fio (with the rbd
# engine), rbd, rados, ceph, python3 (with Ceph's rados and rbd modules),
# pgrep, timeout, awk.  The library is
# "${RBDLITE_BUILDDIR:-<srcdir>}/lib/.libs/librbdlite.so", or $RBDLITE_LIB.
# With RBDLITE_SAN=asan (or tsan) the sanitizer runtime is preloaded first.
# The kill tests wait for the OSD watch timeout (30 s each); the whole run
# takes two to three minutes.
#
# Prints one line per sub-test and a final "N passed, M failed"; exits
# non-zero if anything failed.  RBDLITE_KEEP_LOGS=1 keeps the work directory.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env fio rbd rados ceph python3 pgrep timeout awk
rbdl_find_python || die "no python3 with the rados and rbd modules"

CLI_TMO=60        # any single rbd/rados/ceph call
FIO_TMO=90        # any single foreground fio run
TAKEOVER_TMO=90   # a writer taking the lock over from a killed owner
MAINT_TMO=20      # rbd snap create / rbd resize while librbdlite writes
LOCK_WAIT=30      # a starting writer taking the lock (slow on a busy host)
STALL_MAX_MS=8000 # longest librbdlite write latency with two writers
                  # (unless librbd's was at least half as long)
MiB=$((1024 * 1024))
DEFAULT_FEATURES=layering,exclusive-lock,object-map,fast-diff,deep-flatten

rbdl_workdir xlock
IMAGES=()
BG=()   # pids of `timeout` wrappers of background jobs

# The real CLI tools, never with anything preloaded.
c_rados() { timeout -k 5 "$CLI_TMO" env -u LD_PRELOAD rados --client_mount_timeout 30 "$@"; }
c_ceph() { timeout -k 5 "$CLI_TMO" env -u LD_PRELOAD ceph --connect-timeout 30 "$@"; }

# kill_bg PID: SIGKILL a background `timeout` wrapper and its children.
kill_bg() {
    local p
    for p in $(pgrep -P "$1" 2>/dev/null); do
        kill -KILL "$p" 2>/dev/null
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    return 0
}

cleanup() {
    local p
    for p in "${BG[@]}"; do
        kill_bg "$p"
    done
    # An image whose watcher was killed can be removed only once the OSD
    # has timed the watch out (30 s).
    rbdl_remove_images 45 "$POOL/"
    rbdl_rm_workdir
}
rbdl_traps

# fail NAME WHY [LOG...]: a FAIL line, then the tail of each log.
fail() {
    local f
    rbdl_fail "$1" "$2"
    shift 2
    for f in "$@"; do
        show_log "$f"
    done
    return 0
}
now_ms() { date +%s%3N; }

# pyj EXPR [ARG...]: evaluate a Python expression over the JSON on stdin
# and print it: d is the first JSON document, ds the list of all of them
# (`ceph osd blocklist ls` prints two); ARGs are in sys.argv[2:].  Text
# before the first document (fio notes) is skipped.
pyj() {
    python3 -c '
import json, sys
t = sys.stdin.read()
i = min([k for k in (t.find("{"), t.find("[")) if k >= 0] or [0])
dec, ds = json.JSONDecoder(), []
while True:
    while i < len(t) and t[i].isspace():
        i += 1
    if i >= len(t):
        break
    o, i = dec.raw_decode(t, i)
    ds.append(o)
d = ds[0]
print(eval(sys.argv[1]))' "$@"
}

# ---- images ---------------------------------------------------------------

UNIQ="xlock-$$-$RANDOM"

# mkimage NAME SIZE [rbd create options]: default features unless given.
mkimage() {
    local name=$1 size=$2
    shift 2
    if [[ " $* " != *" --image-feature "* ]]; then
        set -- --image-feature "$DEFAULT_FEATURES" "$@"
    fi
    rbdl_mkimage "$name" "$size" "$@"
}

# image_flags SPEC: the image's flags, comma-separated ("" when clear).
image_flags() {
    c_rbd info --format json "$POOL/$1" 2>/dev/null | pyj '",".join(d["flags"])'
}

# omap_clean SPEC: `rbd object-map check` reports nothing and leaves the
# flags clear (a real error prints "object map error" and invalidates the
# map, yet exits 0).  On failure sets WHY and WHYLOG.
omap_clean() {
    local spec=$1 out=$TMP/omap-check.$1.log flags
    WHYLOG=$out
    if ! c_rbd object-map check --no-progress "$POOL/$spec" >"$out" 2>&1; then
        WHY="rbd object-map check $spec failed"
        return 1
    fi
    if grep -Eiq 'error|invalid' "$out"; then
        WHY="rbd object-map check $spec reported problems"
        return 1
    fi
    if ! flags=$(image_flags "$spec"); then
        WHY="rbd info $spec failed"
        return 1
    fi
    if [[ -n $flags ]]; then
        WHY="flags of $spec after object-map check: $flags"
        return 1
    fi
    WHYLOG=
}

# lockers IMAGE: the addresses of the lockers of IMAGE's header, one line
# ("" if unlocked); fails if rbd lock ls fails.
lockers() {
    local out
    out=$(c_rbd lock ls --format json "$POOL/$1") || return 1
    pyj '" ".join(l["address"] for l in d)' <<<"$out"
}

# wait_locked IMAGE SECS: poll until IMAGE is locked; the holder's address
# in LOCK_ADDR.
wait_locked() {
    local img=$1 deadline=$(($(now_ms) + $2 * 1000))
    LOCK_ADDR=
    while (($(now_ms) < deadline)); do
        LOCK_ADDR=$(lockers "$img") && [[ -n $LOCK_ADDR ]] && return 0
        sleep 0.2
    done
    return 1
}

# blocklisted ADDR: ADDR ("v1:", "v2:" or "any:" prefixes ignored) is on
# the OSD blocklist.
blocklisted() {
    local out
    out=$(c_ceph osd blocklist ls --format json 2>/dev/null) || return 1
    [[ $(pyj '(lambda n: n(sys.argv[2]) in [n(e["addr"]) for l in ds for e in l])(
        lambda a: a.split(":", 1)[1] if a.split(":", 1)[0] in ("v1", "v2", "any") else a)' \
        "$1" <<<"$out") == True ]]
}

# ---- running fio -----------------------------------------------------------

# fio_cmd NAME MODE IMAGE TMO [FIO OPTIONS...]: set FIO_CMD to a fio command
# line for one job named NAME (JSON output in $TMP/NAME.json).  MODE:
# "lite" (LD_PRELOAD librbdlite) or "librbd" (the real librbd).
fio_cmd() {
    local name=$1 mode=$2 img=$3 tmo=$4
    shift 4
    local -a envs=(-u LD_PRELOAD)
    [[ $mode == lite ]] && envs=(LD_PRELOAD="$PRELOAD" "${SAN_ENV[@]}")
    FIO_CMD=(timeout -k 5 "$tmo" env "${envs[@]}" fio --output-format=json
        --output="$TMP/$name.json" --ioengine=rbd --clientname=admin
        --pool="$POOL" --rbdname="$img" --name="$name" "$@")
}

# fio_judge NAME RC EXPECT: judge a finished fio run (exit status RC, log
# $TMP/NAME.log; FIO_LAST=NAME).  On failure sets WHY and returns 1.
fio_judge() {
    local name=$1 rc=$2 expect=$3 log=$TMP/$1.log
    FIO_LAST=$name
    WHY=$(rbdl_fio_verdict "$rc" "$log" "$TMP/$name.json" "$expect") ||
        { WHY="fio $name: $WHY"; return 1; }
}

# fio_run NAME MODE IMAGE EXPECT [FIO OPTIONS...]: run fio in the
# foreground and judge it; on failure sets WHY (log: $TMP/NAME.log).
fio_run() {
    local name=$1 mode=$2 img=$3 expect=$4 rc
    shift 4
    fio_cmd "$name" "$mode" "$img" "$FIO_TMO" "$@"
    (cd -- "$TMP" && exec "${FIO_CMD[@]}") >"$TMP/$name.log" 2>&1
    rc=$?
    fio_judge "$name" "$rc" "$expect"
}

# fio_bg NAME MODE IMAGE TMO [FIO OPTIONS...]: start fio in the background;
# BGPID is the pid of its `timeout` wrapper (fio itself is its child).
fio_bg() {
    local name=$1 mode=$2 img=$3 tmo=$4
    shift 4
    fio_cmd "$name" "$mode" "$img" "$tmo" "$@"
    (cd -- "$TMP" && exec "${FIO_CMD[@]}") >"$TMP/$name.log" 2>&1 &
    BGPID=$!
    BG+=("$BGPID")
}

# bg_wait PID: wait for a background job; its exit status.  (stderr: no
# "Killed" job notices; `timeout` re-raises its child's fatal signal.)
bg_wait() {
    local rc p keep=()
    wait "$1" 2>/dev/null
    rc=$?
    for p in "${BG[@]}"; do
        [[ $p == "$1" ]] || keep+=("$p")
    done
    BG=("${keep[@]}")
    return "$rc"
}

# child_of PID: the (single) child process of PID, e.g. fio under timeout.
child_of() {
    local i c
    for ((i = 0; i < 50; i++)); do
        c=$(pgrep -P "$1" | head -n 1)
        [[ -n $c ]] && { echo "$c"; return 0; }
        sleep 0.1
    done
    return 1
}

# ---- 1. default features: librbdlite writes, librbd verifies ------------

t_default_rw() {
    local name=default-rw img=$UNIQ-dflt flags locks
    mkimage "$img" 256M
    local V=(--rw=randwrite --bsrange=4k-4m --offset=1M --size=200M
        --iodepth=16 --verify=crc32c)
    fio_run dflt-w lite "$img" wr "${V[@]}" --do_verify=1 ||
        { fail "$name" "$WHY" "$TMP/dflt-w.log"; return; }
    fio_run dflt-v librbd "$img" r "${V[@]}" --verify_only=1 ||
        { fail "$name" "verification by librbd: $WHY" "$TMP/dflt-v.log"; return; }
    omap_clean "$img" || { fail "$name" "$WHY" "$WHYLOG"; return; }
    flags=$(image_flags "$img")
    [[ -z $flags ]] || { fail "$name" "image flags: $flags"; return; }
    locks=$(lockers "$img") || { fail "$name" "rbd lock ls failed"; return; }
    [[ -z $locks ]] || { fail "$name" "lock still held after fio exited: $locks"; return; }
    pass "$name"
}

# ---- 2. writes and discards: object map and rbd diff ----------------------

t_discard_objmap() {
    local name=discard-objmap img=$UNIQ-disc info prefix osize got
    mkimage "$img" 256M
    local C=(--iodepth=16)
    # Objects are 4 MiB.  W1: objects 0-3; W2: 4-11 (then discarded
    # whole); W3: 12-23; W4: 30 (then partly discarded); W5: random small
    # writes into 40-47.
    local W1=(--rw=write --bsrange=4k-1m --offset=0 --size=16M --verify=crc32c)
    local W3=(--rw=randwrite --bsrange=4k-1m --offset=48M --size=48M --verify=crc32c)
    local W6=(--rw=write --bs=4k --offset=24M --size=4k --verify=crc32c)
    # (Jobs to be verified later run alone: fio seeds each job's data by
    # its position.  The others are chained in one fio with stonewall.)
    if ! { fio_run disc-w1 lite "$img" w "${C[@]}" "${W1[@]}" &&
        fio_run disc-w3 lite "$img" w "${C[@]}" "${W3[@]}" &&
        fio_run disc-w2 lite "$img" w "${C[@]}" --rw=write --bs=1m --offset=16M --size=32M \
            --name=disc-w4 --stonewall "${C[@]}" --rw=write --bs=256k --offset=120M --size=4M \
            --name=disc-w5 --stonewall "${C[@]}" --rw=randwrite --bsrange=4k-64k \
            --offset=160M --size=32M --number_ios=300; }; then
        fail "$name" "writing: $WHY" "$TMP/$FIO_LAST.log"
        return
    fi
    # T1: objects 4-11 whole; T2: 1 MiB inside object 30; T3: the tail of
    # object 30 (a truncate); T4: objects 50-53, never written.
    if ! fio_run disc-t1 lite "$img" t "${C[@]}" --rw=trim --bs=4m --offset=16M --size=32M \
        --name=disc-t2 --stonewall "${C[@]}" --rw=trim --bs=64k --offset=121M --size=1M \
        --name=disc-t3 --stonewall "${C[@]}" --rw=trim --bs=512k --offset=123M --size=1M \
        --name=disc-t4 --stonewall "${C[@]}" --rw=trim --bs=4m --offset=200M --size=16M; then
        fail "$name" "discarding: $WHY" "$TMP/$FIO_LAST.log"
        return
    fi
    # W6: rewrite 4 KiB of discarded object 6.
    fio_run disc-w6 lite "$img" w "${C[@]}" "${W6[@]}" ||
        { fail "$name" "rewriting: $WHY" "$TMP/disc-w6.log"; return; }

    omap_clean "$img" || { fail "$name" "$WHY" "$WHYLOG"; return; }

    info=$(c_rbd info --format json "$POOL/$img") || { fail "$name" "rbd info failed"; return; }
    prefix=$(pyj 'd["block_name_prefix"]' <<<"$info")
    osize=$(pyj 'd["object_size"]' <<<"$info")
    c_rados -p "$POOL" ls >"$TMP/rados-ls" 2>&1 || { fail "$name" "rados ls failed" "$TMP/rados-ls"; return; }
    c_rbd diff --whole-object --format json "$POOL/$img" >"$TMP/diff.json" 2>"$TMP/diff.err" ||
        { fail "$name" "rbd diff failed" "$TMP/diff.err"; return; }
    if ! got=$(python3 - "$TMP/rados-ls" "$TMP/diff.json" "$prefix." "$osize" <<'EOF'
import json, sys
ls_path, diff_path, prefix, osize = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
in_rados = set()
for line in open(ls_path):
    line = line.strip()
    if line.startswith(prefix):
        in_rados.add(int(line[len(prefix):], 16))
in_diff = set()
for e in json.load(open(diff_path)):
    if e.get("exists") not in ("true", True):
        continue
    first, end = e["offset"] // osize, (e["offset"] + e["length"] + osize - 1) // osize
    in_diff.update(range(first, end))
must = set(range(0, 4)) | {6} | set(range(12, 24)) | {30}
allowed = must | set(range(40, 48))
fmt = lambda s: ",".join(str(x) for x in sorted(s)) or "-"
bad = []
if in_diff != in_rados:
    bad.append("rbd diff lists objects %s, RADOS has %s (only in diff: %s; only in RADOS: %s)"
               % (fmt(in_diff), fmt(in_rados), fmt(in_diff - in_rados), fmt(in_rados - in_diff)))
if must - in_rados:
    bad.append("objects missing from RADOS: %s" % fmt(must - in_rados))
if in_rados - allowed:
    bad.append("objects that should not exist: %s" % fmt(in_rados - allowed))
if bad:
    print("; ".join(bad))
    sys.exit(1)
print("%d objects" % len(in_rados))
EOF
    ); then
        fail "$name" "$got"
        return
    fi

    # The real librbd: zeros where data was discarded, the rest verifies.
    local Z=(--rw=read --bs=64k --iodepth=16 --verify=pattern --verify_pattern=0x00)
    if ! fio_run disc-z1 librbd "$img" r "${Z[@]}" --offset=16M --size=8M \
        --name=disc-z2 "${Z[@]}" --offset=28M --size=20M \
        --name=disc-z3 "${Z[@]}" --offset=121M --size=1M \
        --name=disc-z4 "${Z[@]}" --offset=123M --size=1M \
        --name=disc-z5 "${Z[@]}" --offset=200M --size=16M; then
        fail "$name" "discarded range does not read as zeros through librbd: $WHY" "$TMP/$FIO_LAST.log"
        return
    fi
    if ! { fio_run disc-v1 librbd "$img" r "${C[@]}" "${W1[@]}" --verify_only=1 &&
        fio_run disc-v3 librbd "$img" r "${C[@]}" "${W3[@]}" --verify_only=1 &&
        fio_run disc-v6 librbd "$img" r "${C[@]}" "${W6[@]}" --verify_only=1; }; then
        fail "$name" "verification by librbd: $WHY" "$TMP/$FIO_LAST.log"
        return
    fi
    pass "$name ($got)"
}

# ---- 3. librbd and librbdlite writing one image at once -------------------

# handoffs LOG_LIBRBD LOG_LITE: from fio's per-I/O latency logs (epoch ms,
# completion time), count lock hand-offs: changes of writer between
# completions at strictly increasing times.  Prints "A B" = hand-offs
# librbd->lite and lite->librbd.
handoffs() {
    python3 - "$1" "$2" <<'EOF'
import sys
ev = []
for who, path in (("librbd", sys.argv[1]), ("lite", sys.argv[2])):
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 3 and f[2] == "1":
            ev.append((int(f[0]), who))
ev.sort()
runs = []  # [who, first_ms, last_ms]
for t, who in ev:
    if runs and runs[-1][0] == who:
        runs[-1][2] = t
    else:
        runs.append([who, t, t])
to_lite = to_librbd = 0
for a, b in zip(runs, runs[1:]):
    if a[2] < b[1]:
        if b[0] == "lite":
            to_lite += 1
        else:
            to_librbd += 1
print(to_lite, to_librbd)
EOF
}

t_concurrent() {
    local name=concurrent img=$UNIQ-conc pl pr rcl rcr ho maxl ml mr hl hb
    mkimage "$img" 256M --data-pool "$DATA_POOL"
    # About 10 s each (2 MiB/s, 20 MiB), each in its own half.
    local C=(--rw=randwrite --bsrange=4k-64k --iodepth=16 --verify=crc32c
        --io_size=20M --size=128M)
    local LOGOPT=(--log_unix_epoch=1 --rate=2m --do_verify=1)
    fio_bg conc-librbd librbd "$img" 120 "${C[@]}" --offset=0 "${LOGOPT[@]}" \
        --write_lat_log="$TMP/conc-librbd"
    pl=$BGPID
    fio_bg conc-lite lite "$img" 120 "${C[@]}" --offset=128M "${LOGOPT[@]}" \
        --write_lat_log="$TMP/conc-lite"
    pr=$BGPID
    bg_wait "$pl"
    rcl=$?
    bg_wait "$pr"
    rcr=$?
    if ! fio_judge conc-librbd "$rcl" wr; then
        fail "$name" "librbd writer: $WHY" "$TMP/conc-librbd.log"
        fail "$name-no-stall" "not judged (the concurrent run failed)"
        return
    fi
    if ! fio_judge conc-lite "$rcr" wr; then
        fail "$name" "librbdlite writer: $WHY" "$TMP/conc-lite.log"
        fail "$name-no-stall" "not judged (the concurrent run failed)"
        return
    fi
    maxl=$(for f in conc-librbd conc-lite; do
        pyj 'int(max(j["write"]["lat_ns"]["max"] for j in d["jobs"]) / 1e6)' <"$TMP/$f.json"
    done | tr '\n' ' ')
    read -r ml mr <<<"$maxl"

    if fio_run conc-lite-by-librbd librbd "$img" r "${C[@]}" --offset=128M --verify_only=1; then
        if fio_run conc-librbd-by-lite lite "$img" r "${C[@]}" --offset=0 --verify_only=1; then
            if ho=$(handoffs "$TMP/conc-librbd_lat.1.log" "$TMP/conc-lite_lat.1.log"); then
                read -r hl hb <<<"$ho"
                if ((hl < 1 || hb < 1)); then
                    fail "$name" "the lock did not move both ways: $hl hand-offs librbd->librbdlite, $hb librbdlite->librbd"
                elif ! omap_clean "$img"; then
                    fail "$name" "$WHY" "$WHYLOG"
                else
                    pass "$name ($hl hand-offs to librbdlite, $hb to librbd)"
                fi
            else
                fail "$name" "cannot read fio's latency logs ($ho)"
            fi
        else
            fail "$name" "librbdlite verifying librbd's half: $WHY" "$TMP/conc-librbd-by-lite.log"
        fi
    else
        fail "$name" "librbd verifying librbdlite's half: $WHY" "$TMP/conc-lite-by-librbd.log"
    fi

    if ((mr >= STALL_MAX_MS && mr > 2 * ml)); then
        fail "$name-no-stall" "longest write: librbd ${ml} ms, librbdlite ${mr} ms (limit ${STALL_MAX_MS} ms, or twice librbd's)"
    else
        pass "$name-no-stall (longest write: librbd ${ml} ms, librbdlite ${mr} ms)"
    fi
}

# ---- 4. rbd snap create / rbd resize while librbdlite holds the lock -------

t_maint_ops() {
    local name=maint-ops img=$UNIQ-maint pid rc t0 ts tr size
    mkimage "$img" 256M
    fio_bg maint-w lite "$img" 60 --rw=randwrite --bsrange=4k-256k --iodepth=16 \
        --rate=40m --runtime=35 --time_based
    pid=$BGPID
    if ! wait_locked "$img" "$LOCK_WAIT"; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "librbdlite did not take the lock within ${LOCK_WAIT}s" "$TMP/maint-w.log"
        return
    fi
    sleep 2
    t0=$(now_ms)
    if ! timeout -k 5 "$MAINT_TMO" env -u LD_PRELOAD rbd --client_mount_timeout 30 \
        snap create --no-progress "$POOL/$img@s1" >"$TMP/maint-snap.log" 2>&1; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "rbd snap create failed or took over ${MAINT_TMO}s while librbdlite wrote" "$TMP/maint-snap.log"
        return
    fi
    ts=$(($(now_ms) - t0))
    sleep 1
    t0=$(now_ms)
    if ! timeout -k 5 "$MAINT_TMO" env -u LD_PRELOAD rbd --client_mount_timeout 30 \
        resize --no-progress --size 512M "$POOL/$img" >"$TMP/maint-resize.log" 2>&1; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "rbd resize failed or took over ${MAINT_TMO}s while librbdlite wrote" "$TMP/maint-resize.log"
        return
    fi
    tr=$(($(now_ms) - t0))
    if ! kill -0 "$pid" 2>/dev/null; then
        bg_wait "$pid"
        rc=$?
        fio_judge maint-w "$rc" w
        fail "$name" "the librbdlite writer ended before the operations finished: ${WHY:-}" "$TMP/maint-w.log"
        return
    fi
    bg_wait "$pid"
    rc=$?
    fio_judge maint-w "$rc" w || { fail "$name" "librbdlite writer: $WHY" "$TMP/maint-w.log"; return; }
    omap_clean "$img" || { fail "$name" "$WHY" "$WHYLOG"; return; }
    omap_clean "$img@s1" || { fail "$name" "$WHY" "$WHYLOG"; return; }
    size=$(c_rbd info --format json "$POOL/$img" | pyj 'd["size"]')
    [[ $size == $((512 * MiB)) ]] || { fail "$name" "size after resize: $size"; return; }
    size=$(c_rbd info --format json "$POOL/$img@s1" | pyj 'd["size"]')
    [[ $size == $((256 * MiB)) ]] || { fail "$name" "snapshot size: $size"; return; }
    pass "$name (snap create ${ts} ms, resize ${tr} ms)"
}

# ---- 5./6. a killed lock owner is taken over -------------------------------

t_kill_lite() {
    local name=kill-lite img=$UNIQ-klite pid f addr t0 el rc
    mkimage "$img" 64M
    # --thread: one process to kill.
    fio_bg klite-w lite "$img" 120 --thread --rw=randwrite --bs=4k --iodepth=16 \
        --rate=10m --runtime=60 --time_based
    pid=$BGPID
    sleep 3
    if ! f=$(child_of "$pid") || ! kill -0 "$f" 2>/dev/null; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "the librbdlite writer is not running" "$TMP/klite-w.log"
        return
    fi
    if ! wait_locked "$img" "$LOCK_WAIT"; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "no lock on the image ${LOCK_WAIT}s after librbdlite started writing" "$TMP/klite-w.log"
        return
    fi
    addr=$LOCK_ADDR
    kill -KILL "$f"
    bg_wait "$pid"
    t0=$(now_ms)
    timeout -k 5 "$TAKEOVER_TMO" env -u LD_PRELOAD rbd --client_mount_timeout 30 \
        bench --io-type write --io-total 4M "$POOL/$img" >"$TMP/klite-bench.log" 2>&1
    rc=$?
    el=$((($(now_ms) - t0) / 1000))
    ((rc == 0)) || { fail "$name" "rbd bench after the kill: $(rbdl_rc_text "$rc") after ${el}s" "$TMP/klite-bench.log"; return; }
    blocklisted "$addr" || { fail "$name" "the dead librbdlite client $addr is not on the OSD blocklist"; return; }
    [[ -z $(lockers "$img") ]] || { fail "$name" "lock still held after rbd bench exited"; return; }
    omap_clean "$img" || { fail "$name" "$WHY" "$WHYLOG"; return; }
    pass "$name (librbd took over in ${el} s, blocklisted $addr)"
}

t_kill_librbd() {
    local name=kill-librbd img=$UNIQ-klibrbd pid f addr t0 el
    mkimage "$img" 64M
    timeout -k 5 120 env -u LD_PRELOAD rbd --client_mount_timeout 30 \
        bench --io-type write --io-total 10G "$POOL/$img" >"$TMP/klibrbd-bench.log" 2>&1 &
    pid=$!
    BG+=("$pid")
    sleep 3
    if ! f=$(child_of "$pid") || ! kill -0 "$f" 2>/dev/null; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "rbd bench is not running" "$TMP/klibrbd-bench.log"
        return
    fi
    if ! wait_locked "$img" "$LOCK_WAIT"; then
        kill_bg "$pid"
        bg_wait "$pid"
        fail "$name" "no lock on the image ${LOCK_WAIT}s after rbd bench started writing" "$TMP/klibrbd-bench.log"
        return
    fi
    addr=$LOCK_ADDR
    kill -KILL "$f"
    bg_wait "$pid"
    local V=(--rw=write --bs=4k --size=1M --iodepth=16 --verify=crc32c)
    t0=$(now_ms)
    fio_cmd klibrbd-w lite "$img" "$TAKEOVER_TMO" "${V[@]}" --do_verify=1
    (cd -- "$TMP" && exec "${FIO_CMD[@]}") >"$TMP/klibrbd-w.log" 2>&1
    fio_judge klibrbd-w $? wr
    local ok=$?
    el=$((($(now_ms) - t0) / 1000))
    ((ok == 0)) || { fail "$name" "librbdlite writer after the kill (${el}s): $WHY" "$TMP/klibrbd-w.log"; return; }
    blocklisted "$addr" || { fail "$name" "the dead librbd client $addr is not on the OSD blocklist"; return; }
    [[ -z $(lockers "$img") ]] || { fail "$name" "lock still held after the librbdlite writer exited"; return; }
    fio_run klibrbd-v librbd "$img" r "${V[@]}" --verify_only=1 ||
        { fail "$name" "verification by librbd: $WHY" "$TMP/klibrbd-v.log"; return; }
    omap_clean "$img" || { fail "$name" "$WHY" "$WHYLOG"; return; }
    pass "$name (librbdlite took over in ${el} s, blocklisted $addr)"
}

# ---- 7. journaling: the system's librbd runs librbdlite's writes --------------

t_journaling() {
    local name=journaling img=$UNIQ-jrnl flags n
    mkimage "$img" 64M --image-feature layering,exclusive-lock,journaling
    local V=(--rw=write --bs=64k --size=4M --iodepth=8 --verify=crc32c)
    local L=(--rw=randwrite --bs=4k --offset=8M --size=4M --iodepth=8 --verify=crc32c)
    fio_run jrnl-librbd-w librbd "$img" w "${V[@]}" --do_verify=0 ||
        { fail "$name" "librbd writing the journaled image: $WHY" "$TMP/jrnl-librbd-w.log"; return; }
    fio_run jrnl-lite-r lite "$img" r "${V[@]}" --verify_only=1 ||
        { fail "$name" "librbdlite reading (verifying librbd's data): $WHY" "$TMP/jrnl-lite-r.log"; return; }
    fio_run jrnl-lite-w lite "$img" w "${L[@]}" --do_verify=1 ||
        { fail "$name" "librbdlite writing and verifying the journaled image: $WHY" "$TMP/jrnl-lite-w.log"; return; }
    fio_run jrnl-librbd-v librbd "$img" r "${L[@]}" --verify_only=1 ||
        { fail "$name" "librbd verifying librbdlite's data: $WHY" "$TMP/jrnl-librbd-v.log"; return; }
    fio_run jrnl-librbd-v0 librbd "$img" r "${V[@]}" --verify_only=1 ||
        { fail "$name" "librbd verifying its own data after librbdlite's: $WHY" "$TMP/jrnl-librbd-v0.log"; return; }
    # librbdlite's 1024 writes are in the journal, as librbd's 64 are
    n=$(timeout -k 5 120 env -u LD_PRELOAD "$PY" "$HERE/pyrbd_script.py" journal-events "$img" 2>"$TMP/jrnl-ev.err" |
        awk -F'[(,)]' '$1 == "AioWrite" && $2 >= 8388608 && $2 < 12582912 && $3 == 4096' | wc -l)
    ((n == 1024)) || { fail "$name" "journal entries of librbdlite's 4 KiB writes at [8M, 12M): $n, want 1024" "$TMP/jrnl-ev.err"; return; }
    [[ -z $(lockers "$img") ]] || { fail "$name" "a lock is left on the journaled image"; return; }
    flags=$(image_flags "$img")
    [[ -z $flags ]] || { fail "$name" "image flags: $flags"; return; }
    pass "$name (librbdlite's writes journaled by the system's librbd)"
}

t_default_rw
t_discard_objmap
t_concurrent
t_maint_ops
t_kill_lite
t_kill_librbd
t_journaling

rbdl_summary
