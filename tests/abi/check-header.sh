#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-header.sh - compare librbdlite's <rbd/librbd.h> with Ceph's
#
# librbdlite ships its own include/rbdlite/rbd/librbd.h (and features.h)
# that must stay ABI-identical to the installed Ceph Pacific header for
# every item it declares.  This test compiles small programs against each
# header and compares the results:
#
#   1. prototypes: the "gcc -aux-info" line of every rbd_* function in our
#      header must equal the system header's, and every such function must
#      exist there;
#   2. values and layout: a generated C program prints every macro and
#      enum constant we define (value, type, size, and whether it is a
#      macro at all), plus sizeof/alignof/offsetof of every typedef, struct
#      and struct member; the outputs for both headers must be identical;
#   3. underlying types (needs a C++ compiler): typeid() of every function,
#      typedef and struct member, i.e. with all typedefs resolved;
#   4. deprecation: the same functions must trigger -Wdeprecated-declarations;
#   5. visibility (needs a C++ compiler and nm): every declaration carries
#      CEPH_RBD_API, so stub definitions built with -fvisibility=hidden are
#      still exported;
#   6. our headers compile cleanly as C11 -pedantic and as C++;
#   7. tests/abi/supported-functions.txt lists exactly the rbd_* functions
#      of our librbd.h and the rbdlite_* functions of rbdlite.h.
#
# The lists of items are extracted from our headers, so new declarations
# are checked without editing this script.
#
# Usage: check-header.sh [SRCDIR]     (default: $srcdir, as set by automake)
# Environment: RBDLITE_ABI_CC (default gcc; must support -aux-info),
#              CXX (default g++), NM (default nm), VERBOSE=1 lists every item,
#              KEEP=1 keeps the generated programs and outputs.
# Exit status: 0 all items passed, 1 a mismatch or error, 77 skipped (no
# system <rbd/librbd.h>).

set -u
LC_ALL=C
export LC_ALL

me=check-header
srcdir=${1:-${srcdir:-$(dirname "$0")/../..}}
abi_cc=${RBDLITE_ABI_CC:-gcc}
abi_cxx=${CXX:-g++}
abi_nm=${NM:-nm}
verbose=${VERBOSE:-0}

ourinc=$srcdir/include/rbdlite
our_librbd=$ourinc/rbd/librbd.h
our_features=$ourinc/rbd/features.h
our_rbdlite=$ourinc/rbdlite.h
supported=$srcdir/tests/abi/supported-functions.txt

for f in "$our_librbd" "$our_features" "$our_rbdlite"; do
	if [ ! -f "$f" ]; then
		echo "$me: ERROR: $f not found (pass the source directory as \$1)" >&2
		exit 1
	fi
done

if ! command -v "$abi_cc" >/dev/null 2>&1; then
	echo "$me: ERROR: compiler '$abi_cc' not found (set RBDLITE_ABI_CC)" >&2
	exit 1
fi

# Locate the system header through the compiler's own search path.
sys_hdr=$(printf '#include <rbd/librbd.h>\n' |
	"$abi_cc" -M -x c - 2>/dev/null | tr -s '[:space:]' '\n' |
	grep '/rbd/librbd\.h$' | head -n 1)
if [ -z "$sys_hdr" ]; then
	echo "$me: SKIP: no system <rbd/librbd.h> (install librbd-dev)"
	exit 77
fi
echo "$me: ours:   $our_librbd"
echo "$me: system: $sys_hdr"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-header.XXXXXX") || exit 1
if [ -n "${KEEP:-}" ]; then
	echo "$me: keeping work files in $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
trap 'exit 1' HUP INT TERM

results=$tmp/results
: >"$results"

pass() {
	echo "PASS $*" >>"$results"
	[ "$verbose" = 1 ] && echo "PASS: $*"
	return 0
}

fail() {
	echo "FAIL $*" >>"$results"
	echo "FAIL: $*"
}

# compile_or_fail DESCRIPTION LOGFILE COMMAND...: run a compiler, and on
# failure record one failed item and show its diagnostics.
compile_or_fail() {
	desc=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		return 0
	fi
	fail "$desc: compilation failed: $*"
	sed 's/^/    /' "$log" | head -n 40
	return 1
}

have_cxx=0
if command -v "$abi_cxx" >/dev/null 2>&1; then
	have_cxx=1
else
	echo "$me: note: no C++ compiler '$abi_cxx': skipping C++ checks"
fi

# ---------------------------------------------------------------------------
# 1. Prototypes, from gcc -aux-info
# ---------------------------------------------------------------------------

printf '#include <rbd/librbd.h>\n' >"$tmp/aux.c"
printf '#include <rbdlite.h>\n' >"$tmp/auxlite.c"

# aux_protos AUXFILE PREFIX: print "name<TAB>normalised prototype" for every
# function whose name starts with PREFIX, dropping the file:line comment.
aux_protos() {
	sed -n 's|^/\*.*\*/ ||p' "$1" |
	sed -n "s/^\\(.*[ *]\\($2[A-Za-z0-9_]*\\) (.*\\)\$/\\2	\\1/p" |
	sort -u
}

compile_or_fail "aux-info (ours)" "$tmp/aux-ours.log" \
	"$abi_cc" -std=gnu11 -fsyntax-only -aux-info "$tmp/ours.aux" \
	-I"$ourinc" "$tmp/aux.c" || exit 1
compile_or_fail "aux-info (system)" "$tmp/aux-sys.log" \
	"$abi_cc" -std=gnu11 -fsyntax-only -aux-info "$tmp/sys.aux" \
	"$tmp/aux.c" || exit 1
compile_or_fail "aux-info (rbdlite.h)" "$tmp/aux-lite.log" \
	"$abi_cc" -std=gnu11 -fsyntax-only -aux-info "$tmp/lite.aux" \
	-I"$ourinc" "$tmp/auxlite.c" || exit 1

aux_protos "$tmp/ours.aux" rbd_ >"$tmp/ours.protos"
aux_protos "$tmp/sys.aux" rbd_ >"$tmp/sys.protos"
aux_protos "$tmp/lite.aux" rbdlite_ >"$tmp/lite.protos"
cut -f1 "$tmp/ours.protos" >"$tmp/ours.fns"
cut -f1 "$tmp/lite.protos" >"$tmp/lite.fns"
# Functions declared by both headers: the later checks compile code that
# names each function against both, so they only use these.  Functions
# missing from the system header are reported below.
cut -f1 "$tmp/sys.protos" | sort -u | comm -12 "$tmp/ours.fns" - >"$tmp/common.fns"

# Make sure the two compilations really used different headers.
if grep -qF "$ourinc" "$tmp/sys.aux" 2>/dev/null; then
	fail "system compilation picked up our header"
fi
if [ ! -s "$tmp/ours.fns" ]; then
	fail "no rbd_* function found in $our_librbd"
fi

awk -F '	' '
	NR == FNR { sys[$1] = $2; next }
	!($1 in sys) {
		printf "MISSING\t%s\t%s\n", $1, $2
		next
	}
	sys[$1] != $2 {
		printf "DIFF\t%s\t%s\t%s\n", $1, $2, sys[$1]
		next
	}
	{ printf "OK\t%s\n", $1 }
' "$tmp/sys.protos" "$tmp/ours.protos" >"$tmp/protos.cmp"

while IFS='	' read -r status name ours sys; do
	case $status in
	OK)
		pass "prototype $name" ;;
	MISSING)
		fail "prototype $name: not declared by the system header"
		echo "    ours:   $ours" ;;
	DIFF)
		fail "prototype $name differs"
		echo "    ours:   $ours"
		echo "    system: $sys" ;;
	esac
done <"$tmp/protos.cmp"

# ---------------------------------------------------------------------------
# Extract the items our headers define
# ---------------------------------------------------------------------------

# Strip comments but keep directives and line structure.
for h in "$our_librbd" "$our_features"; do
	"$abi_cc" -E -P -fpreprocessed -dD -x c "$h" 2>/dev/null
done >"$tmp/ours.stripped"

# Macros: "macro NAME" or "fmacro NAME" (function-like).
sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\)(.*/fmacro \1/p
	s/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/macro \1/p' \
	"$tmp/ours.stripped" | awk '!seen[$2]++' >"$tmp/macros"

# Enum constants, typedefs and struct members, in declaration order:
#   enumconst NAME | typedef NAME struct|enum|scalar | member TYPE FIELD
awk '
	function lastid(s) {
		sub(/\[[^]]*\]/, "", s)
		sub(/[ \t]*CEPH_RBD_DEPRECATED/, "", s)
		sub(/[ \t]*;.*$/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/))
			return substr(s, RSTART, RLENGTH)
		return ""
	}
	in_struct && /^[ \t]*}/ {
		name = lastid($0)
		print "typedef", name, "struct"
		for (i = 1; i <= nm; i++)
			print "member", name, mem[i]
		in_struct = 0
		next
	}
	in_struct {
		if ($0 ~ /^[ \t]*$/)
			next
		if ($0 ~ /,/) {
			print "error multi-declarator member: " $0
			next
		}
		mem[++nm] = lastid($0)
		next
	}
	in_enum && /^[ \t]*}/ {
		if (enum_typedef)
			print "typedef", lastid($0), "enum"
		in_enum = 0
		next
	}
	in_enum {
		if (match($0, /^[ \t]*[A-Za-z_][A-Za-z0-9_]*/)) {
			s = substr($0, RSTART, RLENGTH)
			gsub(/[ \t]/, "", s)
			print "enumconst", s
		}
		next
	}
	/^[ \t]*typedef[ \t]+struct[ \t]*{/ { in_struct = 1; nm = 0; next }
	/^[ \t]*(typedef[ \t]+)?enum[ \t]*{/ {
		in_enum = 1
		enum_typedef = ($0 ~ /typedef/)
		next
	}
	/^[ \t]*typedef[^{]*;/ {
		if (match($0, /\(\*[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*\)/)) {
			s = substr($0, RSTART + 2, RLENGTH - 3)
			gsub(/[ \t]/, "", s)
			print "typedef", s, "scalar"
		} else {
			print "typedef", lastid($0), "scalar"
		}
		next
	}
	# (a line with a parenthesis continues a function prototype, such as
	# "struct timespec *timestamp);")
	/^[ \t]*(typedef[ \t]+)?(struct|union|enum)[ \t]+[A-Za-z_]/ && !/[()]/ {
		print "error unsupported declaration: " $0
	}
' "$tmp/ours.stripped" >"$tmp/decls"

if grep '^error' "$tmp/decls" >/dev/null; then
	sed -n 's/^error /parser: /p' "$tmp/decls" | while read -r line; do
		fail "$line"
	done
fi

# ---------------------------------------------------------------------------
# 2. Values and layout (C program, once per header)
# ---------------------------------------------------------------------------

gen=$tmp/values.c
{
	cat <<'EOF'
#include <stddef.h>
#include <stdio.h>
#include <rbd/librbd.h>

#define TYPE_NAME(x) _Generic((x),					\
	_Bool: "bool", char: "char", signed char: "schar",		\
	unsigned char: "uchar", short: "short", unsigned short: "ushort", \
	int: "int", unsigned int: "uint", long: "long",			\
	unsigned long: "ulong", long long: "llong",			\
	unsigned long long: "ullong", char *: "string",			\
	const char *: "string", default: "other")

static void val_s(const char *n, const char *t, size_t sz, const char *v)
{
	printf("value %s type=%s size=%zu \"%s\"\n", n, t, sz, v);
}

static void val_i(const char *n, const char *t, size_t sz, long long v)
{
	printf("value %s type=%s size=%zu %lld\n", n, t, sz, v);
}

static void val_u(const char *n, const char *t, size_t sz,
		  unsigned long long v)
{
	printf("value %s type=%s size=%zu %llu\n", n, t, sz, v);
}

#define VAL(x) _Generic((x),						\
	char *: val_s, const char *: val_s,				\
	unsigned int: val_u, unsigned long: val_u,			\
	unsigned long long: val_u, default: val_i)			\
	(#x, TYPE_NAME(x), sizeof(x), (x))

static void tokens(const char *n, const char *s)
{
	printf("tokens %s \"", n);
	for (; *s; s++)
		if (*s != ' ' && *s != '\t')
			putchar(*s);
	printf("\"\n");
}

#define STR_(...) #__VA_ARGS__
#define XSTR(...) STR_(__VA_ARGS__)

int main(void)
{
EOF
	while read -r kind name; do
		case $kind:$name in
		fmacro:LIBRBD_VERSION)
			printf '#ifdef %s\n' "$name"
			printf '\tVAL(LIBRBD_VERSION(1, 12, 0));\n'
			printf '\tVAL(LIBRBD_VERSION(0, 1, 11));\n'
			printf '\tVAL(LIBRBD_VERSION(2, 255, 255));\n'
			printf '#else\n'
			printf '\tputs("macro %s: not defined");\n' "$name"
			printf '\tputs("-");\n\tputs("-");\n'
			printf '#endif\n'
			;;
		fmacro:*)
			echo "#error unhandled function-like macro $name: teach check-header.sh"
			;;
		macro:CEPH_RBD_API | macro:CEPH_RBD_DEPRECATED | macro:*_H)
			printf '#ifdef %s\n' "$name"
			printf '\ttokens("%s", XSTR(%s));\n' "$name" "$name"
			printf '#else\n'
			printf '\tputs("macro %s: not defined");\n' "$name"
			printf '#endif\n'
			;;
		macro:*)
			printf '#ifdef %s\n' "$name"
			printf '\tVAL(%s);\n' "$name"
			printf '#else\n'
			printf '\tputs("macro %s: not defined");\n' "$name"
			printf '#endif\n'
			;;
		esac
	done <"$tmp/macros"
	while read -r kind name extra; do
		case $kind:$extra in
		enumconst:*)
			printf '#ifdef %s\n' "$name"
			printf '\tputs("enumerator %s: is a macro");\n' "$name"
			printf '#else\n'
			printf '\tputs("enumerator %s: not a macro");\n' "$name"
			printf '#endif\n'
			printf '\tVAL(%s);\n' "$name"
			;;
		typedef:struct)
			printf '\tprintf("struct %s size=%%zu align=%%zu\\n", sizeof(%s), _Alignof(%s));\n' \
				"$name" "$name" "$name"
			;;
		typedef:enum)
			printf '\tprintf("enum %s size=%%zu align=%%zu signed=%%d\\n", sizeof(%s), _Alignof(%s), (%s)-1 < (%s)0);\n' \
				"$name" "$name" "$name" "$name" "$name"
			;;
		typedef:scalar)
			printf '\tprintf("typedef %s size=%%zu align=%%zu\\n", sizeof(%s), _Alignof(%s));\n' \
				"$name" "$name" "$name"
			;;
		member:*)
			printf '\tprintf("member %s.%s offset=%%zu size=%%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n' \
				"$name" "$extra" "$name" "$extra" "$name" "$extra"
			;;
		esac
	done <"$tmp/decls"
	printf '\treturn 0;\n}\n'
} >"$gen"

# run_pair TAG SOURCE COMPILER [FLAGS...]: build and run SOURCE against our
# header and against the system one; outputs in $tmp/TAG.ours, TAG.sys.
run_pair() {
	tag=$1 src=$2
	shift 2
	compile_or_fail "$tag program (ours)" "$tmp/$tag-ours.log" \
		"$@" -I"$ourinc" -o "$tmp/$tag-ours" "$src" || return 1
	compile_or_fail "$tag program (system)" "$tmp/$tag-sys.log" \
		"$@" -o "$tmp/$tag-sys" "$src" || return 1
	"$tmp/$tag-ours" >"$tmp/$tag.ours" || { fail "$tag program (ours) failed to run"; return 1; }
	"$tmp/$tag-sys" >"$tmp/$tag.sys" || { fail "$tag program (system) failed to run"; return 1; }
	return 0
}

# compare_lines TAG: compare TAG.ours with TAG.sys line by line, one item
# per line; show a unified diff if anything differs.
compare_lines() {
	tag=$1
	awk '
		NR == FNR { sys[FNR] = $0; nsys = FNR; next }
		{ print ($0 == sys[FNR] ? "OK" : "DIFF") "\t" $0 "\t" sys[FNR] }
		END { if (FNR != nsys) print "COUNT\t" FNR "\t" nsys }
	' "$tmp/$tag.sys" "$tmp/$tag.ours" >"$tmp/$tag.cmp"
	while IFS='	' read -r status ours sys; do
		case $status in
		OK)
			pass "$tag: $ours" ;;
		DIFF)
			fail "$tag mismatch"
			echo "    ours:   $ours"
			echo "    system: $sys" ;;
		COUNT)
			fail "$tag: line counts differ (ours $ours, system $sys)" ;;
		esac
	done <"$tmp/$tag.cmp"
	if grep -v '^OK' "$tmp/$tag.cmp" >/dev/null; then
		echo "    --- diff -u system ours ($tag) ---"
		diff -u "$tmp/$tag.sys" "$tmp/$tag.ours" | sed 's/^/    /'
	fi
}

if run_pair values "$gen" "$abi_cc" -std=gnu11 -w; then
	compare_lines values
fi

# ---------------------------------------------------------------------------
# 3. Underlying types, with typedefs resolved (C++ typeid)
# ---------------------------------------------------------------------------

if [ "$have_cxx" = 1 ]; then
	gen=$tmp/types.cc
	{
		printf '#include <cstdio>\n#include <typeinfo>\n#include <rbd/librbd.h>\n\n'
		printf '#define SHOW(kind, what, ...) std::printf("%%s %%s %%s\\n", kind, what, typeid(__VA_ARGS__).name())\n\n'
		printf 'int main()\n{\n'
		while read -r fn; do
			printf '\tSHOW("function", "%s", decltype(%s));\n' "$fn" "$fn"
		done <"$tmp/common.fns"
		while read -r kind name extra; do
			case $kind in
			typedef)
				printf '\tSHOW("type", "%s", %s);\n' "$name" "$name" ;;
			member)
				printf '\tSHOW("member", "%s.%s", decltype(%s::%s));\n' \
					"$name" "$extra" "$name" "$extra" ;;
			esac
		done <"$tmp/decls"
		printf '\treturn 0;\n}\n'
	} >"$gen"
	if run_pair types "$gen" "$abi_cxx" -std=gnu++11 -w; then
		compare_lines types
	fi
fi

# ---------------------------------------------------------------------------
# 4. Deprecation attributes
# ---------------------------------------------------------------------------

gen=$tmp/deprecated.c
{
	printf '#include <rbd/librbd.h>\n\nvoid use_all(void);\n\nvoid use_all(void)\n{\n'
	sed 's/^\(.*\)$/	(void)\&\1;/' "$tmp/common.fns"
	printf '}\n'
} >"$gen"
"$abi_cc" -std=gnu11 -fsyntax-only -Wdeprecated-declarations -I"$ourinc" \
	"$gen" >"$tmp/dep-ours.log" 2>&1
"$abi_cc" -std=gnu11 -fsyntax-only -Wdeprecated-declarations \
	"$gen" >"$tmp/dep-sys.log" 2>&1
deprecated_list() {
	sed -n "s/.*'\\(rbd_[A-Za-z0-9_]*\\)' is deprecated.*/\\1/p" "$1" | sort -u
}
deprecated_list "$tmp/dep-ours.log" >"$tmp/dep.ours"
deprecated_list "$tmp/dep-sys.log" >"$tmp/dep.sys"
while read -r fn; do
	o=no s=no
	grep -qx "$fn" "$tmp/dep.ours" && o=yes
	grep -qx "$fn" "$tmp/dep.sys" && s=yes
	if [ "$o" = "$s" ]; then
		pass "deprecated $fn: $o"
	else
		fail "deprecated $fn: ours $o, system $s"
	fi
done <"$tmp/common.fns"

# ---------------------------------------------------------------------------
# 5. Visibility: every declaration carries CEPH_RBD_API
# ---------------------------------------------------------------------------

if [ "$have_cxx" = 1 ] && command -v "$abi_nm" >/dev/null 2>&1; then
	gen=$tmp/visibility.cc
	{
		printf '#include <rbd/librbd.h>\n#include <rbdlite.h>\n\n'
		cut -f2 "$tmp/ours.protos" "$tmp/lite.protos" |
		sed 's/^extern //; s/;$//; s/_Bool/bool/g' |
		while IFS= read -r proto; do
			case $proto in
			"void "[a-z]*)
				printf '%s\n{\n}\n\n' "$proto" ;;
			*)
				printf '%s\n{\n\treturn 0;\n}\n\n' "$proto" ;;
			esac
		done
	} >"$gen"
	if compile_or_fail "visibility stubs" "$tmp/vis.log" \
		"$abi_cxx" -std=gnu++11 -w -shared -fPIC -fvisibility=hidden \
		-I"$ourinc" -o "$tmp/vis.so" "$gen"; then
		"$abi_nm" -D --defined-only "$tmp/vis.so" |
			awk '$2 == "T" { print $3 }' | sort -u >"$tmp/vis.exported"
		cat "$tmp/ours.fns" "$tmp/lite.fns" | while read -r fn; do
			if grep -qx "$fn" "$tmp/vis.exported"; then
				pass "visibility $fn"
			else
				fail "visibility $fn: not exported with -fvisibility=hidden (missing CEPH_RBD_API?)"
			fi
		done
	fi
else
	echo "$me: note: skipping visibility check (needs $abi_cxx and $abi_nm)"
fi

# ---------------------------------------------------------------------------
# 6. Our headers compile cleanly, as C11 and C++
# ---------------------------------------------------------------------------

for hdr in rbd/librbd.h rbdlite.h; do
	printf '#include <%s>\n#include <%s>\n\nint main(void)\n{\n\treturn 0;\n}\n' \
		"$hdr" "$hdr" >"$tmp/clean.c"
	if compile_or_fail "$hdr as C11" "$tmp/clean-c.log" \
		"$abi_cc" -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only \
		-I"$ourinc" "$tmp/clean.c"; then
		pass "$hdr compiles as C11 -pedantic"
	fi
	if [ "$have_cxx" = 1 ]; then
		cp "$tmp/clean.c" "$tmp/clean.cc"
		if compile_or_fail "$hdr as C++" "$tmp/clean-cxx.log" \
			"$abi_cxx" -Wall -Wextra -pedantic -Werror -fsyntax-only \
			-I"$ourinc" "$tmp/clean.cc"; then
			pass "$hdr compiles as C++"
		fi
	fi
done

# ---------------------------------------------------------------------------
# 7. supported-functions.txt matches the headers
# ---------------------------------------------------------------------------

if [ -f "$supported" ]; then
	sort -u "$tmp/ours.fns" "$tmp/lite.fns" >"$tmp/expected.fns"
	grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$supported" |
		sort -u >"$tmp/listed.fns"
	if cmp -s "$tmp/expected.fns" "$tmp/listed.fns"; then
		pass "supported-functions.txt matches the headers"
	else
		fail "supported-functions.txt does not match the headers"
		echo "    --- diff -u supported-functions.txt headers ---"
		diff -u "$tmp/listed.fns" "$tmp/expected.fns" | sed 's/^/    /'
	fi
else
	fail "$supported not found"
fi

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

npass=$(grep -c '^PASS' "$results")
nfail=$(grep -c '^FAIL' "$results")
nfn=$(wc -l <"$tmp/ours.fns" | tr -d ' ')
echo "$me: $nfn rbd_* functions declared; $(grep -c '^PASS prototype' "$results") prototypes identical"
echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
