#!/bin/bash
# check-consumers.sh - the librbd consumers librbdlite replaces find every
# rbd_* function they import in librbdlite, both ways of substituting it.
# The consumers are Debian 12's unmodified packages:
#
#   fio          /usr/bin/fio (--ioengine=rbd)
#   qemu         qemu's block-rbd.so module (qemu-block-extra)
#   python       python3-rbd's rbd.cpython-*.so
#   libvirt      libvirt's rbd storage backend module
#                (libvirt-daemon-driver-storage-rbd)
#   tgt          tgt's rbd backing store bs_rbd.so (tgt-rbd)
#   tcmu         tcmu-runner's handler_rbd.so
#   rbd-fuse     /usr/bin/rbd-fuse
#
# Checks:
#   - librbdlite.so (preloaded, e.g. by rbdlite-run) and the drop-in
#     lib/librbd1/librbd.so.1 export every rbd_* each consumer imports
#     (nm -D --undefined-only); the missing ones are listed by name;
#   - the drop-in has SONAME librbd.so.1 and exports exactly what
#     librbdlite.so exports;
#   - at run time, without a cluster, through the rbdlite-run wrapper
#     (LD_PRELOAD) and through LD_LIBRARY_PATH (the drop-in; the real
#     librbd must not be loaded at all), every consumer loads with all its
#     imports resolved at once and LD_DEBUG=bindings shows each imported
#     rbd_* bound to librbdlite:
#       fio --version (fio is BIND_NOW);
#       qemu-img info on an rbd: name with a missing conf file (the module
#         is dlopen'ed BIND_NOW, then fails reading the conf);
#       python3 -c 'import rbd' with LD_BIND_NOW=1 (the module is not
#         BIND_NOW; with it every import is resolved by the import);
#       libvirt's backend dlopen'ed (RTLD_NOW) by python ctypes after
#         libvirt's storage driver module, which defines the virStorage*
#         symbols the backend imports, as libvirtd does;
#       bs_rbd.so and handler_rbd.so dlopen'ed (RTLD_NOW) by a small host
#         program compiled here ($CC, default gcc) that defines, as empty
#         stubs, the symbols tgtd and tcmu-runner export to their modules;
#       rbd-fuse with a missing conf file (BIND_NOW; it exits in
#         global_init, after every import was resolved);
#   - the wrapper's error handling (missing library, missing command, bad
#     option) and that it keeps an existing LD_PRELOAD in front.
#
# Every consumer is required (tests/deps.sh installs them): a missing one
# means failure.  RBDLITE_QEMU_BLOCK_RBD overrides block-rbd.so's path.
set -u
builddir=${RBDLITE_BUILDDIR:-.}
lite="$builddir/lib/.libs/librbdlite.so"
subdir="$builddir/lib/librbd1/.libs"
sub="$subdir/librbd.so.1"
wrapper="$builddir/lib/tools/rbdlite-run"
fio=$(command -v fio || echo /usr/bin/fio)
qemu_img=$(command -v qemu-img || echo /usr/bin/qemu-img)
block_rbd=${RBDLITE_QEMU_BLOCK_RBD:-}
if [ -z "$block_rbd" ]; then
	for f in /usr/lib/x86_64-linux-gnu/qemu/block-rbd.so /usr/lib/*/qemu/block-rbd.so \
		/usr/lib/qemu/block-rbd.so /usr/lib64/qemu/block-rbd.so; do
		[ -f "$f" ] && { block_rbd=$f; break; }
	done
fi
# first PATTERN...: the first existing file among the (glob) patterns.
first() {
	local f
	for f in "$@"; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}
# The python3 that has python3-rbd: Debian's /usr/bin/python3 (a python3
# earlier in PATH may be another installation).
py=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import rbd' 2>/dev/null; then py=$p; break; fi
done
py_rbd=
[ -n "$py" ] && py_rbd=$("$py" -c 'import rbd; print(rbd.__file__)' 2>/dev/null)
[ -n "$py_rbd" ] || py_rbd=$(first /usr/lib/python3/dist-packages/rbd.cpython-*.so)
lv_storage=$(first /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_storage.so \
	/usr/lib/*/libvirt/connection-driver/libvirt_driver_storage.so \
	/usr/lib64/libvirt/connection-driver/libvirt_driver_storage.so)
lv_rbd=$(first /usr/lib/x86_64-linux-gnu/libvirt/storage-backend/libvirt_storage_backend_rbd.so \
	/usr/lib/*/libvirt/storage-backend/libvirt_storage_backend_rbd.so \
	/usr/lib64/libvirt/storage-backend/libvirt_storage_backend_rbd.so)
bs_rbd=$(first /usr/lib/tgt/backing-store/bs_rbd.so /usr/lib/*/tgt/backing-store/bs_rbd.so \
	/usr/lib64/tgt/backing-store/bs_rbd.so)
tcmu_rbd=$(first /usr/lib/x86_64-linux-gnu/tcmu-runner/handler_rbd.so \
	/usr/lib/*/tcmu-runner/handler_rbd.so /usr/lib64/tcmu-runner/handler_rbd.so)
rbd_fuse=$(command -v rbd-fuse || echo /usr/bin/rbd-fuse)
cc=${CC:-gcc}
# In sanitizer builds (RBDLITE_SAN=asan|tsan) the libraries need the
# sanitizer runtime preloaded first, as in tests/cluster/preload-env.sh.
san_pre=
case ${RBDLITE_SAN:-} in
'' | none) ;;
asan | tsan)
	san_pre=$($cc -print-file-name="lib$RBDLITE_SAN.so")
	cxx=$($cc -print-file-name=libstdc++.so.6)
	case $san_pre:$cxx in
	/*:/*) ;;
	*) echo "FAIL: cannot locate lib$RBDLITE_SAN.so or libstdc++.so.6"; echo "0 passed, 1 failed"; exit 1 ;;
	esac
	# The runtime's C++ interceptors need libstdc++ loaded at startup, which
	# a C program (qemu-img) only gets later, from dlopen'ing block-rbd.so.
	san_pre="$san_pre $cxx"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	;;
esac
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rbdlite-abi.XXXXXX") || exit 1
trap 'rm -rf -- "$tmp"' EXIT

missing=0
for f in "$lite" "$sub" "$wrapper"; do
	[ -e "$f" ] || { bad "$f not built"; missing=1; }
done
# need FILE WHAT PACKAGE GROUP: a consumer that must be installed.
need() {
	[ -n "$1" ] && [ -f "$1" ] && return 0
	bad "$2 not found (Debian package $3: tests/deps.sh $4)"
	missing=1
}
need "$fio" "fio" fio judges
need "$qemu_img" "qemu-img" qemu-utils judges
need "$block_rbd" "qemu's block-rbd.so" qemu-block-extra judges
[ -n "$py" ] || { bad "no python3 can import rbd (Debian package python3-rbd: tests/deps.sh judges)"; missing=1; }
need "$py_rbd" "python3-rbd's rbd.cpython-*.so" python3-rbd judges
need "$lv_storage" "libvirt's storage driver libvirt_driver_storage.so" libvirt-daemon consumers
need "$lv_rbd" "libvirt's rbd storage backend libvirt_storage_backend_rbd.so" libvirt-daemon-driver-storage-rbd consumers
need "$bs_rbd" "tgt's rbd backing store bs_rbd.so" tgt-rbd consumers
need "$tcmu_rbd" "tcmu-runner's handler_rbd.so" tcmu-runner consumers
need "$rbd_fuse" "rbd-fuse" rbd-fuse consumers
command -v "${cc%% *}" >/dev/null ||
	{ bad "no C compiler '$cc' for the module host program (set CC; Debian package gcc)"; missing=1; }
if [ "$missing" = 1 ]; then
	echo "$pass passed, $fail failed"
	exit 1
fi
lite=$(cd "$(dirname "$lite")" && pwd)/librbdlite.so
subdir=$(cd "$subdir" && pwd)
sub=$subdir/librbd.so.1

imports() {	# imports FILE: the rbd_* it imports, one per line, sorted
	nm -D --undefined-only "$1" | awk '{ sub(/@.*/, "", $2); print $2 }' |
		grep '^rbd_' | sort -u
}
exports() {	# exports FILE: the functions it defines, sorted
	nm -D --defined-only "$1" | awk '$2 ~ /^[TWi]$/ { print $3 }' | sort -u
}

# The consumers: name, file, and how many rbd_* Debian 12's build imports
# (fio 3.33, qemu 7.2, python3-rbd 16.2.15, libvirt 9.0, tgt 1.0.85,
# tcmu-runner 1.5.4, rbd-fuse 16.2.15).  Fewer would mean the wrong file
# (or a broken nm), not success.
consumers="fio qemu python libvirt tgt tcmu rbd-fuse"
declare -A file=([fio]=$fio [qemu]=$block_rbd [python]=$py_rbd [libvirt]=$lv_rbd
	[tgt]=$bs_rbd [tcmu]=$tcmu_rbd [rbd-fuse]=$rbd_fuse)
declare -A want=([fio]=15 [qemu]=29 [python]=201 [libvirt]=25 [tgt]=7 [tcmu]=23 [rbd-fuse]=12)
for c in $consumers; do
	imports "${file[$c]}" >"$tmp/$c.imp"
	n=$(wc -l <"$tmp/$c.imp")
	if [ "$n" -ge "${want[$c]}" ]; then
		ok "$c: ${file[$c]##*/} imports $n rbd_* functions"
	else
		bad "$c: ${file[$c]##*/} imports only $n rbd_* functions (expected ${want[$c]})"
	fi
done

for l in "$lite" "$sub"; do
	exports "$l" >"$tmp/exp"
	for c in $consumers; do
		m=$(comm -23 "$tmp/$c.imp" "$tmp/exp")
		if [ -z "$m" ]; then
			ok "${l##*/} exports all $(wc -l <"$tmp/$c.imp") rbd_* imported by $c"
		else
			bad "${l##*/} lacks $(echo "$m" | wc -l) of the $(wc -l <"$tmp/$c.imp") rbd_* imported by $c:" $m
		fi
	done
done

soname=$(readelf -d "$sub" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librbd.so.1 ] && ok "drop-in SONAME is librbd.so.1" ||
	bad "drop-in SONAME is '$soname', not librbd.so.1"
if [ "$(nm -D --defined-only "$lite" | awk '{ print $2, $3 }' | sort)" = \
     "$(nm -D --defined-only "$sub" | awk '{ print $2, $3 }' | sort)" ]; then
	ok "drop-in exports exactly what librbdlite.so exports ($(exports "$sub" | wc -l) functions)"
else
	bad "drop-in and librbdlite.so export different symbols:"
	diff <(nm -D --defined-only "$lite" | awk '{ print $2, $3 }' | sort) \
		<(nm -D --defined-only "$sub" | awk '{ print $2, $3 }' | sort)
fi
if readelf -d "$sub" | grep -q 'NEEDED.*librbd'; then
	bad "drop-in depends on a librbd"
else
	ok "drop-in does not depend on any librbd"
fi

# ---- the module host for bs_rbd.so and handler_rbd.so -----------------------
# tgtd and tcmu-runner export functions (and a few variables) to their
# modules; the modules are BIND_NOW, so a dlopen outside the daemon needs
# every one of them defined.  The host defines each unversioned symbol the
# two modules import, other than rbd_* and rados_*, as an empty function
# returning 0 (a module's constructor, e.g. bs_rbd's registration with
# tgtd, calls one), dlopen()s the module given with RTLD_NOW and looks up
# the symbols named after it.
for m in "$bs_rbd" "$tcmu_rbd"; do
	nm -D --undefined-only "$m" | awk '$1 == "U" && $2 !~ /@/ { print $2 }'
done | grep -Ev '^(rbd|rados)_' | sort -u >"$tmp/stubs"
{
	echo '/* stubs for the symbols tgtd and tcmu-runner export to their modules */'
	sed 's/.*/long &(void); long &(void) { return 0; }/' "$tmp/stubs"
} >"$tmp/stubs.c"
cat >"$tmp/host.c" <<'EOC'
/* host MODULE SYMBOL...: dlopen MODULE with RTLD_NOW, then dlsym each SYMBOL. */
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h;
	int i;

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen failed: %s\n", dlerror());
		return 1;
	}
	for (i = 2; i < argc; i++) {
		if (!dlsym(h, argv[i])) {
			fprintf(stderr, "dlsym %s failed: %s\n", argv[i], dlerror());
			return 1;
		}
	}
	printf("module loaded: %s\n", argv[1]);
	return 0;
}
EOC
host=$tmp/modhost
# shellcheck disable=SC2086 # CC may carry flags
if ! $cc -o "$host" "$tmp/host.c" "$tmp/stubs.c" -rdynamic -ldl >"$tmp/cc.log" 2>&1; then
	bad "cannot build the module host program with '$cc':"
	sed 's/^/  | /' "$tmp/cc.log"
	host=
fi

# bound FILE OBJ LIB IMPORTS: every symbol in IMPORTS is bound from OBJ
# (a path suffix) to LIB (exact path) in the LD_DEBUG=bindings files FILE*.
bound() {
	local s miss=
	for s in $(cat "$4"); do
		grep -qF "$2 [0] to $3 [0]: normal symbol \`$s'" "$1".* 2>/dev/null || miss="$miss $s"
	done
	[ -z "$miss" ] || { echo "  not bound to $3 ($(echo $miss | wc -w)):$miss"; return 1; }
}
# load NAME MODE CMD...: run CMD with LD_DEBUG=bindings (MODE: preload
# through the wrapper, or dropin through LD_LIBRARY_PATH); output in
# $tmp/NAME.out, binding logs in $tmp/NAME.bind.*
load() {
	local name=$1 mode=$2
	shift 2
	rm -f "$tmp/$name".bind.*
	# Judged by output and bindings, not by exit status: a timeout keeps a
	# hang at exit (seen with ASan's runtime in qemu-img's atexit handlers)
	# from stalling the suite.
	if [ "$mode" = preload ]; then
		timeout -k 5 30 env -u LD_PRELOAD ${san_pre:+LD_PRELOAD="$san_pre"} \
			LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$tmp/$name.bind" \
			RBDLITE_RUN_LIB="$lite.0" "$wrapper" "$@" >"$tmp/$name.out" 2>&1
	else
		timeout -k 5 30 env -u LD_PRELOAD ${san_pre:+LD_PRELOAD="$san_pre"} \
			LD_DEBUG=bindings,files LD_DEBUG_OUTPUT="$tmp/$name.bind" \
			LD_LIBRARY_PATH="$subdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$@" >"$tmp/$name.out" 2>&1
	fi
}
# judge NAME MODE CONSUMER OBJ PATTERN WHAT: after load NAME MODE ...,
# its output must match PATTERN (the consumer got as far as WHAT), and
# every rbd_* CONSUMER imports must be bound from OBJ to the target.
judge() {
	local name=$1 mode=$2 c=$3 obj=$4 pat=$5 what=$6
	if ! grep -q -- "$pat" "$tmp/$name.out"; then
		bad "$mode: $c: $what failed:"
		sed 's/^/  | /' "$tmp/$name.out" | tail -n 15
	elif bound "$tmp/$name.bind" "$obj" "$target" "$tmp/$c.imp"; then
		ok "$mode: $c: $what, all its $(wc -l <"$tmp/$c.imp") rbd_* bind to ${target##*/}"
	else
		bad "$mode: $c: $what, but its rbd_* do not all bind to $target"
	fi
}
cat >"$tmp/lv.py" <<'EOP'
import ctypes, os, sys
# libvirtd's storage driver defines the virStorage* symbols its backends
# import; it loads them the same way (RTLD_NOW).
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
ctypes.CDLL(sys.argv[2], mode=os.RTLD_NOW)
print("libvirt rbd backend loaded")
EOP
for mode in preload dropin; do
	if [ "$mode" = preload ]; then target=$lite.0; else target=$sub; fi
	# fio: all imports resolve at startup (BIND_NOW).
	load fio-$mode $mode "$fio" --version
	judge fio-$mode $mode fio /fio '^fio-' "fio --version"
	# qemu-img: block-rbd.so is dlopen'ed (BIND_NOW) for an rbd: name, then
	# fails reading the conf file -- after every import was resolved.
	if [ "${RBDLITE_SAN:-}" = tsan ]; then
		# Not counted as a pass: the static check above covers the module.
		echo "SKIP: $mode: qemu-img cannot run under ThreadSanitizer (its coroutines switch stacks with siglongjmp)"
	else
		load qemu-$mode $mode "$qemu_img" info "rbd:nopool/noimage:conf=$tmp/no-such.conf"
		judge qemu-$mode $mode qemu "/${block_rbd##*/}" 'error reading conf file' \
			"qemu-img loads block-rbd.so"
	fi
	# python3-rbd: LD_BIND_NOW makes the import resolve every import.
	load py-$mode $mode env LD_BIND_NOW=1 "$py" -c \
		'import rbd; print("import rbd: librbd version %d.%d.%d" % rbd.RBD().version())'
	judge py-$mode $mode python "/${py_rbd##*/}" '^import rbd: librbd version 1\.' \
		"python3 -c 'import rbd' (LD_BIND_NOW=1)"
	load lv-$mode $mode "$py" "$tmp/lv.py" "$lv_storage" "$lv_rbd"
	judge lv-$mode $mode libvirt "/${lv_rbd##*/}" '^libvirt rbd backend loaded' \
		"libvirt's rbd backend dlopen'ed (RTLD_NOW)"
	if [ -n "$host" ]; then
		load tgt-$mode $mode "$host" "$bs_rbd"
		judge tgt-$mode $mode tgt "/${bs_rbd##*/}" '^module loaded' "bs_rbd.so dlopen'ed (RTLD_NOW)"
		load tcmu-$mode $mode "$host" "$tcmu_rbd" handler_init tcmu_rbd_handler
		judge tcmu-$mode $mode tcmu "/${tcmu_rbd##*/}" '^module loaded' \
			"handler_rbd.so dlopen'ed (RTLD_NOW)"
	fi
	load fuse-$mode $mode "$rbd_fuse" -c "$tmp/no-such.conf" "$tmp/no-such-dir"
	judge fuse-$mode $mode rbd-fuse /rbd-fuse 'unable to open config file' \
		"rbd-fuse starts (and stops at the missing conf)"
	if [ "$mode" = dropin ]; then
		# The real librbd must not be in the process at all.
		if grep -hs 'calling init: .*librbd\.so' "$tmp"/*-dropin.bind.* |
			grep -v "$subdir/" | sort -u >"$tmp/real" && [ -s "$tmp/real" ]; then
			bad "dropin: the real librbd was loaded too:"
			sed 's/^/  | /' "$tmp/real"
		elif ! grep -qh "calling init: $subdir/librbd.so.1" "$tmp"/fio-dropin.bind.*; then
			bad "dropin: $subdir/librbd.so.1 was never initialised in fio"
		else
			ok "dropin: only the drop-in librbd.so.1 is loaded (in every consumer)"
		fi
	fi
done

# ---- the wrapper itself ------------------------------------------------------
W() { env -u LD_PRELOAD ${san_pre:+LD_PRELOAD="$san_pre"} RBDLITE_RUN_LIB="$lite" "$wrapper" "$@"; }
# jemalloc by default (the configured path), unless a sanitizer runtime
# already owns malloc.
jem=$(sed -n "s/^jemalloc=\${RBDLITE_RUN_JEMALLOC:-'\(.*\)'}\$/\1/p" "$wrapper")
[ -n "$jem" ] && [ -f "$jem" ] || bad "wrapper: no configured jemalloc path ('$jem')"
if [ -n "$san_pre" ]; then default_pre="$san_pre $lite"; else default_pre="$jem $lite"; fi
out=$(W sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "$default_pre" ] && ok "wrapper adds jemalloc and the library to LD_PRELOAD" ||
	bad "wrapper: LD_PRELOAD='$out', expected '$default_pre'"
out=$(W --no-jemalloc sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "${san_pre:+$san_pre }$lite" ] && ok "wrapper --no-jemalloc adds the library only" ||
	bad "wrapper --no-jemalloc: LD_PRELOAD='$out', expected '${san_pre:+$san_pre }$lite'"
out=$(W --jemalloc sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "${san_pre:+$san_pre }$jem $lite" ] && ok "wrapper --jemalloc adds jemalloc even after a sanitizer" ||
	bad "wrapper --jemalloc: LD_PRELOAD='$out'"
first=${san_pre:-/lib/x86_64-linux-gnu/libc.so.6}
out=$(LD_PRELOAD=$first RBDLITE_RUN_LIB="$lite" "$wrapper" --no-jemalloc sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "$first $lite" ] && ok "wrapper keeps an existing LD_PRELOAD in front" ||
	bad "wrapper with existing LD_PRELOAD: got '$out'"
out=$(W "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "$default_pre" ] && ok "nested wrappers add each library once" ||
	bad "nested wrappers: LD_PRELOAD='$out'"
out=$(RBDLITE_RUN_JEMALLOC="$tmp/none.so" W sh -c 'printf %s "$LD_PRELOAD"' 2>"$tmp/err")
[ "$out" = "${san_pre:+$san_pre }$lite" ] && { [ -n "$san_pre" ] || grep -q "jemalloc not found at $tmp/none.so" "$tmp/err"; } &&
	ok "wrapper without jemalloc runs with a notice" ||
	bad "wrapper without jemalloc: LD_PRELOAD='$out', $(cat "$tmp/err")"
W --help | grep -q "usage: rbdlite-run" && ok "wrapper --help" || bad "wrapper --help"
W --version | grep -q "^rbdlite-run (librbdlite) [0-9]" && ok "wrapper --version" || bad "wrapper --version"
env -u LD_PRELOAD ${san_pre:+LD_PRELOAD="$san_pre"} RBDLITE_RUN_LIB="$tmp/none.so" \
	"$wrapper" true 2>"$tmp/err"
rc=$?
[ $rc = 127 ] && grep -q "not found at $tmp/none.so" "$tmp/err" && ok "wrapper refuses a missing library" ||
	bad "wrapper with a missing library: exit $rc, $(cat "$tmp/err")"
W --jemalloc true 2>"$tmp/err" && ok "wrapper --jemalloc (configured path exists)" ||
	bad "wrapper --jemalloc: $(cat "$tmp/err")"
RBDLITE_RUN_JEMALLOC="$tmp/none.so" W --jemalloc true 2>"$tmp/err"
rc=$?
[ $rc = 127 ] && grep -q "jemalloc not found" "$tmp/err" && ok "wrapper refuses a missing jemalloc" ||
	bad "wrapper with a missing jemalloc: exit $rc, $(cat "$tmp/err")"
W "$tmp/no-such-command" 2>"$tmp/err"
rc=$?
[ $rc = 127 ] && grep -q "command not found" "$tmp/err" && ok "wrapper refuses a missing command" ||
	bad "wrapper with a missing command: exit $rc"
W --no-such-option true 2>/dev/null
rc=$?
[ $rc = 2 ] && ok "wrapper rejects an unknown option" || bad "wrapper with an unknown option: exit $rc"
W sh -c 'exit 7'
rc=$?
[ $rc = 7 ] && ok "wrapper passes the command's exit status on" || bad "wrapper: exit status $rc, expected 7"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
