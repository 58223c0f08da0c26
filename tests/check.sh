#!/bin/bash
# check.sh - the whole test suite, from a clean checkout, in one command:
#
#   tests/check.sh
#
# Installs the Debian packages it needs (when missing; needs root), builds
# out of tree in build/ with -Werror, runs `make check` (unit tests, ABI
# checks, and every cluster test against a throwaway Ceph cluster that it
# starts and always stops), builds the example against the *installed*
# library through pkg-config, and runs `make distcheck` unless
# RBDLITE_SKIP_DISTCHECK=1.  Then it rebuilds in build-asan/ with ASan and
# UBSan (every error fatal) and runs the unit tests, the Check cluster
# tests and the differential scripts that drive the whole library from C
# (test-conf, test-diff, test-snapops, test-clone) in that build.
# RBDLITE_SANITIZERS selects these passes: asan (the default), all (asan,
# then the unit and Check cluster tests in a TSan build as well), none.
# Prints every test log and ends with one "N passed, M failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
pass=0 fail=0
step() {
	local name=$1; shift
	echo "### $name"
	if "$@"; then
		pass=$((pass + 1)); echo "### $name: ok"
	else
		fail=$((fail + 1)); echo "### $name: FAILED"
	fi
}

bash tests/deps.sh || { echo "dependency installation failed"; echo "0 passed, 1 failed"; exit 1; }
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi || exit 1

build() {	# build DIR CONFIGURE-ARGS...
	local dir=$1; shift
	mkdir -p "$dir" && (cd "$dir" && "$root/configure" -q "$@" && make -s -j"$jobs")
}
show_logs() {	# show_logs DIR
	local f
	for f in $(find "$1/tests" -name '*.log' | sort); do
		echo "----- ${f#"$1"/}"
		cat "$f"
	done
}
check_in() {	# check_in DIR [make args]
	local dir=$1; shift
	(cd "$dir" && make -s -j"$jobs" check "$@")
	local rc=$?
	show_logs "$dir"
	return $rc
}

step "build (-Werror)" build build --enable-werror
step "make check" check_in build

# The examples compile against the installed library via pkg-config, as C
# and as C++; aio_rw runs against a throwaway cluster; the installed
# rbdlite-run and drop-in librbd.so.1 substitute librbdlite into fio.
install_check() {
	local stage
	stage=$(mktemp -d) || return 1
	# Stage the install (DESTDIR) and let pkg-config prefix its paths.
	(cd build && make -s install DESTDIR="$stage" >/dev/null) || return 1
	local pc
	pc=$(dirname "$(find "$stage" -name rbdlite.pc | head -n1)")
	local libdir
	libdir=$(dirname "$(find "$stage" -name 'librbdlite.so' | head -n1)")
	local pkg=(env PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$stage" pkg-config)
	# shellcheck disable=SC2046
	cc -Wall -Wextra -Werror -o "$stage/aio_rw" examples/aio_rw.c \
		$("${pkg[@]}" --cflags --libs rbdlite) || return 1
	# shellcheck disable=SC2046
	c++ -x c++ -fsyntax-only -Wall -Werror examples/aio_rw.c \
		$("${pkg[@]}" --cflags rbdlite) || return 1
	# The control-path example is compiled (C and C++) but not run here.
	# shellcheck disable=SC2046
	cc -Wall -Wextra -Werror -o "$stage/create_snap" examples/create_snap.c \
		$("${pkg[@]}" --cflags --libs rbdlite) || return 1
	# shellcheck disable=SC2046
	c++ -x c++ -fsyntax-only -Wall -Werror examples/create_snap.c \
		$("${pkg[@]}" --cflags rbdlite) || return 1
	# The installed substitutes: rbdlite-run (pointed at the staged
	# library) preloads it into fio; the drop-in directory holds a
	# librbd.so.1 and no development symlink.
	local run sub
	run=$(find "$stage" -path '*/bin/rbdlite-run' | head -n1)
	sub=$(find "$stage" -path '*/librbd1/librbd.so.1' | head -n1)
	[ -x "$run" ] && [ -n "$sub" ] && [ ! -e "$(dirname "$sub")/librbd.so" ] || return 1
	# shellcheck disable=SC2016
	RBDLITE_RUN_LIB="$libdir/librbdlite.so.0" "$run" sh -c 'test "$LD_PRELOAD" = "$1"' _ \
		"$libdir/librbdlite.so.0" || return 1
	RBDLITE_RUN_LIB="$libdir/librbdlite.so.0" "$run" fio --version >/dev/null || return 1
	LD_LIBRARY_PATH="$(dirname "$sub")" ldd /usr/bin/fio | grep -q "$(dirname "$sub")/librbd.so.1" ||
		return 1
	tests/cluster/with-cluster.sh bash -c '
		rbd create --size 64M --image-feature layering "$RBDLITE_TEST_POOL/ex" &&
		LD_LIBRARY_PATH="$1" "$2/aio_rw" "$RBDLITE_TEST_POOL" ex 4190000 &&
		LD_LIBRARY_PATH="$1" ldd "$2/aio_rw" | grep -q "$1/librbdlite.so"' _ "$libdir" "$stage"
	local rc=$?
	rm -rf "$stage"
	return $rc
}
step "install + pkg-config example" install_check

if [ "${RBDLITE_SKIP_DISTCHECK:-0}" != 1 ]; then
	step "make distcheck" bash -c "cd build && make -s distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror >/dev/null"
fi

# Sanitizer builds.  The scripts chosen run librbdlite's own programs
# (cloneop, difftool, snapop) and qemu-img with the ASan library
# preloaded; the rest run fio, qemu-io and the rbd CLI over the same code
# paths and take too long under a sanitizer.  TSan runs the Check tests
# only: librados is not instrumented, so its scripts would mostly measure
# TSan's slowdown.
case ${RBDLITE_SANITIZERS:-asan} in
none | 0) sans=() ;;
asan) sans=(asan) ;;
all | 1) sans=(asan tsan) ;;
*) echo "unknown RBDLITE_SANITIZERS='$RBDLITE_SANITIZERS' (asan, all, none)"
	fail=$((fail + 1)); sans=() ;;
esac
for san in "${sans[@]}"; do
	scripts=
	[ "$san" = asan ] && scripts="test-conf.sh test-diff.sh test-snapops.sh test-clone.sh"
	step "build ($san)" build "build-$san" --enable-"$san" --enable-werror
	RBDLITE_CLUSTER_SCRIPTS=$scripts step "make check ($san)" check_in "build-$san"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
