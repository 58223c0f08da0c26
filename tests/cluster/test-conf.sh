#!/bin/bash
# test-conf.sh - the settings librbd reads per image, on the data path of
# librbdlite: rbd_skip_partial_discard and rbd_discard_granularity_bytes,
# layered as librbd 16.2 layers them (client configuration < pool
# override `rbd config pool set` < image override `rbd config image set`),
# applied at open and again when the image is refreshed.
#
# Differential: every scenario runs one cloneop script on twin images,
# one through librbdlite (cloneop-lite) and one through the real librbd
# (cloneop-librbd).  The outputs must be equal, and on both sides each
# discarded range must come back as the scenario says: zeroed (Z) or kept
# (K, skipped as a partial discard).  The probe writes 1 MiB of data, then
# discards 8 KiB at 4 KiB (inside one 16 KiB unit), 16 KiB at 64 KiB (one
# 16 KiB unit inside a 64 KiB one) and 64 KiB at 128 KiB (one 64 KiB
# unit), and reads the three ranges back.
#
# A writesame of zeroes follows the client's rbd_discard_on_zeroed_write_same
# (librbd takes no pool or image override of it): discarded by default,
# written (objects allocated) when false; rbd diff's allocated extents are
# compared.
#
# An image with a QoS limit must get librbdlite's diagnostic that it does
# not throttle (a debug-level line: RBDLITE_DEBUG=1).  Scenarios use their own pool (created and deleted here), so pool
# overrides never leak into other tests.
#
# Needs the test cluster's environment (make check, or
# tests/cluster/cluster-test.sh, sets it) and the cloneop programs.  Exit
# status 0 when every check passes.
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/testlib.sh
. "$HERE/testlib.sh"
rbdl_need_cluster
rbdl_need_cmds rbd ceph timeout
rbdl_find_python || die "no python3 with the rados and rbd modules"
rbdl_twins cloneop
rbdl_need_progs "$LITE" "$REF"
TMO=${RBDLITE_CONF_TIMEOUT:-120}
rbdl_workdir conf
CP=rbdlite-conf-$$
CP_MADE=0
BG=()

cleanup() {
    rbdl_kill_bg
    ((CP_MADE)) && ceph osd pool rm "$CP" "$CP" \
        --yes-i-really-really-mean-it >/dev/null 2>&1
    rbdl_rm_workdir
}
rbdl_traps

ceph osd pool create "$CP" 8 >"$TMP/pool.log" 2>&1 &&
    CP_MADE=1 &&
    ceph osd pool application enable "$CP" rbd >>"$TMP/pool.log" 2>&1 &&
    timeout -k 5 "$TMO" rbd pool init "$CP" >>"$TMP/pool.log" 2>&1 ||
    { cat "$TMP/pool.log" >&2; die "cannot create pool $CP"; }

PROBE=(write 0 1M 7 discard 4K 8K discard 64K 16K discard 128K 64K
    read 4K 8K read 64K 16K read 128K 64K)

# zk FILE: one letter per "read OFF LEN" line: Z if the range read back
# as zeros, K if not.
zk() {
    "$PY" -c '
import re, sys
units = {"K": 1024, "M": 1 << 20}
out = ""
for line in open(sys.argv[1]):
    m = re.match(r"read (\S+) (\S+) = (-?\d+) .*zeros=(\d+)", line)
    if not m:
        continue
    n = m.group(2)
    ln = int(n[:-1]) * units[n[-1]] if n[-1] in units else int(n)
    out += "Z" if int(m.group(4)) == ln else "K"
print(out)' "$1"
}

show() { head -n "${2:-20}" "$1" | sed 's/^/    | /'; }

# twins N [rbd create options]: images cN-l and cN-r.
twins() {
    local n=$1
    shift
    rbd create --size 4M "$@" "$CP/c$n-l" >"$TMP/create.log" 2>&1 &&
        rbd create --size 4M "$@" "$CP/c$n-r" >>"$TMP/create.log" 2>&1 ||
        { fail "c$n: rbd create"; show "$TMP/create.log"; return 1; }
}

# judge LABEL N WANT GOT_REF GOT_LITE WHAT: each side's result (WHAT
# names it) must be WANT, and the two outputs (r.out, l.out) equal.
judge() {
    local label=$1 n=$2 want=$3 gr=$4 gl=$5 what=$6
    if [[ $gr != "$want" ]]; then
        fail "$label: librbd: $what $gr, expected $want"
        show "$TMP/r.out"
        show "$TMP/r.err" 5
    elif [[ $gl != "$want" ]]; then
        fail "$label: librbdlite: $what $gl, expected $want (librbd: $gr)"
        show "$TMP/l.out"
        show "$TMP/l.err" 5
    elif ! cmp -s "$TMP/l.out" "$TMP/r.out"; then
        fail "$label: outputs differ (< librbd, > librbdlite)"
        diff "$TMP/r.out" "$TMP/l.out" | show -
    else
        pass "$label: $what $gl on both (c$n)"
    fi
}

# check LABEL N EXPECT: the expected Z/K letters on both sides.
check() {
    judge "$1" "$2" "$3" "$(zk "$TMP/r.out")" "$(zk "$TMP/l.out")" "read back"
}

# on_twins N [ENV=VALUE...] -- [CMD...]: the probe (or CMD) on the twins
# cN-r and cN-l with the environment given; outputs in r.out and l.out.
on_twins() {
    local n=$1 env=()
    shift
    while (($#)) && [[ $1 != -- ]]; do
        env+=("$1")
        shift
    done
    shift
    (($#)) || set -- "${PROBE[@]}"
    op_env "$REF" "c$n-r" "${env[@]}" -- "$@" >"$TMP/r.out" 2>"$TMP/r.err"
    op_env "$LITE" "c$n-l" "${env[@]}" -- "$@" >"$TMP/l.out" 2>"$TMP/l.err"
}

# scen LABEL EXPECT N [ENV=VALUE...] -- [CMD...]: on_twins, then check.
scen() {
    local label=$1 want=$2 n=$3
    shift 3
    on_twins "$n" "$@"
    check "$label" "$n" "$want"
}

# op_env BIN IMAGE [ENV=VALUE...] -- CMD...: cloneop on $CP/IMAGE with
# the environment given.
op_env() {
    local bin=$1 img=$2 env=()
    shift 2
    while [[ $1 != -- ]]; do
        env+=("$1")
        shift
    done
    shift
    env "${env[@]}" timeout -k 5 "$TMO" "$bin" "$CP" "$img" "$@"
}

# image_conf N KEY VALUE: `rbd config image set` on both twins.
image_conf() {
    rbd config image set "$CP/c$1-l" "$2" "$3" >"$TMP/cfg.log" 2>&1 &&
        rbd config image set "$CP/c$1-r" "$2" "$3" >>"$TMP/cfg.log" 2>&1 ||
        { fail "c$1: rbd config image set $2 $3"; show "$TMP/cfg.log"; return 1; }
}

# raw_image_conf N KEY VALUE: the override written straight into the
# headers' omap (as cls rbd's metadata_set stores it), bypassing the
# validation of `rbd config image set`.
raw_image_conf() {
    local s
    for s in l r; do
        "$PY" - "$CP" "c$1-$s" "$2" "$3" >>"$TMP/cfg.log" 2>&1 <<'EOF' || {
import os, rados, rbd, struct, sys
pool, name, key, val = sys.argv[1:5]
with rados.Rados(conffile=os.environ["CEPH_CONF"]) as cl:
    with cl.open_ioctx(pool) as io:
        with rbd.Image(io, name, read_only=True) as im:
            iid = im.id()
        v = val.encode()
        with rados.WriteOpCtx() as op:
            io.set_omap(op, ("metadata_conf_" + key,),
                        (struct.pack("<I", len(v)) + v,))
            io.operate_write_op(op, "rbd_header." + iid)
EOF
            fail "c$1: raw override $2=$3"
            show "$TMP/cfg.log"
            return 1
        }
    done
}

pool_conf() {
    rbd config pool set "$CP" "$1" "$2" >"$TMP/cfg.log" 2>&1 ||
        { fail "rbd config pool set $1 $2"; show "$TMP/cfg.log"; return 1; }
}
pool_conf_rm() {
    rbd config pool remove "$CP" "$1" >"$TMP/cfg.log" 2>&1 ||
        { fail "rbd config pool remove $1"; show "$TMP/cfg.log"; return 1; }
}

# ---- client configuration
twins 1 && scen "defaults (64 KiB units)" KKZ 1 --
twins 2 && scen "client rbd_skip_partial_discard=false" ZZZ 2 \
    CEPH_ARGS=--rbd_skip_partial_discard=false --
twins 3 && scen "client rbd_discard_granularity_bytes=16K" KZZ 3 \
    CEPH_ARGS=--rbd_discard_granularity_bytes=16384 --

# ---- image overrides (default features and layering only)
twins 4 && image_conf 4 rbd_skip_partial_discard false &&
    scen "image override skip_partial_discard=false" ZZZ 4 --
twins 5 --image-feature layering &&
    image_conf 5 rbd_discard_granularity_bytes 16384 &&
    scen "image override granularity 16K (layering only)" KZZ 5 --
twins 6 && image_conf 6 rbd_skip_partial_discard true &&
    scen "image override skip=true over client skip=false" KKZ 6 \
        CEPH_ARGS=--rbd_skip_partial_discard=false --
twins 7 && raw_image_conf 7 rbd_discard_granularity_bytes 1000 &&
    scen "invalid image override (1000) is ignored" KZZ 7 \
        CEPH_ARGS=--rbd_discard_granularity_bytes=16384 --
twins 8 && raw_image_conf 8 rbd_skip_partial_discard maybe &&
    scen "unparsable image override is ignored" KKZ 8 --
# rbd_discard_granularity_bytes is an integer option: "16K" is 16000
# there (SI), not a power of two, so refused.
twins 15 && raw_image_conf 15 rbd_discard_granularity_bytes 16K &&
    scen "image override \"16K\" (16000) is refused" KKZ 15 --

# A QoS limit: librbd throttles, librbdlite does not and says so at open
# when asked for its diagnostics (RBDLITE_DEBUG=1).
if twins 16 && image_conf 16 rbd_qos_iops_limit 100000 &&
    scen "image with a QoS limit" KKZ 16 RBDLITE_DEBUG=1 --; then
    if grep -q 'rbd_qos_iops_limit is set, but librbdlite does not throttle' \
        "$TMP/l.err"; then
        pass "QoS limit reported as not enforced"
    else
        fail "QoS limit: no diagnostic from librbdlite"
        show "$TMP/l.err"
    fi
fi

# ---- pool overrides, and image over pool
if pool_conf rbd_skip_partial_discard false; then
    twins 9 && scen "pool override skip_partial_discard=false" ZZZ 9 --
    twins 10 && image_conf 10 rbd_skip_partial_discard true &&
        scen "image override beats pool override" KKZ 10 --
    pool_conf_rm rbd_skip_partial_discard
fi
if pool_conf rbd_discard_granularity_bytes 16384; then
    twins 11 && scen "pool override granularity 16K" KZZ 11 --
    # librbd merges the image's keys over the pool's: an invalid image
    # value shadows the pool's and is then refused, leaving the client's.
    twins 12 && raw_image_conf 12 rbd_discard_granularity_bytes 1000 &&
        scen "invalid image override shadows the pool's" KKZ 12 --
    pool_conf_rm rbd_discard_granularity_bytes
fi

# ---- changes while the image is open
# rbd_metadata_set by the image's own handle (as lock owner on a
# default-feature image), then the probe's discards.
twins 13 && scen "own rbd_metadata_set conf_rbd_skip_partial_discard" ZZZ 13 -- \
    write 0 1M 7 meta conf_rbd_skip_partial_discard false \
    discard 4K 8K discard 64K 16K discard 128K 64K \
    read 4K 8K read 64K 16K read 128K 64K

# `rbd config image set` by another client while the image is open: the
# header update makes the open image refresh before its next request, and
# discards from then on use the new granularity (layering only: no lock
# hand-over in between).  The read after the change is that next request:
# librbd takes a discard's granularity when the call is made, before its
# dispatch refreshes the image, so a discard as the very first request
# after the change would still use the old value there (librbdlite
# refreshes first); the contract tested is the state after a refresh.
open_change() {
    local bin=$1 img=$2 out=$3 go=$3.go pid
    rm -f "$out" # no earlier "waiting" line (rbdl_await_waiting)
    op_env "$bin" "$img" -- write 0 1M 7 discard 64K 16K read 64K 16K \
        waitfile "$go" 90 read 0 4K discard 64K 16K read 64K 16K \
        >"$out" 2>"$out.err" &
    pid=$!
    BG+=("$pid")
    rbdl_await_waiting "$out" "$pid"
    rbd config image set "$CP/$img" rbd_discard_granularity_bytes 16384 \
        >"$out.cfg" 2>&1 || echo "config set failed: $(tail -1 "$out.cfg")" >>"$out"
    touch "$go"
    wait "$pid"
}
if twins 14 --image-feature layering; then
    open_change "$REF" c14-r "$TMP/r.out"
    open_change "$LITE" c14-l "$TMP/l.out"
    sed -i "s|$TMP/[lr]\.out\.go|GO|" "$TMP/l.out" "$TMP/r.out"
    check "rbd config image set while open (refresh)" 14 KKZ
fi

# ---- rbd_discard_on_zeroed_write_same: a writesame of zeroes discards
# (objects wholly covered are removed: nothing listed by a whole-object
# diff) by default, and writes the zeroes, allocating, when the option is
# false: thick provisioning (ceph-csi, qemu's preallocation=full) relies on
# it.  Each image is 4 MiB, one object; the diff lists the allocated
# extents, and the two sides' outputs must be equal.
# ws_scen LABEL N WANT [ENV=VALUE...] -- CMD...: WANT: the number of
# allocated extents the final whole-object diff must list.
ws_scen() {
    local label=$1 n=$2 want=$3
    shift 3
    on_twins "$n" "$@" diff - 0 size 0 1
    judge "$label" "$n" "$want" \
        "$(grep -cE '^  [0-9]+ [0-9]+ 1$' "$TMP/r.out")" \
        "$(grep -cE '^  [0-9]+ [0-9]+ 1$' "$TMP/l.out")" "allocated extents:"
}
WS_NO=CEPH_ARGS=--rbd_discard_on_zeroed_write_same=false
twins 20 && ws_scen "zeroed writesame over written data discards" 20 0 \
    -- write 0 4M 7 zerosame 0 4M 512 read 0 4M
twins 21 && ws_scen "zeroed aio writesame (4 MiB pattern) discards" 21 0 \
    -- write 0 4M 7 aiozerosame 0 4M 4M read 0 4M
twins 22 && ws_scen "client rbd_discard_on_zeroed_write_same=false allocates" 22 1 \
    "$WS_NO" -- zerosame 0 4M 512 read 0 4M
twins 23 && ws_scen "the same with the aio form" 23 1 \
    "$WS_NO" -- aiozerosame 0 4M 512 read 0 4M
twins 24 && ws_scen "false, over written data: zeroes written" 24 1 \
    "$WS_NO" -- write 0 4M 7 zerosame 0 4M 4096 read 0 4M
# Not an option librbd takes from pool or image metadata (rbd config
# refuses to set it; one written into the header is ignored).
twins 25 && raw_image_conf 25 rbd_discard_on_zeroed_write_same false &&
    ws_scen "an image override (written raw) is ignored" 25 0 \
        -- write 0 4M 7 zerosame 0 4M 512 read 0 4M
twins 26 && raw_image_conf 26 rbd_discard_on_zeroed_write_same true &&
    ws_scen "so is one of true over the client's false" 26 1 \
        "$WS_NO" -- zerosame 0 4M 512 read 0 4M
twins 27 && ws_scen "partial zeroed writesame zeroes inside the object" 27 1 \
    -- write 0 4M 7 zerosame 4K 12K 4K read 0 64K read 0 4M
twins 28 && ws_scen "a non-zero pattern is written, not discarded" 28 1 \
    -- writesame 0 4M 512 9 read 0 4M

rbdl_summary
