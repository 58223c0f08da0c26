#!/bin/bash
# check-exports.sh - the shared library exports exactly the functions it
# claims to support (tests/abi/supported-functions.txt, the functions
# declared in our public headers), unversioned like librbd.so.1, and
# nothing else.
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
builddir=${RBDLITE_BUILDDIR:-.}
lib="$builddir/lib/.libs/librbdlite.so"
list="$srcdir/tests/abi/supported-functions.txt"
pass=0 fail=0

if [ ! -f "$lib" ]; then
	echo "FAIL: $lib not built"
	echo "0 passed, 1 failed"
	exit 1
fi
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiV]$/ { print $3 }' | sort)
expected=$(grep -v '^#' "$list" | sed '/^$/d' | sort)

if [ "$exported" = "$expected" ]; then
	echo "PASS: exported functions == supported-functions.txt ($(echo "$exported" | wc -l) symbols)"
	pass=$((pass + 1))
else
	echo "FAIL: exported functions differ from supported-functions.txt:"
	diff <(echo "$expected") <(echo "$exported")
	fail=$((fail + 1))
fi

# The same rbd_* functions as the system's librbd.so.1 (Debian 12: 280),
# name for name, in librbdlite.so and in the substitute.
real=${RBDLITE_SYSTEM_LIBRBD:-}
if [ -z "$real" ]; then
	for f in /usr/lib/x86_64-linux-gnu/librbd.so.1 /usr/lib/*/librbd.so.1 /usr/lib64/librbd.so.1; do
		[ -f "$f" ] && { real=$f; break; }
	done
fi
if [ -z "$real" ] || [ ! -f "$real" ]; then
	echo "FAIL: the system's librbd.so.1 is not installed (tests/deps.sh installs librbd1)"
	fail=$((fail + 1))
else
	want=$(nm -D --defined-only "$real" | awk '$2 == "T" && $3 ~ /^rbd_/ { print $3 }' | sort)
	for l in "$lib" "$builddir/lib/librbd1/.libs/librbd.so.1"; do
		have=$(nm -D --defined-only "$l" | awk '$2 == "T" && $3 ~ /^rbd_/ { print $3 }' | sort)
		if [ "$have" = "$want" ]; then
			echo "PASS: $(basename "$l") exports the $(echo "$want" | wc -l) rbd_* functions of $real"
			pass=$((pass + 1))
		else
			echo "FAIL: $(basename "$l") and $real export different rbd_* functions (< only in $real, > only in ours):"
			diff <(echo "$want") <(echo "$have") | grep '^[<>]' | head -40
			fail=$((fail + 1))
		fi
	done
fi

# No symbol versions: librbd.so.1 has none, and a versioned symbol would
# stamp a version into programs linked against us.
if readelf -V "$lib" | grep -q 'Version definition section'; then
	echo "FAIL: $lib defines symbol versions"
	fail=$((fail + 1))
else
	echo "PASS: no symbol version definitions"
	pass=$((pass + 1))
fi

# Every exported data/function symbol is rbd_* or rbdlite_*.
others=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -Ev '^(rbd_|rbdlite_)' || true)
if [ -n "$others" ]; then
	echo "FAIL: unexpected exports: $others"
	fail=$((fail + 1))
else
	echo "PASS: nothing but rbd_* and rbdlite_* exported"
	pass=$((pass + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
