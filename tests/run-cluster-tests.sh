#!/bin/bash
# run-cluster-tests.sh - start a throwaway Ceph cluster, run every cluster
# test against it, stop the cluster (always, even on failure or Ctrl-C).
#
# Run by `make check` (it is one of TESTS); run it by hand from the build
# directory to see each test's output, or pass test names to run a subset:
#   tests/run-cluster-tests.sh check_io test-compat.sh
# With RBDLITE_USE_CLUSTER=1 and CEPH_CONF etc. already exported, it uses
# that cluster instead of starting one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${RBDLITE_SRCDIR:-$(cd "$here/.." && pwd)}
builddir=${RBDLITE_BUILDDIR:-$(pwd)}
export RBDLITE_SRCDIR="$srcdir" RBDLITE_BUILDDIR="$builddir"

if [ "${RBDLITE_USE_CLUSTER:-0}" != 1 ] || [ -z "${CEPH_CONF:-}" ]; then
	exec "$srcdir/tests/cluster/with-cluster.sh" env RBDLITE_USE_CLUSTER=1 "$0" "$@"
fi

progs=(check_open check_io)
# RBDLITE_CLUSTER_SCRIPTS overrides the shell tests (set it empty to run
# only the Check programs, e.g. in sanitizer builds).
default_scripts="
	test-edgecases.sh
	test-compat.sh
	test-rbd-cli.sh
	test-fio-preload.sh
	test-exclusive-lock.sh
	test-valgrind.sh
	test-dropin.sh
	test-qemu.sh
	test-create.sh
	test-bench.sh
	test-diff.sh
	test-snapops.sh
	test-clone.sh
	test-conf.sh
"
read -r -d '' -a scripts <<<"${RBDLITE_CLUSTER_SCRIPTS-$default_scripts}"

if [ $# -gt 0 ]; then
	progs=() scripts=()
	for t in "$@"; do
		case "$t" in
		*.sh) scripts+=("$t") ;;
		*) progs+=("$t") ;;
		esac
	done
fi

pass=0 fail=0 failed=()
run() {
	local name=$1; shift
	echo "=== $name"
	if timeout 900 "$@"; then
		pass=$((pass + 1))
		echo "=== $name: PASS"
	else
		fail=$((fail + 1))
		failed+=("$name")
		echo "=== $name: FAIL"
	fi
}
for p in "${progs[@]}"; do
	run "$p" "$builddir/tests/cluster/$p"
done
for s in "${scripts[@]}"; do
	run "$s" bash "$srcdir/tests/cluster/$s"
done
[ "$fail" -eq 0 ] || echo "failed: ${failed[*]}"
echo "cluster test programs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
