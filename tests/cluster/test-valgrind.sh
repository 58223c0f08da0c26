#!/bin/bash
# test-valgrind.sh - the example program runs valgrind-clean (no errors, no
# definite leaks) against librbdlite, on a plain image and on a Pacific
# default-feature image (exclusive lock + object map: the lock control
# thread starts, takes the lock and releases it at close).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cluster/testlib.sh
. "$here/testlib.sh"
rbdl_need_cluster CEPH_CONF RBDLITE_TEST_POOL
rbdl_need_cmds valgrind
builddir=$BUILDDIR
example="$builddir/examples/.libs/aio_rw"
[ -x "$example" ] || example="$builddir/examples/aio_rw"
pool=$RBDLITE_TEST_POOL
if [ -n "${RBDLITE_SAN:-}" ]; then
	# A sanitizer build cannot run under valgrind; the plain build does.
	pass "sanitizer build ($RBDLITE_SAN): valgrind run belongs to the plain build"
	rbdl_summary
	exit
fi
IMAGES=()
# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
	rbdl_remove_images 0 "$pool/"
	rbdl_rm_workdir
}
rbdl_traps
rbdl_workdir valgrind
for kind in plain default; do
	name="vg-$kind-$$"
	IMAGES+=("$name")
	if [ "$kind" = plain ]; then
		timeout 60 rbd create --size 64M --image-feature layering "$pool/$name"
	else
		timeout 60 rbd create --size 64M "$pool/$name"
	fi
	log=$TMP/$kind.log
	if LD_LIBRARY_PATH="$builddir/lib/.libs" timeout 600 valgrind -q \
		--error-exitcode=9 --leak-check=full \
		--errors-for-leak-kinds=definite "$example" "$pool" "$name" \
		4190000 >"$log" 2>&1; then
		pass "valgrind clean on a $kind image"
	else
		fail "valgrind on a $kind image"
		cat "$log"
	fi
done
rbdl_summary
