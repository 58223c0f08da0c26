#!/bin/bash
# test-featapi.sh - rbd_update_features, rbd_rebuild_object_map,
# rbd_sparsify(_with_progress) and the quiesce watchers
# (rbd_quiesce_watch / unwatch / complete), differentially: the same
# command sequence runs through featapi-lite (librbdlite) and
# featapi-librbd (the real librbd) on twin images; every call's return
# value and the progress callback's calls must be the same line for line,
# and key errnos are asserted too.  Then the twins are compared with the
# rbd CLI and rados: `rbd info --format json` of HEAD and every snapshot
# (minus names, ids and timestamps: features and flags), `rbd object-map
# check` (no "object map error"), `rbd diff` (HEAD, --from-snap, whole
# object), `rbd export | md5sum` of HEAD and every snapshot, and the data
# objects (`rados ls`, names after the prefix, with their sizes).
#
# Cases:
#  feat:   feature toggling sequences on a written image (object-map and
#          fast-diff interlocked, exclusive-lock dependencies, deep-flatten
#          disable only, immutable and internal features refused,
#          journaling switched by the system's librbd for librbdlite, and
#          librbdlite's writes and feature changes run by it while it is
#          on),
#          with a snapshot (snapshot maps created, flags on every view),
#          read-only and snapshot opens (-EROFS), layering-only images;
#          the lock follows: `rbd lock ls` after writes on the same open;
#  rebuild: after the map was invalidated (feature off and on) and
#          corrupted behind librbd's back (a data object removed, one
#          added with rados), at HEAD and at a snapshot, a cancelled
#          rebuild (the callback's negative value is returned, nothing is
#          saved, the flags stay), no object map (-EINVAL), read-only
#          (-EROFS), a map longer than the image (its tail dropped);
#  sparsify: zero runs, all-zero objects, zeroed tails, with a snapshot
#          (its data kept), a clone (objects in the overlap are zeroed,
#          not removed), bad sparse sizes (-EINVAL), snapshot and read-only
#          opens (-EROFS), a cancelled run;
#  quiesce: a process of ours holds the image open with two quiesce
#          watchers while `rbd snap create` runs: the snapshot waits for
#          rbd_quiesce_complete (its duration), callbacks come in order
#          (quiesce, complete, unquiesce), a 7 s answer survives the
#          notifier's 5 s timeout and retry (callbacks called once), a
#          watcher's error makes `rbd snap create` fail with it and leaves
#          no snapshot, with the exclusive lock held by the watcher's
#          process too; the same with this open's own rbd_snap_create2;
#          handle checks on librbdlite only (librbd takes a
#          handle for a pointer and crashes on a bad one).
#
#  striped: a data pool and striping v2 (1 MiB objects, 64 KiB x 4):
#          object map off and on, rebuild, sparsify.
#
# Needs CEPH_CONF, RBDLITE_TEST_POOL and RBDLITE_TEST_DATA_POOL (fails,
# never skips, without them),
# rbd and rados.  Prints "N passed, M failed" last; exits non-zero on any
# failure.

set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/testlib.sh"

rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL RBDLITE_TEST_DATA_POOL
rbdl_need_cmds rbd rados md5sum diff sed sort
rbdl_twins featapi
rbdl_need_progs "$LITE" "$REF"
PY=/usr/bin/python3
[[ -x $PY ]] || die "no $PY"
rbdl_workdir featapi
PFX=featapi$$
rbdl_images_cleanup 60
export RBDLITE_QUIET=1

M4=4194304

# mk SUFFIX SIZE [OPTS]: twin images ${PFX}L-SUFFIX (librbdlite) and
# ${PFX}R-SUFFIX (librbd).
mk() {
	local s=$1 size=$2
	shift 2
	rbdl_mkimage "${PFX}L-$s" "$size" "$@"
	rbdl_mkimage "${PFX}R-$s" "$size" "$@"
}

# pair NAME SUFFIX [VAR=VALUE...] CMD...: the same commands on both twins
# (environment assignments first: FEATAPI_SNAP, FEATAPI_RO,
# FEATAPI_STOPVAL); outputs and exit statuses must match, both exit 0.
pair() {
	local name=$1 s=$2 envs=()
	shift 2
	while [[ ${1:-} == *=* ]]; do envs+=("$1"); shift; done
	timeout -k 5 300 env "${envs[@]}" "$LITE" "${PFX}L-$s" "$@" \
		>"$TMP/$name.lite" 2>"$TMP/$name.lite.err"
	local rl=$?
	timeout -k 5 300 env "${envs[@]}" "$REF" "${PFX}R-$s" "$@" \
		>"$TMP/$name.ref" 2>"$TMP/$name.ref.err"
	local rr=$?
	if [[ -n ${PAIR_SORT:-} ]]; then
		# Callbacks on other threads: compare the lines, not their order.
		sort -o "$TMP/$name.lite" "$TMP/$name.lite"
		sort -o "$TMP/$name.ref" "$TMP/$name.ref"
	fi
	if ! diff -u "$TMP/$name.ref" "$TMP/$name.lite" >"$TMP/$name.diff"; then
		fail "$name: librbdlite's results equal librbd's" \
			"outputs differ (- librbd, + librbdlite)"
		show_log "$TMP/$name.diff"
	elif ((rl != rr || rl != 0)); then
		fail "$name: librbdlite's results equal librbd's" \
			"exit status lite $rl, librbd $rr"
		show_log "$TMP/$name.lite.err"
	else
		pass "$name: librbdlite's results equal librbd's ($(wc -l <"$TMP/$name.ref") lines)"
	fi
}

# expect NAME LINE...: each LINE is in the output of pair NAME (both sides
# printed it, or the diff failed already).
expect() {
	local name=$1 l miss=()
	shift
	for l in "$@"; do
		grep -qxF -- "$l" "$TMP/$name.lite" || miss+=("$l")
	done
	if ((${#miss[@]})); then
		fail "$name: expected results" "missing: ${miss[*]}"
	else
		pass "$name: expected results (${#@} lines)"
	fi
}

# info IMAGE[@SNAP]: rbd info without names, ids and timestamps.
info() {
	c_rbd info --format json "$POOL/$1" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for k in ("name", "id", "block_name_prefix", "create_timestamp",
          "access_timestamp", "modify_timestamp", "timestamp"):
    d.pop(k, None)
d.get("parent", {}).pop("id", None)
print(json.dumps(d, sort_keys=True))'
}

# objects IMAGE: the image's data objects (name suffix) and sizes.
objects() {
	local prefix dpool
	read -r prefix dpool < <(c_rbd info --format json "$POOL/$1" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(d["block_name_prefix"], d.get("data_pool", ""))')
	dpool=${dpool:-$POOL}
	# A removed object with snapshot clones is still listed.
	rados -p "$dpool" ls | grep "^$prefix\." | sort | while read -r o; do
		echo "${o#"$prefix".} $(rados -p "$dpool" stat "$o" 2>/dev/null |
			sed 's/.* size //')"
	done
}

# view IMAGE SNAPS...: everything the CLI shows of one twin.
view() {
	local img=$1 sn
	shift
	for sn in "" "$@"; do
		local spec=$img${sn:+@$sn}
		echo "== ${sn:-HEAD}"
		info "$spec"
		c_rbd diff "$POOL/$spec"
		c_rbd diff --whole-object "$POOL/$spec"
		echo "md5 $(c_rbd export "$POOL/$spec" - 2>/dev/null | md5sum)"
		if c_rbd info "$POOL/$spec" | grep -q object-map; then
			c_rbd object-map check "$POOL/$spec" 2>&1 |
				grep -o "object map error.*" |
				sed 's/rbd_data\.[0-9a-f]*\./OBJ./' | sort
		fi
	done
	for sn in "$@"; do
		echo "== diff from $sn"
		c_rbd diff --from-snap "$sn" "$POOL/$img"
	done
	echo "== objects"
	objects "$img"
	echo "== locks"
	c_rbd lock ls "$POOL/$img" | wc -l
}

# compare SUFFIX SNAPS...: the twins look the same to the rbd CLI, and no
# object-map check reports an error.
compare() {
	compare_as "$1" "$@"
}

# compare_as LABEL SUFFIX SNAPS...: compare, reported as LABEL.
compare_as() {
	local s=$1 img=$2
	shift 2
	view "${PFX}L-$img" "$@" >"$TMP/view-$s.lite" 2>&1
	view "${PFX}R-$img" "$@" >"$TMP/view-$s.ref" 2>&1
	sed -i "s/${PFX}[LR]/${PFX}X/g" "$TMP/view-$s.lite" "$TMP/view-$s.ref"
	if diff -u "$TMP/view-$s.ref" "$TMP/view-$s.lite" >"$TMP/view-$s.diff"; then
		pass "$s: the twins are the same to rbd info/diff/export/object-map check and rados"
	else
		fail "$s: the twins are the same to rbd info/diff/export/object-map check and rados"
		show_log "$TMP/view-$s.diff"
	fi
	# librbd's own sparsify can leave a snapshot-era EXISTS_CLEAN for an
	# object it removed from HEAD; the twins must then agree (above) and
	# librbdlite may report nothing librbd does not.
	local el er
	el=$(grep -c "object map error" "$TMP/view-$s.lite")
	er=$(grep -c "object map error" "$TMP/view-$s.ref")
	if ((el == 0)); then
		pass "$s: rbd object-map check finds no error"
	elif ((el <= er)); then
		pass "$s: rbd object-map check finds only what it finds on librbd's twin ($er)"
	else
		fail "$s: rbd object-map check finds no error" "$el errors, librbd's twin $er"
		show_log "$TMP/view-$s.lite"
	fi
}

# ---- feature updates ----------------------------------------------------------
mk feat 64M
pair feat-seq feat \
	write 0 4096 1 -- write 8388608 4096 2 -- info -- \
	feat -fast-diff -- info -- feat -object-map -- info -- \
	feat +fast-diff -- info -- feat -exclusive-lock -- info -- \
	feat +object-map -- feat +exclusive-lock -- info -- \
	feat -object-map -- info -- feat -exclusive-lock -- info -- \
	write 0 4096 3 -- feat +exclusive-lock,object-map -- info -- \
	write 12582912 4096 4 -- feat -exclusive-lock -- \
	feat -deep-flatten -- info -- feat +deep-flatten -- feat -layering -- \
	feat +striping -- feat +non-primary -- feat -dirty-cache -- \
	feat -fast-diff,deep-flatten -- feat +0 -- feat -0 -- \
	feat +object-map -- info -- write 16777216 4096 5 -- rebuild -- info
expect feat-seq "feat -fast-diff = 0" "feat -object-map = -22" \
	"info features=0x25 (0) flags=0x0 (0)" "feat +fast-diff = 0" \
	"info features=0x3d (0) flags=0x3 (0)" "feat -exclusive-lock = -22" \
	"feat +exclusive-lock,object-map = 0" "feat +deep-flatten = -22" \
	"feat -layering = -22" "feat +non-primary = -22" "feat +0 = -22"
compare feat
c_rbd snap create "$POOL/${PFX}L-feat@s1" >/dev/null 2>&1
c_rbd snap create "$POOL/${PFX}R-feat@s1" >/dev/null 2>&1
pair feat-snap feat \
	write 0 4096 7 -- feat -object-map -- info -- feat +object-map -- \
	info -- write 20971520 4096 8 -- rebuild -- info
pair feat-snapmap feat FEATAPI_SNAP=s1 rebuild
compare feat s1
pair feat-ro feat FEATAPI_RO=1 feat -fast-diff -- feat +fast-diff
pair feat-atsnap feat FEATAPI_SNAP=s1 feat -fast-diff -- info
expect feat-ro "feat -fast-diff = -30"
expect feat-atsnap "feat -fast-diff = -30"
# Journaling: librbdlite has the system's librbd switch it (its own data
# path writes no journal), so the results are librbd's; while it is on,
# librbdlite's writes and feature changes run on a real librbd handle of
# the image (test-journal.sh has the rest), so they are librbd's too.
pair feat-journal feat \
	feat -journaling -- feat +journaling -- info -- feat +journaling -- \
	feat -journaling -- info
expect feat-journal "feat -journaling = -22" "feat +journaling = 0" \
	"feat -journaling = 0"
pair feat-journal-io feat \
	feat +journaling -- write 0 4096 9 -- feat -fast-diff,object-map -- \
	info -- feat +object-map,fast-diff -- feat -journaling -- \
	write 4096 4096 9 -- info
expect feat-journal-io "write 0 4096 = 4096" "write 4096 4096 = 4096" \
	"feat -fast-diff,object-map = 0" "feat +object-map,fast-diff = 0" \
	"feat -journaling = 0"

mk lay 32M --image-feature layering
pair lay-seq lay \
	write 0 4096 1 -- feat +object-map -- feat +fast-diff -- \
	feat +exclusive-lock -- info -- write $M4 4096 2 -- \
	feat +object-map -- info -- rebuild -- info -- write 8388608 4096 3 -- \
	feat -fast-diff -- feat -exclusive-lock -- info -- write 0 8192 4
expect lay-seq "feat +object-map = -22" "feat +exclusive-lock = 0" \
	"feat -exclusive-lock = 0" "info features=0x1 (0) flags=0x0 (0)"
compare lay

# The lock follows on the same open: enabled, the next write takes it.
mk lock 32M --image-feature layering
rm -f "$TMP/lock.stop"
timeout -k 5 120 "$LITE" "${PFX}L-lock" feat +exclusive-lock -- \
	write 0 4096 1 -- quiesce 0 0 "$TMP/lock.stop" 0 \
	>"$TMP/lock.lite" 2>&1 &
BG+=($!)
for _ in $(seq 100); do grep -q ready "$TMP/lock.lite" && break; sleep 0.1; done
if c_rbd lock ls "$POOL/${PFX}L-lock" 2>/dev/null | grep -q "auto "; then
	pass "feat: after +exclusive-lock our next write holds the lock"
else
	fail "feat: after +exclusive-lock our next write holds the lock"
	show_log "$TMP/lock.lite"
fi
touch "$TMP/lock.stop"
wait "${BG[-1]}"

# ---- object map rebuild ------------------------------------------------------------
mk rb 64M
pair rb-data rb \
	write 0 4096 1 -- write $M4 8192 2 -- write 12582912 4096 3
for side in L R; do
	c_rbd snap create "$POOL/${PFX}$side-rb@a" >/dev/null 2>&1
done
pair rb-more rb write 20971520 4096 4 -- write 0 4096 5
head -c 4096 /dev/urandom >"$TMP/obj9"
# Corrupt: the map misses object 5's removal and object 9's creation.
for side in L R; do
	prefix=$(c_rbd info --format json "$POOL/${PFX}$side-rb" | "$PY" -c '
import json, sys
print(json.load(sys.stdin)["block_name_prefix"])')
	rados -p "$POOL" rm "$prefix.0000000000000005"
	rados -p "$POOL" put "$prefix.0000000000000009" "$TMP/obj9"
done
pair rb-cancel rb rebuild 3 -- info
expect rb-cancel "rebuild = -1 last=2/16 backwards=0"
pair rb-cancel2 rb FEATAPI_STOPVAL=-125 rebuild 5
# A cancelled rebuild saved nothing: the twins still agree.
compare_as rb-cancel rb a
pair rb-head rb rebuild -- info
expect rb-head "rebuild = 0 last=15/16 backwards=0" \
	"info features=0x3d (0) flags=0x0 (0)"
pair rb-inval rb feat -object-map -- feat +object-map -- info
pair rb-snap rb FEATAPI_SNAP=a rebuild
expect rb-snap "rebuild = 0 last=15/16 backwards=0"
pair rb-head2 rb rebuild -- info
pair rb-ro rb FEATAPI_RO=1 rebuild
expect rb-ro "rebuild = -30 last=0/0 backwards=0"
compare rb a
mk rbnone 16M --image-feature layering,exclusive-lock
pair rb-nomap rbnone rebuild
expect rb-nomap "rebuild = -22 last=0/0 backwards=0"
# An oversized map (the header's size cut to 4 MiB behind the map's back,
# as a shrink cut short leaves it, with an object past the new end): the
# map's entries past the end go (object_map_resize alone would refuse
# with -ESTALE), the object stays, as librbd's rebuild leaves it.
mk rbover 16M
pair rb-over-data rbover write 0 4096 1 -- write 12582912 4096 2
printf '\000\000\100\000\000\000\000\000' >"$TMP/size4m"
for side in L R; do
	id=$(rbdl_info "${PFX}$side-rbover" 'd["id"]')
	rados -p "$POOL" setomapval "rbd_header.$id" size \
		--input-file "$TMP/size4m" ||
		fail "rb-over: cannot cut $side's header size"
done
pair rb-over rbover rebuild -- info
expect rb-over "rebuild = 0 last=0/1 backwards=0" \
	"info features=0x3d (0) flags=0x0 (0)"
compare rbover

# ---- sparsify ------------------------------------------------------------------------
mk sp 64M
pair sp-data sp \
	write 0 $M4 1 -- write 8192 65536 0 -- write 2097152 4096 0 -- \
	write $M4 $M4 0 -- write 8388608 $M4 2 -- write 12582912 4096 0 -- \
	write 16777216 1048576 3 -- write 17825792 4096 0 -- \
	write 20971520 8192 0 -- write 20979712 4096 6
for side in L R; do
	c_rbd snap create "$POOL/${PFX}$side-sp@a" >/dev/null 2>&1
done
pair sp-more sp write 8388608 $M4 0 -- write 25165824 4096 0
pair sp-bad sp sparsify 0 -- sparsify 4095 -- sparsify 6000 -- \
	sparsify 2048 -- sparsify 8388608 -- sparsify 1073741824 plain
expect sp-bad "sparsify = -22 last=0/0 backwards=0" "sparsify 1073741824 = -22"
pair sp-ro sp FEATAPI_RO=1 sparsify 4096
pair sp-atsnap sp FEATAPI_SNAP=a sparsify 4096 -- sparsify 1000
expect sp-ro "sparsify = -30 last=0/0 backwards=0"
pair sp-cancel sp sparsify 4096 2
expect sp-cancel "sparsify = -1 last=1/16 backwards=0"
pair sp-run sp sparsify 4096 -- info -- sparsify 8192 plain -- \
	write 30000000 4096 0 -- sparsify 4194304
expect sp-run "sparsify = 0 last=15/16 backwards=0" "sparsify 8192 = 0"
compare sp a

# A clone: objects within the parent overlap are zeroed, never removed.
mk spp 32M
pair spp-data spp write 0 16777216 9
for side in L R; do
	c_rbd snap create "$POOL/${PFX}$side-spp@p" >/dev/null 2>&1
	c_rbd snap protect "$POOL/${PFX}$side-spp@p" >/dev/null 2>&1
	c_rbd clone "$POOL/${PFX}$side-spp@p" "$POOL/${PFX}$side-spc" \
		>/dev/null 2>&1 || die "rbd clone failed"
	IMAGES+=("${PFX}$side-spc")
done
pair spc-data spc write 0 $M4 0 -- write 20971520 $M4 0 -- \
	write 25165824 8192 5 -- sparsify 4096 -- info
compare spc

# ---- striping and a data pool ------------------------------------------------------
mk st 16M --object-size 1M --stripe-unit 65536 --stripe-count 4 \
	--data-pool "$DATA_POOL"
pair st-seq st \
	write 0 1048576 1 -- write 65536 131072 0 -- write 4194304 262144 0 -- \
	write 8388608 4096 2 -- feat -object-map -- write 12582912 65536 3 -- \
	feat +object-map -- info -- rebuild -- info -- sparsify 4096 -- \
	info -- write 4194304 65536 0 -- sparsify 65536
compare st

# ---- quiesce -------------------------------------------------------------------------
# quiesce_run NAME SUFFIX DELAY_MS ANSWERS SNAP [EXTRA CMDS]: a watcher
# process per twin (two watchers) while `rbd snap create` runs; records
# the snapshot's exit status and duration.
quiesce_run() {
	local name=$1 s=$2 delay=$3 answers=$4 snap=$5 side prog t0 t1
	for side in L R; do
		prog=$LITE
		[[ $side == R ]] && prog=$REF
		rm -f "$TMP/$name.stop"
		# shellcheck disable=SC2086
		timeout -k 5 120 "$prog" "${PFX}$side-$s" write 0 4096 1 -- \
			quiesce 2 "$delay" "$TMP/$name.stop" $answers \
			>"$TMP/$name.$side" 2>"$TMP/$name.$side.err" &
		BG+=($!)
		for _ in $(seq 200); do
			grep -q ready "$TMP/$name.$side" && break
			sleep 0.1
		done
		t0=$(date +%s%N)
		c_rbd snap create "$POOL/${PFX}$side-$s@$snap" \
			>"$TMP/$name.$side.snap" 2>&1
		echo "snap rc=$?" >"$TMP/$name.$side.rc"
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000)) >"$TMP/$name.$side.ms"
		sleep 1
		touch "$TMP/$name.stop"
		wait "${BG[-1]}"
		echo "exit=$?" >>"$TMP/$name.$side.rc"
	done
}

# qjudge NAME MIN_MS: both sides printed the same events (the two
# watchers' answers come from two threads: compared sorted), in order
# (every quiesce before any complete before any unquiesce), the snapshot
# took at least MIN_MS, and exit statuses agree.
qjudge() {
	local name=$1 min=$2 side ok=1
	for side in L R; do
		sort "$TMP/$name.$side" >"$TMP/$name.$side.sorted"
		"$PY" - "$TMP/$name.$side" <<'EOF' || ok=0
import sys
lines = [l.split()[0] for l in open(sys.argv[1]) if l.split()]
q = [i for i, w in enumerate(lines) if w == "quiesce"]
c = [i for i, w in enumerate(lines) if w == "complete"]
u = [i for i, w in enumerate(lines) if w == "unquiesce"]
if not q or not c or not u or max(q) > min(c) or max(c) > min(u):
    print("bad order:", lines)
    sys.exit(1)
EOF
	done
	if ((ok)) && diff -u "$TMP/$name.R.sorted" "$TMP/$name.L.sorted" \
		>"$TMP/$name.diff" &&
		diff -u "$TMP/$name.R.rc" "$TMP/$name.L.rc" >>"$TMP/$name.diff"; then
		pass "$name: the same quiesce events and snapshot result as librbd, in order"
	else
		fail "$name: the same quiesce events and snapshot result as librbd, in order"
		show_log "$TMP/$name.diff"
		show_log "$TMP/$name.L"
	fi
	if (($(cat "$TMP/$name.L.ms") >= min)); then
		pass "$name: rbd snap create waited for rbd_quiesce_complete ($(cat "$TMP/$name.L.ms") ms >= $min)"
	else
		fail "$name: rbd snap create waited for rbd_quiesce_complete" \
			"$(cat "$TMP/$name.L.ms") ms < $min"
	fi
}

mk q 16M
quiesce_run q-ok q 1500 "0 0" s1
qjudge q-ok 1400
if grep -qx "snap rc=0" "$TMP/q-ok.L.rc" &&
	[[ $(grep -c "^quiesce" "$TMP/q-ok.L") == 2 ]] &&
	c_rbd snap ls "$POOL/${PFX}L-q" | grep -qw s1; then
	pass "q-ok: the snapshot was made after both watchers quiesced once"
else
	fail "q-ok: the snapshot was made after both watchers quiesced once"
	show_log "$TMP/q-ok.L.snap"
fi
quiesce_run q-slow q 7000 "0 0" s2
qjudge q-slow 6900
if grep -qx "snap rc=0" "$TMP/q-slow.L.rc" &&
	[[ $(grep -c "^quiesce" "$TMP/q-slow.L") == 2 ]]; then
	pass "q-slow: an answer after the notify timeout: retried, quiesced once, snapshot made"
else
	fail "q-slow: an answer after the notify timeout: retried, quiesced once, snapshot made"
	show_log "$TMP/q-slow.L"
fi
quiesce_run q-err q 300 "-5 0" s3
qjudge q-err 250
if grep -qx "snap rc=5" "$TMP/q-err.L.rc" &&
	grep -q "Input/output error" "$TMP/q-err.L.snap" &&
	! c_rbd snap ls "$POOL/${PFX}L-q" | grep -qw s3; then
	pass "q-err: a quiesce error makes rbd snap create fail with it, no snapshot"
else
	fail "q-err: a quiesce error makes rbd snap create fail with it, no snapshot"
	show_log "$TMP/q-err.L.snap"
fi
compare q s1 s2

# Our own rbd_snap_create2 on an open we watch for quiesce: the callbacks
# run (this open answers its own QUIESCE), an error fails the snapshot.
mk qs 16M
PAIR_SORT=1 pair q-self qs write 0 4096 1 -- qsnap a 0 1000 -- \
	qsnap b -5 0 -- qsnap c 0 0
expect q-self "snap_create2 a = 0 progress=1 last=1/10" \
	"snap_create2 b = -5 progress=1 last=1/10" "unquiesce 0"
compare qs a c

"$LITE" "${PFX}L-q" qcheck -- args >"$TMP/qcheck.lite" 2>&1
cat >"$TMP/qcheck.want" <<'EOF'
unwatch unknown = -2
watch1 = 0
watch2 = 0
unwatch1 = 0
unwatch1 again = -2
unwatch2 = 0
feat null image = -22
rebuild null image = -22
sparsify null image = -22
quiesce_watch null image = -22
quiesce_unwatch null image = -22
EOF
if grep -v '^handles' "$TMP/qcheck.lite" | diff -u "$TMP/qcheck.want" - \
	>"$TMP/qcheck.diff"; then
	pass "librbdlite: quiesce handle and NULL image checks"
else
	fail "librbdlite: quiesce handle and NULL image checks"
	show_log "$TMP/qcheck.diff"
fi

rbdl_summary
