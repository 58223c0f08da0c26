#!/bin/bash
# check.sh - the whole test suite, from a clean checkout, in one command:
#
#   tests/check.sh
#
# Installs the Debian packages it needs (when missing; needs root), builds
# out of tree in build/ with -Werror, runs `make check` (unit tests, ABI and
# layering checks, and every cluster test against throwaway Ceph clusters
# that make check starts and always stops: RBDLITE_TEST_LANES of them,
# default 2, each running one test at a time), builds the example
# against the *installed* library through pkg-config, and runs `make
# distcheck` (its make check: TESTS='$(distcheck_tests)') unless
# RBDLITE_SKIP_DISTCHECK=1.  Then it rebuilds in
# build-asan/ with ASan and UBSan (every error fatal) and runs, in that
# build, make check TESTS='$(asan_tests)' (Makefile.am): the unit tests,
# the ABI checks, the Check cluster tests and the differential scripts that
# drive the whole library from C (test-conf, test-diff, test-objmap,
# test-stamps, test-snapops, test-clone, test-edgecases, and the C API's test-snapapi,
# test-cloneapi, test-imageapi, test-featapi, test-cryptapi, and
# test-journal).  RBDLITE_SANITIZERS selects these passes: asan (the
# default), all (asan, then TESTS='$(tsan_tests)', the unit, ABI and Check
# cluster tests, in a TSan build as well), none.
#
# Every command a step runs that fails is reported as
# "command failed: COMMAND (exit N)" (with the directory it ran in),
# followed by its output; a check that fails says what it expected.
# Prints every test log and ends with one "N passed, M failed" line (and
# the names of the failed steps).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
# make check runs the cluster tests on RBDLITE_TEST_LANES clusters (lanes,
# tests/cluster/cluster-test.sh), one test per lane at a time, and
# test-faults beside them on a cluster of its own: one job per lane, and
# one more.  (distcheck's short list runs one test at a time: librbd's
# own reference runs were seen to time out on a machine this loaded.)
lanes=${RBDLITE_TEST_LANES:-2}
[[ $lanes =~ ^[1-8]$ ]] || { echo "RBDLITE_TEST_LANES='$lanes' is not a number of lanes from 1 to 8"; exit 1; }
checkjobs=$((lanes + 1))
pass=0 fail=0 failed=()

# step NAME CMD...: one step of the suite, counted as passed or failed.
step() {
	local name=$1 rc
	shift
	echo "### $name"
	"$@"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1)); echo "### $name: ok"
	else
		fail=$((fail + 1)); failed+=("$name")
		echo "### $name: FAILED (exit $rc)"
	fi
	return 0
}

# run_in DIR CMD...: run CMD in DIR with its output captured; if it fails,
# print "command failed: CMD (exit N)" and the output.  Returns CMD's status.
run_in() {
	local dir=$1 out rc
	shift
	out=$(mktemp) || { echo "command failed: mktemp"; return 1; }
	(cd "$dir" && "$@") >"$out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "command failed: $(printf '%q ' "$@")(exit $rc; in $dir)"
		if [ -s "$out" ]; then
			echo "--- its output:"
			cat "$out"
			echo "--- end of output"
		else
			echo "--- it printed nothing"
		fi
	fi
	rm -f "$out"
	return "$rc"
}
run() { run_in "$PWD" "$@"; }
# run_shown DIR CMD...: like run_in, but the output goes to the terminal as
# it comes (make check's progress); on failure the command is named.
run_shown() {
	local dir=$1 rc
	shift
	(cd "$dir" && "$@")
	rc=$?
	[ "$rc" -eq 0 ] ||
		echo "command failed: $(printf '%q ' "$@")(exit $rc; in $dir; its output is above)"
	return "$rc"
}
# capture VAR CMD...: VAR=CMD's standard output, reported like run.
capture() {
	local var=$1 out err rc
	shift
	err=$(mktemp) || { echo "command failed: mktemp"; return 1; }
	out=$("$@" 2>"$err")
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "command failed: $(printf '%q ' "$@")(exit $rc)"
		echo "--- its output:"
		printf '%s\n' "$out"
		cat "$err"
		echo "--- end of output"
	fi
	rm -f "$err"
	printf -v "$var" '%s' "$out"
	return "$rc"
}
# Exported so that the commands run inside a cluster (bash -c) have them.
export -f run run_in

if ! run bash tests/deps.sh; then
	echo "### dependency installation: FAILED"
	echo "0 passed, 1 failed"
	exit 1
fi
if ! run autoreconf -fi; then
	echo "### autoreconf: FAILED"
	echo "0 passed, 1 failed"
	exit 1
fi

build() {	# build DIR CONFIGURE-ARGS...
	local dir=$1; shift
	run mkdir -p "$dir" &&
		run_in "$dir" "$root/configure" -q "$@" &&
		run_in "$dir" make -s -j"$jobs"
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
	run_shown "$dir" make -s -j"$checkjobs" check "$@"
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
	local stage rc
	stage=$(mktemp -d) || { echo "command failed: mktemp -d"; return 1; }
	install_check_in "$stage"
	rc=$?
	rm -rf "$stage"
	return $rc
}
install_check_in() {	# install_check_in STAGE
	local stage=$1 pc lib libdir cflags libs wrapper sub ldd_out
	# Stage the install (DESTDIR) and let pkg-config prefix its paths.
	run_in build make -s install DESTDIR="$stage" || return 1
	pc=$(find "$stage" -name rbdlite.pc | head -n1)
	[ -n "$pc" ] || { echo "check failed: no rbdlite.pc in the staged install $stage"; return 1; }
	lib=$(find "$stage" -name 'librbdlite.so' | head -n1)
	[ -n "$lib" ] || { echo "check failed: no librbdlite.so in the staged install $stage"; return 1; }
	pc=$(dirname "$pc") libdir=$(dirname "$lib")
	local pkg=(env PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$stage" pkg-config)
	capture cflags "${pkg[@]}" --cflags rbdlite || return 1
	capture libs "${pkg[@]}" --libs rbdlite || return 1
	# shellcheck disable=SC2086 # pkg-config's words
	run cc -Wall -Wextra -Werror -o "$stage/aio_rw" examples/aio_rw.c $cflags $libs || return 1
	# shellcheck disable=SC2086
	run c++ -x c++ -fsyntax-only -Wall -Werror examples/aio_rw.c $cflags || return 1
	# The control-path example is compiled (C and C++) but not run here.
	# shellcheck disable=SC2086
	run cc -Wall -Wextra -Werror -o "$stage/create_snap" examples/create_snap.c \
		$cflags $libs || return 1
	# shellcheck disable=SC2086
	run c++ -x c++ -fsyntax-only -Wall -Werror examples/create_snap.c $cflags || return 1
	# The installed substitutes: rbdlite-run (pointed at the staged
	# library) preloads it into fio; the drop-in directory holds a
	# librbd.so.1 and no development symlink.
	wrapper=$(find "$stage" -path '*/bin/rbdlite-run' | head -n1)
	sub=$(find "$stage" -path '*/librbd1/librbd.so.1' | head -n1)
	[ -x "${wrapper:-/nonexistent}" ] ||
		{ echo "check failed: no executable bin/rbdlite-run in the staged install $stage"; return 1; }
	[ -n "$sub" ] ||
		{ echo "check failed: no librbd1/librbd.so.1 in the staged install $stage"; return 1; }
	[ ! -e "$(dirname "$sub")/librbd.so" ] ||
		{ echo "check failed: $(dirname "$sub")/librbd.so installed (the drop-in directory must have no development symlink)"; return 1; }
	# By default it preloads jemalloc (the path configure found) in front
	# of the library; --no-jemalloc, the library alone.
	local jem
	jem=$(sed -n "s/^jemalloc=\${RBDLITE_RUN_JEMALLOC:-'\(.*\)'}\$/\1/p" "$wrapper")
	[ -n "$jem" ] ||
		{ echo "check failed: $wrapper names no jemalloc"; return 1; }
	# shellcheck disable=SC2016
	run env -u LD_PRELOAD RBDLITE_RUN_LIB="$libdir/librbdlite.so.0" "$wrapper" sh -c \
		'[ "$LD_PRELOAD" = "$1" ] || { echo "LD_PRELOAD is \"$LD_PRELOAD\", expected \"$1\""; exit 1; }' _ \
		"$jem $libdir/librbdlite.so.0" || return 1
	# shellcheck disable=SC2016
	run env -u LD_PRELOAD RBDLITE_RUN_LIB="$libdir/librbdlite.so.0" "$wrapper" --no-jemalloc sh -c \
		'[ "$LD_PRELOAD" = "$1" ] || { echo "LD_PRELOAD is \"$LD_PRELOAD\", expected \"$1\""; exit 1; }' _ \
		"$libdir/librbdlite.so.0" || return 1
	run env RBDLITE_RUN_LIB="$libdir/librbdlite.so.0" "$wrapper" fio --version || return 1
	capture ldd_out env LD_LIBRARY_PATH="$(dirname "$sub")" ldd /usr/bin/fio || return 1
	grep -qF "$(dirname "$sub")/librbd.so.1" <<<"$ldd_out" || {
		echo "check failed: with LD_LIBRARY_PATH=$(dirname "$sub"), ldd /usr/bin/fio does not resolve librbd.so.1 to $sub:"
		printf '%s\n' "$ldd_out"
		return 1
	}
	# shellcheck disable=SC2016
	run tests/cluster/with-cluster.sh bash -c '
		run rbd create --size 64M --image-feature layering "$RBDLITE_TEST_POOL/ex" &&
		run env LD_LIBRARY_PATH="$1" "$2/aio_rw" "$RBDLITE_TEST_POOL" ex 4190000 || exit 1
		out=$(LD_LIBRARY_PATH="$1" ldd "$2/aio_rw" 2>&1)
		grep -qF "$1/librbdlite.so" <<<"$out" || {
			echo "check failed: with LD_LIBRARY_PATH=$1, ldd $2/aio_rw does not resolve librbdlite.so there:"
			printf "%s\n" "$out"
			exit 1
		}' _ "$libdir" "$stage"
}
step "install + pkg-config example" install_check

if [ "${RBDLITE_SKIP_DISTCHECK:-0}" != 1 ]; then
	# VERBOSE=1: a failing test's log is part of the output shown.
	# TESTS: the tarball's own make check runs Makefile.am's
	# distcheck_tests (everything that needs no cluster, and the cluster
	# tests that use the most distributed files); the full suite has just
	# run above, on the same sources.
	step "make distcheck" run_in build make -s distcheck \
		DISTCHECK_CONFIGURE_FLAGS=--enable-werror VERBOSE=1 \
		'TESTS=$(distcheck_tests)'
fi

# Sanitizer builds.  The scripts chosen run librbdlite's own programs
# (cloneop, difftool, snapop, the C API's snapapi, cloneapi, imageapi and
# featapi) and qemu-img with the ASan library preloaded; the rest run fio, qemu-io and the rbd CLI over the same code
# paths and take too long under a sanitizer.  TSan runs the Check tests
# only: librados is not instrumented, so its scripts would mostly measure
# TSan's slowdown.  The subsets are Makefile.am's asan_tests and
# tsan_tests.
case ${RBDLITE_SANITIZERS:-asan} in
none | 0) sans=() ;;
asan) sans=(asan) ;;
all | 1) sans=(asan tsan) ;;
*) echo "unknown RBDLITE_SANITIZERS='$RBDLITE_SANITIZERS' (asan, all, none)"
	fail=$((fail + 1)); failed+=("RBDLITE_SANITIZERS"); sans=() ;;
esac
for san in "${sans[@]}"; do
	step "build ($san)" build "build-$san" --enable-"$san" --enable-werror
	# shellcheck disable=SC2016 # make expands it
	step "make check ($san)" check_in "build-$san" "TESTS=\$(${san}_tests)"
done

# The failed tests once more at the very end, where a truncated copy of
# this output still shows them: each one's FAIL lines and its last lines.
for dir in build build-asan build-tsan; do
	[ -d "$dir/tests" ] || continue
	for trs in $(grep -rlE '^:test-result: (FAIL|ERROR)' --include='*.trs' "$dir/tests" 2>/dev/null | sort); do
		log=${trs%.trs}.log
		echo "### failed: $log"
		grep -E '^(FAIL|ERROR|not ok)' "$log" 2>/dev/null | head -n 20
		echo "--- its last lines:"
		tail -n 8 "$log" 2>/dev/null
	done
done

summary="$pass passed, $fail failed"
[ "${#failed[@]}" -eq 0 ] || summary+=" (failed: $(printf '%s; ' "${failed[@]}" | sed 's/; $//'))"
echo "$summary"
[ "$fail" -eq 0 ]
