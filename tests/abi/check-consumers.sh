#!/bin/bash
# check-consumers.sh - the librbd consumers librbdlite replaces find every
# rbd_* function they import in librbdlite, both ways of substituting it:
#
#   - librbdlite.so (preloaded, e.g. by rbdlite-run) and the drop-in
#     lib/librbd1/librbd.so.1 export every rbd_* that Debian's fio and
#     qemu's block-rbd.so import (nm -D --undefined-only);
#   - the drop-in has SONAME librbd.so.1 and exports exactly what
#     librbdlite.so exports;
#   - at run time, without a cluster: both programs are BIND_NOW, so
#     loading them resolves every import at once.  fio --version and
#     qemu-img info on an rbd: name with a missing conf file (the module
#     loads, then fails reading the conf) must load, and LD_DEBUG=bindings
#     must show every imported rbd_* bound to librbdlite -- through the
#     rbdlite-run wrapper (LD_PRELOAD) and through LD_LIBRARY_PATH (where
#     the real librbd must not be loaded at all);
#   - the wrapper's error handling (missing library, missing command, bad
#     option) and that it keeps an existing LD_PRELOAD in front.
#
# fio and block-rbd.so are required (tests/deps.sh installs fio, qemu-utils
# and qemu-block-extra): missing means failure.  RBDLITE_QEMU_BLOCK_RBD
# overrides the module's path.
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
# In sanitizer builds (RBDLITE_SAN=asan|tsan) the libraries need the
# sanitizer runtime preloaded first, as in tests/cluster/preload-env.sh.
san_pre=
case ${RBDLITE_SAN:-} in
'' | none) ;;
asan | tsan)
	san_pre=$(${CC:-gcc} -print-file-name="lib$RBDLITE_SAN.so")
	cxx=$(${CC:-gcc} -print-file-name=libstdc++.so.6)
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
[ -x "$fio" ] || { bad "fio not found (install the Debian package fio: tests/deps.sh judges)"; missing=1; }
[ -x "$qemu_img" ] || { bad "qemu-img not found (Debian package qemu-utils: tests/deps.sh judges)"; missing=1; }
[ -n "$block_rbd" ] && [ -f "$block_rbd" ] ||
	{ bad "qemu's block-rbd.so not found (Debian package qemu-block-extra: tests/deps.sh judges)"; missing=1; }
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

imports "$fio" >"$tmp/fio.imp"
imports "$block_rbd" >"$tmp/qemu.imp"
# The counts documented for Debian 12's fio 3.33 and qemu 7.2; an empty
# list would mean the wrong binary (or a broken nm), not success.
[ "$(wc -l <"$tmp/fio.imp")" -ge 15 ] && ok "fio imports $(wc -l <"$tmp/fio.imp") rbd_* functions" ||
	bad "fio imports only $(wc -l <"$tmp/fio.imp") rbd_* functions (expected 15)"
[ "$(wc -l <"$tmp/qemu.imp")" -ge 29 ] && ok "block-rbd.so imports $(wc -l <"$tmp/qemu.imp") rbd_* functions" ||
	bad "block-rbd.so imports only $(wc -l <"$tmp/qemu.imp") rbd_* functions (expected 29)"

for l in "$lite" "$sub"; do
	exports "$l" >"$tmp/exp"
	for c in fio qemu; do
		m=$(comm -23 "$tmp/$c.imp" "$tmp/exp")
		if [ -z "$m" ]; then
			ok "${l##*/} exports all $(wc -l <"$tmp/$c.imp") rbd_* imported by $c"
		else
			bad "${l##*/} lacks rbd_* imported by $c:" $m
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

# bound FILE OBJ LIB IMPORTS: every symbol in IMPORTS is bound from OBJ
# (a path suffix) to LIB (exact path) in the LD_DEBUG=bindings files FILE*.
bound() {
	local s miss=
	for s in $(cat "$4"); do
		grep -qF "$2 [0] to $3 [0]: normal symbol \`$s'" "$1".* 2>/dev/null || miss="$miss $s"
	done
	[ -z "$miss" ] || { echo "  not bound to $3:$miss"; return 1; }
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
for mode in preload dropin; do
	if [ "$mode" = preload ]; then target=$lite.0; else target=$sub; fi
	# fio: all imports resolve at startup (BIND_NOW).
	if load fio-$mode $mode "$fio" --version && grep -q '^fio-' "$tmp/fio-$mode.out"; then
		if bound "$tmp/fio-$mode.bind" "/fio" "$target" "$tmp/fio.imp"; then
			ok "$mode: fio loads, all its rbd_* bind to ${target##*/}"
		else
			bad "$mode: fio's rbd_* do not all bind to $target"
		fi
	else
		bad "$mode: fio --version failed:"
		sed 's/^/  | /' "$tmp/fio-$mode.out"
	fi
	# qemu-img: block-rbd.so is dlopen'ed (BIND_NOW) for an rbd: name, then
	# fails reading the conf file -- after every import was resolved.
	if [ "${RBDLITE_SAN:-}" = tsan ]; then
		# Not counted as a pass: the static check above covers the module.
		echo "SKIP: $mode: qemu-img cannot run under ThreadSanitizer (its coroutines switch stacks with siglongjmp)"
	else
		load qemu-$mode $mode "$qemu_img" info "rbd:nopool/noimage:conf=$tmp/no-such.conf"
		if ! grep -q 'error reading conf file' "$tmp/qemu-$mode.out"; then
			bad "$mode: qemu-img did not get as far as reading the conf file:"
			sed 's/^/  | /' "$tmp/qemu-$mode.out"
		elif bound "$tmp/qemu-$mode.bind" "/${block_rbd##*/}" "$target" "$tmp/qemu.imp"; then
			ok "$mode: qemu loads block-rbd.so, all its rbd_* bind to ${target##*/}"
		else
			bad "$mode: block-rbd.so's rbd_* do not all bind to $target"
		fi
	fi
	if [ "$mode" = dropin ]; then
		# The real librbd must not be in the process at all.
		if grep -hs 'calling init: .*librbd\.so' "$tmp"/fio-dropin.bind.* "$tmp"/qemu-dropin.bind.* |
			grep -v "$subdir/" >"$tmp/real"; then
			bad "dropin: the real librbd was loaded too:"
			sed 's/^/  | /' "$tmp/real"
		elif ! grep -qh "calling init: $subdir/librbd.so.1" "$tmp"/fio-dropin.bind.*; then
			bad "dropin: $subdir/librbd.so.1 was never initialised in fio"
		else
			ok "dropin: only the drop-in librbd.so.1 is loaded"
		fi
	fi
done

# ---- the wrapper itself ------------------------------------------------------
W() { env -u LD_PRELOAD ${san_pre:+LD_PRELOAD="$san_pre"} RBDLITE_RUN_LIB="$lite" "$wrapper" "$@"; }
out=$(W sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "${san_pre:+$san_pre }$lite" ] && ok "wrapper adds the library to LD_PRELOAD" ||
	bad "wrapper: LD_PRELOAD='$out', expected '${san_pre:+$san_pre }$lite'"
first=${san_pre:-/lib/x86_64-linux-gnu/libc.so.6}
out=$(LD_PRELOAD=$first RBDLITE_RUN_LIB="$lite" "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "$first $lite" ] && ok "wrapper keeps an existing LD_PRELOAD in front" ||
	bad "wrapper with existing LD_PRELOAD: got '$out'"
out=$(W "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' 2>&1)
[ "$out" = "${san_pre:+$san_pre }$lite" ] && ok "nested wrappers add the library once" ||
	bad "nested wrappers: LD_PRELOAD='$out'"
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
