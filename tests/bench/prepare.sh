# shellcheck shell=bash
# prepare.sh - sourced by tests/bench.sh, bench-scaling.sh and bench-fio.sh
# (from the source tree's top directory) before they start a cluster.
#
# bench_prepare OUT FILE...
#   Installs the dependencies (tests/deps.sh), builds librbdlite in build/
#   unless every FILE (relative to the top directory) is already there, and
#   creates the results directory OUT.  Returns non-zero on any failure.

bench_prepare() {
	local out=$1 f
	shift
	bash tests/deps.sh || return 1
	for f in "$@"; do
		[ -f "$f" ] && continue
		autoreconf -fi >/dev/null 2>&1 || return 1
		mkdir -p build && (cd build && ../configure -q && make -s -j"$(nproc)") || return 1
		break
	done
	mkdir -p "$out"
}
