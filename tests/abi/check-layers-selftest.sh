#!/bin/bash
# check-layers-selftest.sh - check-layers.sh on small made-up source trees:
# it must pass a clean tree, and fail a broken one with exactly the
# problems that tree has (the expected lines below, in order), no more, no
# fewer.  Prints one PASS/FAIL line per tree and "N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
checker=$here/check-layers.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers-selftest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# file TREE PATH [LINE...]: create TREE/PATH with the given lines.
file() {
	local t=$1 p=$2
	shift 2
	mkdir -p "$(dirname "$tmp/$t/$p")"
	printf '%s\n' "$@" >"$tmp/$t/$p"
}

# expect NAME TREE STATUS [LINE...]: check-layers.sh on TREE (as its
# argument, or through RBDLITE_SRCDIR when NAME ends in "-env") exits with
# STATUS; every output line but the last (the count or "ok") is one of
# LINE..., in that order.
expect() {
	local name=$1 t=$2 want=$3 out rc got
	shift 3
	if [[ $name == *-env ]]; then
		out=$(RBDLITE_SRCDIR="$tmp/$t" "$checker" 2>&1)
	else
		out=$(RBDLITE_SRCDIR=/nonexistent "$checker" "$tmp/$t" 2>&1)
	fi
	rc=$?
	got=$(sed '$d' <<<"$out")
	local exp=
	(($#)) && exp=$(printf 'check-layers: %s\n' "$@")
	if [[ $rc == "$want" && $got == "$exp" ]]; then
		pass=$((pass + 1))
		echo "PASS $name"
	else
		fail=$((fail + 1))
		echo "FAIL $name: exit status $rc (want $want)"
		echo "  output:"
		sed 's/^/    | /' <<<"$out"
		echo "  expected problems:"
		sed 's/^/    | /' <<<"$exp"
	fi
}

# A clean tree: every layer, includes downwards and within a layer (bare
# and lib/-relative), the public headers and config.h from any layer,
# x.c with its own x.h, include lines in comments, a non-C file and
# lib/tools/ (outside the layers: unchecked) with anything in it.
clean() {
	local t=$1
	file "$t" include/rbdlite/rbd/librbd.h '/* public */'
	file "$t" include/rbdlite/rbd/features.h '/* public */'
	file "$t" include/rbdlite/rbdlite.h '#include "rbd/librbd.h"'
	file "$t" lib/api/rbd_image.c '#include "config.h"' '#include "rbd/librbd.h"' \
		'#include "rbdlite.h"' '#include "ops/maint.h"' '#include "io/io.h"' \
		'#include <stdlib.h>' '/* #include "nowhere.h" */' '// #include "api/up.h"'
	file "$t" lib/ops/maint.h '#include "image/image.h"'
	file "$t" lib/ops/maint.c '#include "maint.h"' '#include "ops/diff.h"' '#include "proto/wire.h"'
	file "$t" lib/ops/diff.h '#include "core/slab.h"'
	file "$t" lib/io/io.h '#include "image/image.h"' '#include "rbd/features.h"'
	file "$t" lib/io/io.c '#include "io.h"' '#include "core/slab.h"'
	file "$t" lib/image/image.h '#include "core/slab.h"'
	file "$t" lib/image/image.c '#include "image.h"' '#include "proto/wire.h"' '#include "config.h"'
	file "$t" lib/core/slab.h '#include <stddef.h>'
	file "$t" lib/core/slab.c '#include "slab.h"' '#include "core/slab.h"' '#include "proto/wire.h"'
	file "$t" lib/proto/wire.h '#include "rbdlite.h"'
	file "$t" lib/proto/wire.c '#include "wire.h"'
	file "$t" lib/api/librbdlite.map '{ global: rbd_*; };'
	file "$t" lib/tools/rbdlite-bench.c '#include "api/anything.h"' '#include "missing.h"'
	file "$t" lib/tools/bench/run.c '#include "../nothing.h"'
}

clean ok
expect clean ok 0
expect clean-env ok 0

# Upward includes (of headers that include nothing back, so there is no
# cycle): core includes io, proto includes core.
clean up
file up lib/io/up.h '/* io */'
file up lib/core/log.h '/* core */'
file up lib/core/slab.c '#include "slab.h"' '' '#include "io/up.h"'
file up lib/proto/wire.c '#include "wire.h"' '#include "core/log.h"'
expect upward-include up 1 \
	'lib/core/slab.c:3: #include "io/up.h": layer core includes lib/io/up.h of the higher layer io (order, top to bottom: api -> ops -> io -> image -> core -> proto)' \
	'lib/proto/wire.c:2: #include "core/log.h": layer proto includes lib/core/log.h of the higher layer core (order, top to bottom: api -> ops -> io -> image -> core -> proto)'

# A cycle within one layer: x.c includes y.h, y.c includes x.h.
clean cyc
file cyc lib/core/x.h '/* x */'
file cyc lib/core/y.h '/* y */'
file cyc lib/core/x.c '#include "x.h"' '#include "y.h"'
file cyc lib/core/y.c '#include "y.h"' '#include "core/x.h"'
expect cycle cyc 1 \
	'include cycle: core/x -> core/y -> core/x (lib/core/x.c:2 #include "y.h"; lib/core/y.c:2 #include "core/x.h")'

# A longer cycle through headers only: a.h -> b.h -> c.h -> a.h (io).
clean cyc3
file cyc3 lib/io/a.h '#include "b.h"'
file cyc3 lib/io/b.h '#include "io/c.h"'
file cyc3 lib/io/c.h '#include "a.h"'
expect cycle-of-three cyc3 1 \
	'include cycle: io/a -> io/b -> io/c -> io/a (lib/io/a.h:1 #include "b.h"; lib/io/b.h:1 #include "io/c.h"; lib/io/c.h:1 #include "a.h")'

# Includes that name no file: a bare name of another folder's header, a
# misspelt path; one into lib/tools/ (outside the layers).
clean miss
file miss lib/io/io.c '#include "io.h"' '#include "slab.h"' '#include "core/slb.h"'
file miss lib/tools/t.h '/* tool */'
file miss lib/api/rbd_aio.c '#include "tools/t.h"'
expect unresolved miss 1 \
	'lib/api/rbd_aio.c:1: #include "tools/t.h": lib/tools/t.h is outside the layers (layer api may include only headers of layers api, ops, io, image, core, proto)' \
	'lib/io/io.c:2: #include "slab.h": no such file (looked in lib/io, lib/, include/rbdlite/)' \
	'lib/io/io.c:3: #include "core/slb.h": no such file (looked in lib/io, lib/, include/rbdlite/)'

# C files outside the layer folders: directly under lib/, in another
# folder.  A header directly under lib/ is found (lib/ is searched) but is
# itself a problem.
clean flat
file flat lib/striper.c '#include "striper.h"'
file flat lib/striper.h '/* flat */'
file flat lib/extra/e.c '/* elsewhere */'
file flat lib/README '/* not C */'
expect flat-files flat 1 \
	'lib/striper.c: a .c/.h file directly under lib/ (allowed: lib/api/, lib/ops/, lib/io/, lib/image/, lib/core/, lib/proto/, lib/tools/)' \
	'lib/striper.h: a .c/.h file directly under lib/ (allowed: lib/api/, lib/ops/, lib/io/, lib/image/, lib/core/, lib/proto/, lib/tools/)' \
	'lib/extra/e.c: a .c/.h file in lib/extra/, which is no layer (allowed: lib/api/, lib/ops/, lib/io/, lib/image/, lib/core/, lib/proto/, lib/tools/)'

# No lib/ at all: a usage error, not a pass.
mkdir -p "$tmp/empty"
expect no-lib empty 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
