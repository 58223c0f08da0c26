#!/bin/bash
# instr.sh - instructions per I/O, counted by valgrind's callgrind (which
# counts instructions, not time, so the result does not move with the
# machine's load): the fixed workload of instr-drive.c (N 4 KiB random
# reads then N writes on a layering-only image of a throwaway cluster) run
# against each librbdlite build given, twice each, at iodepth 32 and at
# iodepth 1 (where no write waits for or merges with another: the plain
# per-I/O cost).
#
#   tests/bench/instr.sh [N] LIBDIR...
#
# LIBDIR is a directory holding librbdlite.so.0 (a build's lib/.libs), so
# two builds -- before and after a change -- are compared in one run.
# Prints, per run, the whole process' instructions per I/O and those spent
# in librbdlite.so itself.  Needs valgrind, and the packages of
# tests/deps.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=2000
if [[ ${1:-} =~ ^[0-9]+$ ]]; then n=$1; shift; fi
(($# > 0)) || { echo "usage: $0 [N] LIBDIR..." >&2; exit 2; }
for d in "$@"; do
    [[ -f $d/librbdlite.so.0 ]] || { echo "$0: no librbdlite.so.0 in $d" >&2; exit 2; }
done
command -v valgrind callgrind_annotate >/dev/null ||
    { echo "$0: valgrind is not installed (tests/deps.sh tools)" >&2; exit 2; }
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/drive" "$root/tests/bench/instr-drive.c" \
    -I"$root/include/rbdlite" -L"$1" -lrbdlite -lrados ||
    { echo "$0: command failed: cc instr-drive.c" >&2; exit 1; }
export work n
exec "$root/tests/cluster/with-cluster.sh" bash -c '
set -uo pipefail
pool=$RBDLITE_TEST_POOL
rbd create --size 64M --image-feature layering "$pool/instr" || exit 1
rbd bench --io-type write --io-size 4M --io-total 64M "$pool/instr" >/dev/null || exit 1
printf "%-40s %5s %14s %14s\n" library depth "instr/IO" "in librbdlite"
for depth in 32 1; do
    for round in 1 2; do
        for d in "$@"; do
            out=$work/cg.$round.$RANDOM
            LD_LIBRARY_PATH=$d valgrind --tool=callgrind --callgrind-out-file="$out" \
                "$work/drive" "$pool" instr "$n" "$depth" >/dev/null 2>"$out.err" ||
                { echo "command failed: valgrind ... instr-drive ($d)"; cat "$out.err"; exit 1; }
            callgrind_annotate --threshold=100 "$out" >"$out.txt" 2>/dev/null
            tot=$(awk "/PROGRAM TOTALS/ {gsub(\",\",\"\",\$1); print \$1; exit}" "$out.txt")
            lite=$(awk "/librbdlite.so/ {gsub(\",\",\"\",\$1); s += \$1} END {print s + 0}" "$out.txt")
            awk -v d="$d" -v q="$depth" -v t="$tot" -v l="$lite" -v n="$n" \
                "BEGIN { printf \"%-40s %5d %14.0f %14.0f\n\", d, q, t / (2 * n), l / (2 * n) }"
        done
    done
done
' _ "$@"
