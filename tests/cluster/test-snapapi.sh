#!/bin/bash
# test-snapapi.sh - the snapshot calls of the C API (rbd_snap_create2,
# remove2, remove_by_id, rollback_with_progress, set_by_id, rename,
# protect, unprotect, is_protected, get_id, get_name, get_timestamp,
# get/set_limit and the namespace queries), differentially: the same
# command sequence runs through snapapi-lite (librbdlite) and
# snapapi-librbd (the real librbd) on twin images, and every call's
# return value and outputs (progress callback calls included) must be the
# same line for line; the expected errnos are asserted too ("expect").
# Then the twins are compared with the rbd CLI: `rbd snap ls --all` (minus
# ids, timestamps and the uuid names of trash snapshots) and the md5 of an
# export of HEAD and of every user snapshot.
#
# Twins: default features (create flags and progress, rollback progress
# and cancellation, protection, queries, rename, the snapshot limit, by-id
# removal and view, read-only and snapshot handles); layering only; no
# layering (-ENOSYS); a clone parent with clone v1 and v2 children
# (unprotect refused only for v1 children, removal into the trash
# namespace, trash queries); flattened clones whose last snapshot detaches
# them from the parent (v1 and v2, the parent's trashed snapshot going
# too); RBD_SNAP_REMOVE_FORCE flattening children; an image in a group
# with a group snapshot made by `rbd group snap create`; a librbd client
# holding the exclusive lock and watching while the changes are made (it
# must see them as it sees librbd's); a librbd quiesce watcher answering
# -5 (quiesce errors, IGNORE_QUIESCE_ERROR, SKIP_QUIESCE); a
# mirror snapshot (snapshot-based mirroring with one peer).  Finally
# librbdlite's NULL handle and NULL argument checks (librbd crashes on
# them, so they run on librbdlite only).
#
# Needs CEPH_CONF and RBDLITE_TEST_POOL (fails, never skips, without them)
# and the rbd CLI.  Prints "N passed, M failed" last; exits non-zero on any
# failure.

set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/testlib.sh"

rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_need_cmds rbd md5sum diff sed
rbdl_twins snapapi
rbdl_need_progs "$LITE" "$REF"
PY=/usr/bin/python3
[[ -x $PY ]] || die "no $PY"
rbdl_workdir snapapi
PFX=snapapi$$
IMAGES=()
GROUPS_MADE=()
BG=()
cleanup() {
	rbdl_kill_bg
	for g in "${GROUPS_MADE[@]}"; do
		c_rbd group rm "$POOL/$g" >/dev/null 2>&1
	done
	rbdl_remove_images 60 ""
	rbdl_rm_workdir
}
rbdl_traps

# mk SUFFIX SIZE [OPTS]: twin images ${PFX}L-SUFFIX and ${PFX}R-SUFFIX.
mk() {
	local s=$1 size=$2
	shift 2
	rbdl_mkimage "${PFX}L-$s" "$size" "$@"
	rbdl_mkimage "${PFX}R-$s" "$size" "$@"
}

# pair NAME SUFFIX [-r|-s SNAP] CMD...: the same commands on both twins;
# outputs (with the twins' names made equal) and exit statuses must match,
# and each must exit 0 (every failure was expected).
pair() {
	local name=$1 s=$2 opts=()
	shift 2
	while [[ ${1:-} == -r || ${1:-} == -s ]]; do
		if [[ $1 == -s ]]; then opts+=(-s "$2"); shift 2
		else opts+=(-r); shift; fi
	done
	timeout -k 5 300 "$LITE" "${opts[@]}" "$POOL" "${PFX}L-$s" "$@" \
		>"$TMP/$name.lite" 2>"$TMP/$name.lite.err"
	local rl=$?
	timeout -k 5 300 "$REF" "${opts[@]}" "$POOL" "${PFX}R-$s" "$@" \
		>"$TMP/$name.ref" 2>"$TMP/$name.ref.err"
	local rr=$?
	sed -i "s/${PFX}[LR]/${PFX}X/g" "$TMP/$name.lite" "$TMP/$name.ref"
	if ! diff -u "$TMP/$name.ref" "$TMP/$name.lite" >"$TMP/$name.diff"; then
		fail "$name: librbdlite's results equal librbd's" \
			"outputs differ (- librbd, + librbdlite)"
		show_log "$TMP/$name.diff"
	elif ((rl != rr || rl != 0)); then
		fail "$name: librbdlite's results equal librbd's" \
			"exit status lite $rl, librbd $rr"
		show_log "$TMP/$name.lite"
		show_log "$TMP/$name.lite.err"
	else
		pass "$name: librbdlite's results equal librbd's ($(wc -l <"$TMP/$name.ref") lines)"
	fi
}

# snapls IMAGE: `rbd snap ls --all` without ids, timestamps, trash uuids.
snapls() {
	c_rbd snap ls --all --format json "$POOL/$1" | "$PY" -c '
import json, sys
for s in json.load(sys.stdin):
    ns = s.get("namespace", {})
    name = s["name"] if ns.get("type") != "trash" else "TRASH"
    print(name, s["size"], s.get("protected"), json.dumps(
        {k: v for k, v in ns.items() if k not in ("group snap",)},
        sort_keys=True))
'
}

# compare SUFFIX: the twins look the same to the rbd CLI.
compare() {
	local s=$1 l="${PFX}L-$1" r="${PFX}R-$1" ok=1 snaps
	if ! snapls "$l" >"$TMP/ls-$s.lite" 2>&1 ||
		! snapls "$r" >"$TMP/ls-$s.ref" 2>&1; then
		fail "$s: rbd snap ls --all" "rbd failed"
		show_log "$TMP/ls-$s.lite"
		return
	fi
	sed -i "s/${PFX}[LR]/${PFX}X/g" "$TMP/ls-$s.lite" "$TMP/ls-$s.ref"
	if diff -u "$TMP/ls-$s.ref" "$TMP/ls-$s.lite" >"$TMP/ls-$s.diff"; then
		pass "$s: rbd snap ls --all of the twins is the same"
	else
		fail "$s: rbd snap ls --all of the twins is the same"
		show_log "$TMP/ls-$s.diff"
	fi
	snaps=$(c_rbd snap ls --format json "$POOL/$l" | "$PY" -c '
import json, sys
print(" ".join(s["name"] for s in json.load(sys.stdin) if s["name"]))')
	for sn in "" $snaps; do
		local a b
		a=$(c_rbd export "$POOL/$l${sn:+@$sn}" - 2>/dev/null | md5sum)
		b=$(c_rbd export "$POOL/$r${sn:+@$sn}" - 2>/dev/null | md5sum)
		[[ $a == "$b" ]] || { ok=0; echo "  export ${sn:-HEAD} differs"; }
	done
	if ((ok)); then
		pass "$s: exports of HEAD and every snapshot are equal"
	else
		fail "$s: exports of HEAD and every snapshot are equal"
	fi
}

M4=4194304
E=expect

# ---- default features ------------------------------------------------------
mk def 16M
pair def-create def \
	write 0 $M4 1 \
	create s1 0 $E -17 create s1 0 create "" 0 create s2 1 \
	create s3 2 $E -22 create bad 3 $E -22 create bad 4 \
	create s4 0 0 -5 \
	write $M4 $M4 2 write 12582912 100000 3 \
	snaps
# A 600-byte name: created, renamed, removed (as librbd, no limit of ours).
LN=$(printf 'n%.0s' {1..600})
pair def-longname def \
	create "$LN" 0 getid "$LN" rename "$LN" "${LN}x" remove "${LN}x" 0 snaps
pair def-rollback def \
	rollback s1 read 0 $M4 read $M4 $M4 \
	$E -7 rollback s4 1 -7 $E -3 rollback s4 2 -3 \
	rollback s4 read 0 16777216 \
	$E -2 rollback nope snaps
pair def-protect def \
	protect s1 $E -16 protect s1 isprot s1 isprot s2 $E -2 isprot nope \
	$E -2 protect nope $E -2 unprotect nope $E -22 unprotect s2 \
	$E -16 remove s1 0 $E -16 rmid @s1 unprotect s1 isprot s1 \
	protect s1 remove s1 1 \
	protect s2 $E -16 remove s2 2 unprotect s2 remove s2 2 \
	snaps
pair def-query def \
	getid s3 $E -2 getid nope \
	getname @s3 3 $E -34 getname @s3 2 $E -34 getname @s3 0 \
	$E -2 getname '#99999' 8 $E -34 getname '#99999' 0 \
	ts @s3 nstype @s3 $E -2 nstype '#99999' \
	$E -2 nstype head \
	$E -22 grpns @s3 $E -34 grpns @s3 10 $E -2 grpns '#99999' \
	$E -22 trashns @s3 64 $E -2 trashns '#99999' 64 \
	$E -22 mirrorns @s3 $E -34 mirrorns @s3 3 $E -2 mirrorns '#99999'
pair def-rename def \
	rename s3 s3x $E -17 rename s3x s4 $E -2 rename nope z \
	$E -17 rename s3x s3x $E -17 rename s3x "" rename s3x s3 \
	rename "" empty snaps
pair def-limit def \
	limit $E -34 setlimit 2 setlimit 4 limit create l1 0 \
	$E -122 create l2 0 setlimit max limit setlimit max create l2 0 \
	$E -34 setlimit 0 limit
pair def-byid def \
	setid @s3 read 0 $M4 setid head read 0 $M4 $E -2 setid '#99999' \
	rmid @l2 $E -2 rmid @l2 $E -2 rmid '#99999' $E -2 rmid head snaps
pair def-ro def -r \
	$E -30 create ro 0 $E -30 rename s3 x $E -30 protect s3 \
	$E -30 unprotect s3 $E -30 setlimit 20 limit $E -30 remove s3 0 \
	$E -30 rmid @s3 $E -30 rollback s3 isprot s3 getid s3 ts @s3
pair def-atsnap def -s s3 \
	rename l1 l1x protect l1x unprotect l1x setlimit 20 limit \
	$E -30 rollback s4 getid l1x snaps
compare def

# ---- layering only ----------------------------------------------------------
mk lay 8M --image-feature layering
pair lay lay \
	write 0 $M4 5 create a 0 write 0 1000 6 create b 1 \
	protect a $E -16 protect a isprot a unprotect a \
	$E -1 rollback a 0 -1 $E -1 rollback b 0 -1 rollback a read 0 $M4 \
	setid @b read 0 $M4 setid head rmid @b rename a c snaps
compare lay

# ---- layering only, no layering: protection needs it --------------------------
mk nol 8M --image-feature exclusive-lock
pair nol nol \
	create a 0 $E -38 protect a $E -22 unprotect a isprot a remove a 1 \
	snaps
compare nol

# ---- a clone parent with v1 and v2 children --------------------------------------
mk par 8M
pair par-setup par write 0 $M4 7 create p1 0 create p2 0 protect p1
for t in L R; do
	c_rbd clone --rbd-default-clone-format 1 "$POOL/${PFX}$t-par@p1" \
		"$POOL/${PFX}$t-c1" >"$TMP/clone.log" 2>&1 &&
	c_rbd clone --rbd-default-clone-format 2 "$POOL/${PFX}$t-par@p2" \
		"$POOL/${PFX}$t-c2" >>"$TMP/clone.log" 2>&1 &&
	c_rbd clone --rbd-default-clone-format 2 "$POOL/${PFX}$t-par@p1" \
		"$POOL/${PFX}$t-c3" >>"$TMP/clone.log" 2>&1 ||
		die "rbd clone failed: $(tail -3 "$TMP/clone.log")"
	IMAGES+=("${PFX}$t-c1" "${PFX}$t-c2" "${PFX}$t-c3")
done
pair par-v1 par \
	$E -16 unprotect p1 isprot p1 $E -16 remove p1 0 $E -16 remove p1 1 \
	snaps
for t in L R; do
	c_rbd rm "$POOL/${PFX}$t-c1" >/dev/null 2>&1 || die "rbd rm c1 failed"
done
keep=()
for i in "${IMAGES[@]}"; do
	[[ $i == "${PFX}L-c1" || $i == "${PFX}R-c1" ]] || keep+=("$i")
done
IMAGES=("${keep[@]}")
pair par-v2 par \
	unprotect p1 protect p1 remove p1 1 \
	protect p2 $E -16 remove p2 0 remove p2 1 snaps \
	nstype %trash:0 trashns %trash:0 40 $E -34 trashns %trash:0 2 \
	getname %trash:0 64 ts %trash:1 $E -16 rmid %trash:0 \
	$E -16 rmid %trash:1 $E -2 getid p1 $E -2 isprot p2 \
	setid %trash:0 read 0 $M4 setid head snaps
compare par
for t in L R; do
	c_rbd rm "$POOL/${PFX}$t-c2" >/dev/null 2>&1 &&
		c_rbd rm "$POOL/${PFX}$t-c3" >/dev/null 2>&1 ||
		die "rbd rm of the v2 clones failed"
done
keep=()
for i in "${IMAGES[@]}"; do
	[[ $i == *-c2 || $i == *-c3 ]] || keep+=("$i")
done
IMAGES=("${keep[@]}")
pair par-after par snaps
compare par

# ---- a flattened clone's last snapshot detaches it from its parent ----------
# (layering only, so the clones' snapshots keep the parent after rbd
# flatten; clone v1 leaves rbd_children, clone v2 leaves the parent's
# child list and takes the parent's trashed snapshot with it)
mk fp 8M --image-feature layering
pair fp-setup fp write 0 $M4 11 create s 0 protect s
for t in L R; do
	{ c_rbd clone --rbd-default-clone-format 1 --image-feature layering \
		"$POOL/${PFX}$t-fp@s" "$POOL/${PFX}$t-fc1" &&
	  IMAGES+=("${PFX}$t-fc1") &&
	  c_rbd clone --rbd-default-clone-format 2 --image-feature layering \
		"$POOL/${PFX}$t-fp@s" "$POOL/${PFX}$t-fc2" &&
	  IMAGES+=("${PFX}$t-fc2") &&
	  c_rbd snap create "$POOL/${PFX}$t-fc1@x" &&
	  c_rbd snap create "$POOL/${PFX}$t-fc2@x" &&
	  c_rbd flatten "$POOL/${PFX}$t-fc1" &&
	  c_rbd flatten "$POOL/${PFX}$t-fc2"; } >"$TMP/flat.log" 2>&1 ||
		die "clone and flatten failed: $(tail -3 "$TMP/flat.log")"
done
pair fc1 fc1 $E -2 remove s 0 remove x 0 snaps
for t in L R; do
	c_rbd children --all "$POOL/${PFX}$t-fp@s" >"$TMP/children-$t" 2>&1
	if [[ $(cat "$TMP/children-$t") == "$POOL/${PFX}$t-fc2" ]]; then
		pass "fc1-$t: the v1 clone left rbd_children, the v2 one is listed"
	else
		fail "fc1-$t: the v1 clone left rbd_children, the v2 one is listed"
		show_log "$TMP/children-$t"
	fi
done
pair fp-unprotect fp unprotect s remove s 0 snaps
pair fc2 fc2 remove x 0 snaps
pair fp-after fp snaps
for t in L R; do
	c_rbd snap ls --all "$POOL/${PFX}$t-fp" >"$TMP/fpsnaps-$t" 2>&1
	if [[ ! -s $TMP/fpsnaps-$t ]]; then
		pass "fp-$t: the trashed parent snapshot went with its last child"
	else
		fail "fp-$t: the trashed parent snapshot went with its last child"
		show_log "$TMP/fpsnaps-$t"
	fi
done
compare fc1
compare fc2
compare fp

# ---- RBD_SNAP_REMOVE_FORCE: the children are flattened first ---------------
mk fz 8M
pair fz-setup fz write 0 $M4 12 create s 0 protect s
for t in L R; do
	{ c_rbd clone --rbd-default-clone-format 1 "$POOL/${PFX}$t-fz@s" \
		"$POOL/${PFX}$t-fzc1" && IMAGES+=("${PFX}$t-fzc1") &&
	  c_rbd clone --rbd-default-clone-format 2 "$POOL/${PFX}$t-fz@s" \
		"$POOL/${PFX}$t-fzc2" && IMAGES+=("${PFX}$t-fzc2"); } \
		>"$TMP/force.log" 2>&1 ||
		die "rbd clone failed: $(tail -3 "$TMP/force.log")"
done
pair fz fz $E -16 remove s 0 remove s 3 snaps
compare fz
compare fzc1
compare fzc2
# A child without deep-flatten that has a snapshot is refused (-EBUSY)
# before anything is flattened; once its snapshot is gone both children
# are flattened, and the callback's return value is ignored meanwhile.
mk fy 8M
pair fy-setup fy write 0 $M4 13 create s 0 protect s
for t in L R; do
	{ c_rbd clone --rbd-default-clone-format 2 --image-feature layering \
		"$POOL/${PFX}$t-fy@s" "$POOL/${PFX}$t-fyc" && IMAGES+=("${PFX}$t-fyc") &&
	  c_rbd snap create "$POOL/${PFX}$t-fyc@cs" &&
	  c_rbd clone --rbd-default-clone-format 2 "$POOL/${PFX}$t-fy@s" \
		"$POOL/${PFX}$t-fyd" && IMAGES+=("${PFX}$t-fyd"); } \
		>"$TMP/force2.log" 2>&1 ||
		die "rbd clone failed: $(tail -3 "$TMP/force2.log")"
done
pair fy fy $E -16 remove s 3 snaps
for t in L R; do
	c_rbd snap rm "$POOL/${PFX}$t-fyc@cs" >"$TMP/force2.log" 2>&1 ||
		die "rbd snap rm failed: $(tail -3 "$TMP/force2.log")"
done
pair fy2 fy remove s 3 1 -125 snaps
compare fy
compare fyc
compare fyd

# ---- group snapshot ------------------------------------------------------------
mk grp 8M
for t in L R; do
	c_rbd group create "$POOL/${PFX}$t-g" >"$TMP/group.log" 2>&1 &&
	GROUPS_MADE+=("${PFX}$t-g") &&
	c_rbd group image add "$POOL/${PFX}$t-g" "$POOL/${PFX}$t-grp" \
		>>"$TMP/group.log" 2>&1 &&
	c_rbd group snap create "$POOL/${PFX}$t-g@gs1" >>"$TMP/group.log" 2>&1 ||
		die "rbd group failed: $(tail -3 "$TMP/group.log")"
done
pair grp grp \
	create u1 0 snaps nstype %group:0 grpns %group:0 \
	$E -34 grpns %group:0 10 $E -22 grpns @u1 $E -22 trashns %group:0 8 \
	ts %group:0 setid %group:0 setid head rmid %group:0 snaps
compare grp

# ---- another client: a librbd client of each twin holds the exclusive lock
# (it wrote) and watches the header; the changes are made under the lock
# (requested from it) and it sees them without reopening ---------------------
mk oth 8M
for t in L R; do
	timeout -k 5 120 "$REF" "$POOL" "${PFX}$t-oth" write 0 65536 8 \
		waitfile "$TMP/oth-go" 90 snaps getid b isprot b limit \
		write 65536 65536 9 read 0 $M4 >"$TMP/oth-$t.out" 2>&1 &
	BG+=($!)
done
for t in L R; do
	for _ in $(seq 100); do
		grep -q waiting "$TMP/oth-$t.out" 2>/dev/null && break
		sleep 0.2
	done
	grep -q waiting "$TMP/oth-$t.out" ||
		die "the other client did not start: $(tail -2 "$TMP/oth-$t.out")"
done
pair oth oth \
	create a 0 create b 0 rename b bb protect a rename bb b protect b \
	setlimit 7 write 0 8192 10 rollback a read 0 $M4 remove a 1 snaps
touch "$TMP/oth-go"
wait "${BG[@]}"
BG=()
sed -i "s/${PFX}[LR]/${PFX}X/g" "$TMP/oth-L.out" "$TMP/oth-R.out"
if diff -u "$TMP/oth-R.out" "$TMP/oth-L.out" >"$TMP/oth.diff" &&
	grep -q "isprot b = 0 prot=1" "$TMP/oth-L.out"; then
	pass "oth: a librbd client sees librbdlite's changes as librbd's"
else
	fail "oth: a librbd client sees librbdlite's changes as librbd's"
	show_log "$TMP/oth.diff"
	show_log "$TMP/oth-L.out"
fi
compare oth

# ---- quiesce: a librbd client of each twin answers QUIESCE with -5 ----------
# (The watchers live 60 s and are killed once the pair ran: both twins, one
# after the other, run within their lifetime even in the ASan build.)
mk qui 8M
for t in L R; do
	timeout -k 5 90 "$REF" "$POOL" "${PFX}$t-qui" qwatch -5 60 \
		>"$TMP/qwatch-$t.out" 2>&1 &
	BG+=($!)
done
for t in L R; do
	for _ in $(seq 100); do
		grep -q watching "$TMP/qwatch-$t.out" 2>/dev/null && break
		sleep 0.2
	done
	grep -q watching "$TMP/qwatch-$t.out" ||
		die "the quiesce watcher did not start: $(tail -2 "$TMP/qwatch-$t.out")"
done
pair qui qui \
	$E -5 create q0 0 create q1 2 create q2 1 $E -22 create q3 3 \
	write 0 $M4 4 $E -5 create q4 0 snaps
rbdl_kill_bg
compare qui

# ---- mirror snapshot namespace (snapshot-based mirroring, one peer) ----------
mk mir 8M
mir_cleanup() {
	for t in L R; do
		c_rbd mirror image disable "$POOL/${PFX}$t-mir" >/dev/null 2>&1
	done
	c_rbd mirror pool peer remove "$POOL" "$PEER" >/dev/null 2>&1
	c_rbd mirror pool disable "$POOL" >/dev/null 2>&1
}
PEER=
if c_rbd mirror pool enable "$POOL" image >"$TMP/mirror.log" 2>&1 &&
	c_rbd mirror pool peer add "$POOL" client.none@nowhere \
		>>"$TMP/mirror.log" 2>&1; then
	PEER=$(c_rbd mirror pool info "$POOL" --format json | "$PY" -c '
import json, sys
print(json.load(sys.stdin)["peers"][0]["uuid"])')
	for t in L R; do
		c_rbd mirror image enable "$POOL/${PFX}$t-mir" snapshot \
			>>"$TMP/mirror.log" 2>&1 ||
			die "rbd mirror image enable failed: $(tail -2 "$TMP/mirror.log")"
	done
	pair mir mir \
		snaps nstype %mirror:0 mirrorns %mirror:0 \
		$E -34 mirrorns %mirror:0 10 $E -2 mirrorns %mirror:9 \
		$E -22 grpns %mirror:0 $E -22 trashns %mirror:0 64 \
		ts %mirror:0 setid %mirror:0 read 0 $M4 setid head
	sed -i "s/$PEER/PEER/g" "$TMP/mir.lite" "$TMP/mir.ref"
	if grep -q "peers=1:PEER" "$TMP/mir.lite"; then
		pass "mir: the mirror snapshot names the pool's peer"
	else
		fail "mir: the mirror snapshot names the pool's peer"
		show_log "$TMP/mir.lite"
	fi
	mir_cleanup
else
	mir_cleanup
	die "rbd mirror pool enable failed: $(tail -2 "$TMP/mirror.log")"
fi

# ---- NULL handles and arguments (librbdlite only) ---------------------------------
timeout -k 5 120 "$LITE" "$POOL" "${PFX}L-def" nullcheck \
	>"$TMP/null.out" 2>&1
if (($? == 0)); then
	pass "NULL handles and arguments give -EINVAL, no crash"
else
	fail "NULL handles and arguments give -EINVAL, no crash"
	show_log "$TMP/null.out"
fi

rbdl_summary
