#!/bin/bash
# check-layers.sh [SRCDIR] - the include layering of the library's sources.
#
# lib/ is layered, top to bottom:
#
#     api -> ops -> io -> image -> core -> proto
#
# each layer a folder lib/LAYER/.  lib/tools/ (the benchmark harness and
# its helpers) is outside the layers and not checked.  Every .c and .h of
# the library lives in one of the six folders; there are no exceptions, so
# a C file directly under lib/ (or in any other folder of lib/) fails.
#
# Includes are written relative to lib/ ("core/slab.h"), or bare for a
# header in the same folder ("slab.h" from lib/core/).  Each `#include
# "..."` of every .c/.h under lib/ (but lib/tools/) is resolved in the
# including file's folder first, then in lib/, then in include/rbdlite/;
# "config.h" is configure's header (in the build tree).  It fails - naming
# the file, the line, the include and both layers - on
#   - an include of a header of a higher layer (same layer or lower: fine;
#     the public headers "rbd/librbd.h", "rbd/features.h", "rbdlite.h" and
#     "config.h" are fine from any layer);
#   - an include that resolves to no file, or to one outside the layers;
#   - a C file outside the six folders;
#   - a cycle in the include graph of modules (a module is a folder and a
#     basename: core/slab.c and core/slab.h are the module core/slab),
#     printed with the include that makes each step.
# <...> includes are the system's and not checked.
#
# SRCDIR is the top of the source tree: the argument, else $RBDLITE_SRCDIR
# (set by make check), else two levels above this script.  Exit status 0
# when the tree is clean, 1 on any problem, 2 on a usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 1 ]; then
	echo "usage: check-layers.sh [SRCDIR]" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "check-layers.sh: python3 not found" >&2; exit 1; }
exec python3 "$here/check-layers.py" "$@"
