#!/bin/bash
# test-valgrind.sh - the example program runs valgrind-clean (no errors, no
# definite leaks) against librbdlite, on a plain image and on a Pacific
# default-feature image (exclusive lock + object map: the lock control
# thread starts, takes the lock and releases it at close).
set -u
: "${CEPH_CONF:?no test cluster (run through tests/run-cluster-tests.sh)}"
: "${RBDLITE_TEST_POOL:?no test pool}"
here=$(cd "$(dirname "$0")" && pwd)
builddir=${RBDLITE_BUILDDIR:-$(cd "$here/../.." && pwd)}
example="$builddir/examples/.libs/aio_rw"
[ -x "$example" ] || example="$builddir/examples/aio_rw"
pool=$RBDLITE_TEST_POOL
pass=0 fail=0
if ! command -v valgrind >/dev/null; then
	echo "FAIL: valgrind is not installed"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ -n "${RBDLITE_SAN:-}" ]; then
	# A sanitizer build cannot run under valgrind; the plain build does.
	echo "PASS: sanitizer build ($RBDLITE_SAN): valgrind run belongs to the plain build"
	echo "1 passed, 0 failed"
	exit 0
fi
names=()
cleanup() { for n in "${names[@]}"; do timeout 60 rbd rm --no-progress "$pool/$n" >/dev/null 2>&1; done; }
trap cleanup EXIT
for kind in plain default; do
	name="vg-$kind-$$"
	names+=("$name")
	if [ "$kind" = plain ]; then
		timeout 60 rbd create --size 64M --image-feature layering "$pool/$name"
	else
		timeout 60 rbd create --size 64M "$pool/$name"
	fi
	log=$(mktemp)
	if LD_LIBRARY_PATH="$builddir/lib/.libs" timeout 600 valgrind -q \
		--error-exitcode=9 --leak-check=full \
		--errors-for-leak-kinds=definite "$example" "$pool" "$name" \
		4190000 >"$log" 2>&1; then
		echo "PASS: valgrind clean on a $kind image"
		pass=$((pass + 1))
	else
		echo "FAIL: valgrind on a $kind image:"
		cat "$log"
		fail=$((fail + 1))
	fi
	rm -f "$log"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
