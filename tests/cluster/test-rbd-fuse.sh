#!/usr/bin/env bash
# test-rbd-fuse.sh - Debian's unmodified rbd-fuse, and tcmu-runner's rbd
# handler, with librbdlite in place of librbd.
#
# rbd-fuse (libfuse2, as root) mounts the test pool, once per mode:
#   substitute  with LD_LIBRARY_PATH=<the drop-in lib/librbd1 librbd.so.1>
#   preload     under lib/tools/rbdlite-run (LD_PRELOAD of librbdlite.so)
#   librbd      the real librbd, nothing substituted (only when asked for:
#               RBDLITE_CONSUMER_MODES="librbd substitute preload")
# Each image of the pool is a file (rbd_list2, rbd_open, rbd_stat); per
# mode, on images made by the rbd CLI:
#   - ls lists them with their sizes; a file reads the image's data;
#   - writes inside an image (dd conv=notrunc,fsync: rbd_write, rbd_flush),
#     one past its end (rbd-fuse grows the image: rbd_resize), truncate
#     (rbd_resize);
#   - a new file (rbd_create2, with the size set through the mount's
#     user.rbdfuse.imagesize xattr), renamed (rbd_rename); its removal is
#     refused with EBUSY, as librbd's rbd_remove refuses an image that is
#     still open (rbd-fuse keeps its handle under the old name); another
#     new file is removed (rbd_remove);
#   - unmounted (umount): rbd-fuse exits 0, no watcher is left;
# then the rbd CLI (the real librbd) checks every image's data, size and
# features; LD_DEBUG shows every rbd_* rbd-fuse imports bound to
# librbdlite.
#
# tcmu-runner: the kernel module target_core_user, which its I/O path
# needs (TCMU devices configured through configfs), is absent on the CI
# machines (and loading kernel modules is not this test's business), so
# no I/O goes through tcmu-runner here.  What is checked, per mode: its
# handler_rbd.so (BIND_NOW) loads against librbdlite -- dlopen(RTLD_NOW) by
# a small host program compiled here ($CC, default gcc) that defines, as
# tcmu-runner does, the tcmu_*/tcmur_* functions the handler imports --
# handler_init() registers the handler's tcmu_rbd_handler, and LD_DEBUG
# shows every rbd_* it imports bound to librbdlite.
#
# Needs: CEPH_CONF, RBDLITE_TEST_POOL (a running cluster), rbd-fuse,
# /dev/fuse, root, rbd, python3, a C compiler, tcmu-runner (tests/deps.sh
# consumers).  Prints one line per check and "N passed, M failed"; exits
# non-zero if anything failed.  Every mount and daemon it started is
# unmounted / stopped, even on failure.

# Functions below run from traps, which shellcheck cannot see.
# shellcheck disable=SC2317

set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=tests/cluster/preload-env.sh
. "$HERE/preload-env.sh"
rbdl_preload_env rbd-fuse rbd python3 timeout md5sum umount nm
rbdl_qemu_sanrt

DROPIN_DIR=${RBDLITE_DROPIN_DIR:-$BUILDDIR/lib/librbd1/.libs}
[[ -e $DROPIN_DIR/librbd.so.1 ]] || die "drop-in library not built: $DROPIN_DIR/librbd.so.1"
DROPIN_DIR=$(cd -- "$DROPIN_DIR" && pwd)
MODES=${RBDLITE_CONSUMER_MODES:-substitute preload}
((EUID == 0)) || die "rbd-fuse's mount needs root here"
[[ -c /dev/fuse ]] || die "/dev/fuse is missing: rbd-fuse cannot mount"
RBD_FUSE=$(command -v rbd-fuse)
TCMU_RBD=
for f in /usr/lib/x86_64-linux-gnu/tcmu-runner/handler_rbd.so /usr/lib/*/tcmu-runner/handler_rbd.so \
    /usr/lib64/tcmu-runner/handler_rbd.so; do
    [[ -f $f ]] && { TCMU_RBD=$f; break; }
done
[[ -n $TCMU_RBD ]] || die "tcmu-runner's handler_rbd.so not found (Debian package tcmu-runner: tests/deps.sh consumers)"
CC=${CC:-gcc}
command -v "${CC%% *}" >/dev/null || die "no C compiler '$CC' for the tcmu handler's host program (set CC)"
MiB=$((1024 * 1024))
FS_TMO=60

rbdl_workdir rbd-fuse
IMAGES=()
FUSEPID=
MNT=
cleanup() {
    stop_fuse
    rbdl_remove_images 30 "$POOL/"
    rbdl_rm_workdir
}
rbdl_traps

head -c $((16 * MiB)) /dev/urandom >"$TMP/data.bin"
head -c $((3 * MiB)) /dev/urandom >"$TMP/chunk1.bin"
head -c $((1 * MiB)) /dev/urandom >"$TMP/chunk2.bin"
md5() { md5sum <"$1" | cut -d' ' -f1; }

# target MODE: the file LD_DEBUG must show the rbd_* bound to.
target() {
    case $1 in
    preload) echo "$LIB" ;;
    substitute) echo "$DROPIN_DIR/librbd.so.1" ;;
    esac
}
# pre MODE: the command prefix that substitutes librbdlite in MODE.
pre() {
    case $1 in
    preload) PRE=("${WRAPPED[@]}") ;;
    substitute) PRE=(env ${SANRT:+LD_PRELOAD="$SANRT"} "${SAN_ENV[@]}" LD_LIBRARY_PATH="$DROPIN_DIR") ;;
    librbd) PRE=(env) ;;
    esac
}
# bound NAME OBJ FILE...: every rbd_* OBJ (a path) imports bound from it to
# the mode's target in the LD_DEBUG files $D/ld/b.*.
bound() {
    local name=$1 obj=$2 t s missing=()
    t=$(target "$M")
    [[ -n $t ]] || return 0
    for s in $(nm -D --undefined-only "$obj" | awk '$2 ~ /^rbd_/ { print $2 }'); do
        grep -qF "$obj [0] to $t [0]: normal symbol \`$s'" "$D"/ld/b.* 2>/dev/null || missing+=("$s")
    done
    if ((${#missing[@]})); then
        fail "$M: $name" "not bound to $t: ${missing[*]}"
        return 1
    fi
    pass "$M: $name (all $(nm -D --undefined-only "$obj" | grep -c ' rbd_') rbd_* of ${obj##*/} bound to ${t##*/})"
    if [[ $M == substitute ]] && grep -h 'calling init: .*librbd\.so' "$D"/ld/b.* |
        grep -vF "$DROPIN_DIR/" | sort -u >"$D/real" && [[ -s $D/real ]]; then
        # The delegation layer may load the real librbd for a forwarded call
        # (dlopen'ed RTLD_LOCAL by path): not an error, shown for the record.
        echo "NOTE $M: ${obj##*/}: the real librbd was loaded too (forwarded calls): $(head -n 1 "$D/real")"
    fi
}

mounted() { grep -qF " $MNT fuse" /proc/mounts; }

# stop_fuse: unmount (lazily if it must), wait for rbd-fuse; FUSERC is its
# exit status.
stop_fuse() {
    local i
    FUSERC=
    if [[ -n $MNT ]] && mounted; then
        timeout -k 5 30 umount "$MNT" 2>/dev/null || timeout -k 5 30 fusermount3 -u "$MNT" 2>/dev/null ||
            umount -l "$MNT" 2>/dev/null
    fi
    [[ -n $FUSEPID ]] || return 0
    for ((i = 0; i < 150; i++)); do
        kill -0 "$FUSEPID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$FUSEPID" 2>/dev/null; then
        echo "$PROG: rbd-fuse $FUSEPID still running 15 s after the unmount: SIGKILL" >&2
        kill -KILL "$FUSEPID" 2>/dev/null
        [[ -n $MNT ]] && mounted && umount -l "$MNT" 2>/dev/null
    fi
    wait "$FUSEPID" 2>/dev/null
    FUSERC=$?
    FUSEPID=
    return 0
}

# alive STEP: rbd-fuse still runs and the pool is still mounted.
alive() {
    kill -0 "$FUSEPID" 2>/dev/null && mounted && return 0
    fail "$M: rbd-fuse died (or the mount went away) during $1"
    show_log "$D/fuse.log"
    stop_fuse
    return 1
}

# step NAME CMD...: CMD (within FS_TMO s) must succeed, output in
# $D/NAME.log; rbd-fuse must still be running.
step() {
    local name=$1 rc
    shift
    timeout -k 5 "$FS_TMO" "$@" >"$D/$name.log" 2>&1
    rc=$?
    alive "'$*'" || return 2
    if ((rc != 0)); then
        fail "$M: $name" "'$*' failed ($(rbdl_rc_text "$rc" "$FS_TMO"))"
        show_log "$D/$name.log"
        return 1
    fi
}
expect() { rbdl_expect "$@"; }
info() { rbdl_info "$@"; }
export_md5() { c_rbd export --no-progress "$POOL/$1" - 2>/dev/null | md5sum | cut -d' ' -f1; }
exists() {
    local names
    names=$(c_rbd ls "$POOL" 2>/dev/null)
    grep -qx -- "$1" <<<"$names"
}
watchers() {
    c_rbd status --format json "$POOL/$1" 2>/dev/null |
        python3 -c 'import json, sys; print(len(json.load(sys.stdin)["watchers"]))' 2>/dev/null
}

run_fuse() {
    local u=fz$RANDOM-$M
    local a=$u-a b=$u-b c=$u-c d=$u-d e=$u-e
    MNT=$D/mnt
    mkdir -p "$MNT" "$D/ld"

    IMAGES+=("$a" "$b" "$c" "$d" "$e")
    c_rbd import --no-progress "$TMP/data.bin" "$POOL/$a" >"$D/import.log" 2>&1 ||
        { fail "$M: rbd import $POOL/$a" "$(tail -n 1 "$D/import.log")"; return; }
    c_rbd create --size 8M --image-feature layering "$POOL/$b" >"$D/create.log" 2>&1 ||
        { fail "$M: rbd create $POOL/$b" "$(tail -n 1 "$D/create.log")"; return; }

    pre "$M"
    (exec env -u LD_PRELOAD -u LD_LIBRARY_PATH LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$D/ld/b" \
        "${PRE[@]}" "$RBD_FUSE" -c "$CEPH_CONF" -p "$POOL" "$MNT" -f) >"$D/fuse.log" 2>&1 &
    FUSEPID=$!
    rbdl_await_answer "$FUSEPID" 100 mounted
    if ! mounted; then
        fail "$M: mount" "rbd-fuse -c CEPH_CONF -p $POOL $MNT -f did not mount within 10 s"
        show_log "$D/fuse.log"
        stop_fuse
        return
    fi
    pass "$M: rbd-fuse (pid $FUSEPID) mounted pool $POOL on $MNT"

    # Listing and reading.
    if step ls ls -l "$MNT"; then
        if grep -q " $((16 * MiB)) .* $a\$" "$D/ls.log" && grep -q " $((8 * MiB)) .* $b\$" "$D/ls.log"; then
            pass "$M: ls -l lists $a (16 MiB) and $b (8 MiB)"
        else
            fail "$M: ls" "ls -l $MNT does not show $a with 16 MiB and $b with 8 MiB"
            show_log "$D/ls.log"
        fi
    fi
    [[ -n $FUSEPID ]] || return
    if step read-a md5sum "$MNT/$a"; then
        expect read-a "md5 of $MNT/$a" "$(cut -d' ' -f1 "$D/read-a.log")" "$(md5 "$TMP/data.bin")" &&
            pass "$M: $MNT/$a reads the image's 16 MiB"
    fi
    [[ -n $FUSEPID ]] || return

    # Writing: inside, past the end (grows the image), truncate.
    step write-b dd if="$TMP/chunk1.bin" of="$MNT/$b" bs=1M seek=1 conv=notrunc,fsync &&
        pass "$M: 3 MiB written into $MNT/$b at 1 MiB (dd conv=notrunc,fsync)"
    [[ -n $FUSEPID ]] || return
    if step grow-b dd if="$TMP/chunk2.bin" of="$MNT/$b" bs=1M seek=8 conv=notrunc,fsync; then
        expect grow-b "size of $POOL/$b (rbd info)" "$(info "$b" 'd["size"]')" $((9 * MiB)) &&
            pass "$M: a write past the end of $MNT/$b grew the image to 9 MiB"
    fi
    [[ -n $FUSEPID ]] || return
    if step truncate-b truncate -s 12M "$MNT/$b"; then
        expect truncate-b "size of $POOL/$b (rbd info)" "$(info "$b" 'd["size"]')" $((12 * MiB)) &&
            pass "$M: truncate -s 12M $MNT/$b resized the image"
    fi
    [[ -n $FUSEPID ]] || return

    # A new file, renamed, removed.
    if step setxattr python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.rbdfuse.imagesize", b"4194304")' "$MNT" &&
        step create-c touch "$MNT/$c"; then
        if expect create-c "size of $POOL/$c" "$(info "$c" 'd["size"]')" $((4 * MiB)) &&
            expect create-c "features of $POOL/$c" "$(info "$c" '",".join(d["features"])')" layering &&
            expect create-c "order of $POOL/$c" "$(info "$c" 'd["order"]')" 22 &&
            expect create-c "format of $POOL/$c" "$(info "$c" 'd["format"]')" 2; then
            pass "$M: touch $MNT/$c made a 4 MiB format 2 image (layering, order 22)"
        fi
    fi
    [[ -n $FUSEPID ]] || return
    if step rename-c mv "$MNT/$c" "$MNT/$d"; then
        if exists "$d" && ! exists "$c"; then
            pass "$M: mv $c $d renamed the image"
        else
            fail "$M: rename-c" "after mv, rbd ls: $c $(exists "$c" && echo exists || echo 'is gone'), $d $(exists "$d" && echo exists || echo 'does not exist')"
        fi
    fi
    [[ -n $FUSEPID ]] || return
    # rbd-fuse still has the image open under its old name (rename does
    # not close it; unlink closes only a handle of the name it is given):
    # librbd refuses to remove an image another handle watches (-EBUSY),
    # even one of the same client.
    timeout -k 5 "$FS_TMO" rm "$MNT/$d" >"$D/remove-d.log" 2>&1
    alive "'rm $MNT/$d'" || return
    if grep -q 'Device or resource busy' "$D/remove-d.log" && exists "$d"; then
        pass "$M: rm $MNT/$d is refused (EBUSY: still open under its old name $c)"
    else
        fail "$M: remove-d" "rm $MNT/$d: expected 'Device or resource busy' and $POOL/$d kept ($(exists "$d" && echo kept || echo removed))"
        show_log "$D/remove-d.log"
    fi
    if step create-e touch "$MNT/$e" && step remove-e rm "$MNT/$e"; then
        if exists "$e"; then
            fail "$M: remove-e" "rm $MNT/$e: $POOL/$e still exists"
        else
            pass "$M: touch, then rm $MNT/$e: the image is made, then removed"
        fi
    fi
    [[ -n $FUSEPID ]] || return
    if step ls2 ls "$MNT" && grep -qx "$a" "$D/ls2.log" && grep -qx "$b" "$D/ls2.log" &&
        grep -qx "$d" "$D/ls2.log" && ! grep -qx -e "$c" -e "$e" "$D/ls2.log"; then
        pass "$M: ls lists $a, $b and $d, neither $c nor $e"
    elif [[ -n $FUSEPID ]]; then
        fail "$M: ls2" "ls $MNT after mv and rm"
        show_log "$D/ls2.log"
    fi
    [[ -n $FUSEPID ]] || return

    # Unmount; then the real librbd's view.
    stop_fuse
    if mounted; then
        fail "$M: umount" "$MNT is still mounted"
    elif [[ $FUSERC == 0 ]]; then
        pass "$M: umount $MNT; rbd-fuse exited 0"
    else
        fail "$M: umount" "rbd-fuse: $(rbdl_rc_text "$FUSERC") after the unmount"
        show_log "$D/fuse.log"
    fi
    # $b: 12 MiB of zeros with chunk1 at 1 MiB and chunk2 at 8 MiB.
    truncate -s 12M "$D/expect-b"
    dd if="$TMP/chunk1.bin" of="$D/expect-b" bs=1M seek=1 conv=notrunc status=none
    dd if="$TMP/chunk2.bin" of="$D/expect-b" bs=1M seek=8 conv=notrunc status=none
    expect data-b "rbd export $POOL/$b (md5)" "$(export_md5 "$b")" "$(md5 "$D/expect-b")" &&
        expect data-a "rbd export $POOL/$a (md5)" "$(export_md5 "$a")" "$(md5 "$TMP/data.bin")" &&
        pass "$M: rbd export: $b holds what was written through the mount, $a is unchanged"
    expect watchers "watchers of $POOL/$a, $POOL/$b once rbd-fuse is gone" \
        "$(watchers "$a") $(watchers "$b")" "0 0" &&
        pass "$M: no watcher left (rbd-fuse closed its images)"
    bound rbd-fuse-binds-to-librbdlite "$RBD_FUSE"
}

# ---- tcmu-runner's rbd handler -----------------------------------------------

# The host: stubs for every unversioned function handler_rbd.so imports
# but rbd_* and rados_* (tcmu-runner's own exports), tcmur_register_handler
# recording what it is given.
build_tcmu_host() {
    nm -D --undefined-only "$TCMU_RBD" | awk '$1 == "U" && $2 !~ /@/ { print $2 }' |
        grep -Ev '^(rbd|rados)_' | grep -vx tcmur_register_handler |
        sed 's/.*/long &(void); long &(void) { return 0; }/' >"$TMP/tcmu-stubs.c"
    cat >"$TMP/tcmu-host.c" <<'EOF'
/* tcmu-host HANDLER: what tcmu-runner does with a handler module before
 * any device exists: dlopen(RTLD_NOW), then handler_init(), which
 * registers the handler. */
#include <dlfcn.h>
#include <stdio.h>

static void *registered;

int tcmur_register_handler(void *handler);
int tcmur_register_handler(void *handler)
{
	registered = handler;
	return 0;
}

int main(int argc, char **argv)
{
	void *h, *handler;
	int (*init)(void);
	int r;

	if (argc != 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen failed: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "handler_init");
	handler = dlsym(h, "tcmu_rbd_handler");
	if (!init || !handler) {
		printf("handler_init or tcmu_rbd_handler not found\n");
		return 1;
	}
	r = init();
	if (r != 0 || registered != handler) {
		printf("handler_init returned %d, registered %p, tcmu_rbd_handler is %p\n",
		       r, registered, handler);
		return 1;
	}
	printf("handler loaded and registered\n");
	return 0;
}
EOF
    # shellcheck disable=SC2086 # CC may carry flags
    $CC -o "$TMP/tcmu-host" "$TMP/tcmu-host.c" "$TMP/tcmu-stubs.c" -rdynamic -ldl >"$TMP/cc.log" 2>&1
}

run_tcmu() {
    local rc
    mkdir -p "$D/ld"
    rm -f "$D"/ld/b.*
    pre "$M"
    timeout -k 5 30 env -u LD_PRELOAD -u LD_LIBRARY_PATH LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$D/ld/b" \
        "${PRE[@]}" "$TMP/tcmu-host" "$TCMU_RBD" >"$D/tcmu.log" 2>&1
    rc=$?
    if ((rc == 0)) && grep -q '^handler loaded and registered' "$D/tcmu.log"; then
        pass "$M: tcmu-runner's handler_rbd.so loads (RTLD_NOW), handler_init registers tcmu_rbd_handler"
        bound tcmu-handler-binds-to-librbdlite "$TCMU_RBD"
    else
        fail "$M: tcmu-handler" "the host could not load $TCMU_RBD ($(rbdl_rc_text "$rc"))"
        show_log "$D/tcmu.log"
    fi
}

TCMU_HOST=0
if build_tcmu_host; then
    TCMU_HOST=1
else
    fail "tcmu-host" "cannot compile the tcmu handler's host program with '$CC'"
    show_log "$TMP/cc.log"
fi
for m in $MODES; do
    case $m in
    preload | substitute | librbd) ;;
    *) die "unknown mode '$m' in RBDLITE_CONSUMER_MODES (preload, substitute, librbd)" ;;
    esac
    M=$m
    D=$TMP/$m
    mkdir -p "$D"
    run_fuse
    stop_fuse
    # This mode's images go now: the next mode's rbd-fuse lists the pool.
    rbdl_remove_images 30 "$POOL/"
    IMAGES=()
    D=$TMP/$m-tcmu
    ((TCMU_HOST)) && run_tcmu
done
if [[ -d /sys/module/target_core_user ]]; then
    echo "NOTE tcmu-runner: no I/O through it here: that needs a TCMU device set up in configfs (targetcli), which this test does not do"
else
    echo "NOTE tcmu-runner: no I/O through it here: the kernel module target_core_user (its I/O path) is absent; only the handler's loading is checked"
fi

rbdl_summary
