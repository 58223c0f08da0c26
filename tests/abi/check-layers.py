#!/usr/bin/env python3
"""check-layers.py [SRCDIR] - the include layering of librbdlite's lib/.

Run by tests/abi/check-layers.sh (which documents the rules); SRCDIR is the
top of the source tree (default: $RBDLITE_SRCDIR, else two levels above
this file).  Prints one line per problem, "check-layers: N problem(s)" and
exits 1 if there is any; exits 0 with "check-layers: ok ..." otherwise;
exits 2 if SRCDIR has no lib/.
"""

import os
import re
import sys

# Top to bottom: a file may include headers of its own layer and of the
# layers below it.
LAYERS = ["api", "ops", "io", "image", "core", "proto"]
RANK = {name: i for i, name in enumerate(LAYERS)}
OUTSIDE = "tools"            # lib/tools/: not checked, not a layer
GENERATED = {"config.h"}     # made by configure, in the build tree
PUBLIC = "include/rbdlite"   # the installed headers, allowed everywhere
SOURCES = (".c", ".h")
# Files directly under lib/ (or in a folder that is no layer) allowed to be
# C sources or headers: none.
FLAT_EXCEPTIONS = set()

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]*)"')


def strip_comments(text):
    """text with /* */ and // comments blanked out, newlines kept (so line
    numbers stay), string and character literals left alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layer_of(rel):
    """The layer of lib/-relative path rel, "tools", or None (no layer)."""
    parts = rel.split("/")
    if len(parts) < 2:
        return None
    if parts[0] in RANK or parts[0] == OUTSIDE:
        return parts[0]
    return None


def module_of(rel):
    """x.c and x.h in one folder are one module: folder/x."""
    return os.path.splitext(rel)[0]


class Checker:
    def __init__(self, top):
        self.top = top
        self.lib = os.path.join(top, "lib")
        self.public = os.path.join(top, PUBLIC)
        self.problems = []
        self.edges = {}      # module -> {module: (file, line, include)}
        self.files = []

    def problem(self, msg):
        self.problems.append(msg)

    def collect(self):
        for dirpath, dirnames, filenames in os.walk(self.lib):
            dirnames.sort()
            reldir = os.path.relpath(dirpath, self.lib)
            reldir = "" if reldir == "." else reldir.replace(os.sep, "/")
            if reldir.split("/")[0] == OUTSIDE:
                dirnames[:] = []
                continue
            for f in sorted(filenames):
                if not f.endswith(SOURCES):
                    continue
                rel = f if not reldir else reldir + "/" + f
                if layer_of(rel) is None:
                    if rel not in FLAT_EXCEPTIONS:
                        where = ("directly under lib/" if not reldir else
                                 "in lib/%s/, which is no layer" % reldir)
                        self.problem("lib/%s: a .c/.h file %s (allowed: lib/%s/, "
                                     "lib/%s/)" % (rel, where,
                                                   "/, lib/".join(LAYERS),
                                                   OUTSIDE))
                    continue
                self.files.append(rel)

    def resolve(self, rel, inc):
        """(kind, target): kind "lib" (target lib/-relative), "public",
        "generated", or None when the include names no file."""
        if inc in GENERATED:
            return "generated", inc
        here = os.path.dirname(rel)
        cand = os.path.normpath(os.path.join(self.lib, here, inc))
        if os.path.isfile(cand) and cand.startswith(self.lib + os.sep):
            return "lib", os.path.relpath(cand, self.lib).replace(os.sep, "/")
        cand = os.path.normpath(os.path.join(self.lib, inc))
        if os.path.isfile(cand) and cand.startswith(self.lib + os.sep):
            return "lib", os.path.relpath(cand, self.lib).replace(os.sep, "/")
        cand = os.path.normpath(os.path.join(self.public, inc))
        if os.path.isfile(cand) and cand.startswith(self.public + os.sep):
            return "public", inc
        return None, None

    def check_file(self, rel):
        path = os.path.join(self.lib, rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        src_layer = layer_of(rel)
        mod = module_of(rel)
        for lineno, line in enumerate(text.split("\n"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = 'lib/%s:%d: #include "%s"' % (rel, lineno, inc)
            kind, target = self.resolve(rel, inc)
            if kind is None:
                self.problem("%s: no such file (looked in lib/%s, lib/, %s/)"
                             % (where, os.path.dirname(rel) or ".", PUBLIC))
                continue
            if kind != "lib":
                continue
            dst_layer = layer_of(target)
            if dst_layer is None or dst_layer == OUTSIDE:
                self.problem("%s: lib/%s is outside the layers (layer %s "
                             "may include only headers of layers %s)"
                             % (where, target, src_layer,
                                ", ".join(LAYERS[RANK[src_layer]:])))
                continue
            if RANK[dst_layer] < RANK[src_layer]:
                self.problem("%s: layer %s includes lib/%s of the higher "
                             "layer %s (order, top to bottom: %s)"
                             % (where, src_layer, target, dst_layer,
                                " -> ".join(LAYERS)))
            dst = module_of(target)
            if dst != mod:
                self.edges.setdefault(mod, {}).setdefault(
                    dst, (rel, lineno, inc))

    def cycles(self):
        """One cycle per strongly connected component of more than one
        module (Tarjan), each as a list of modules, first = smallest."""
        index, low, stack, on, comps = {}, {}, [], set(), []
        counter = [0]
        nodes = sorted(set(self.edges) |
                       {d for e in self.edges.values() for d in e})

        def strong(v):
            work = [(v, iter(sorted(self.edges.get(v, {}))))]
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            while work:
                node, it = work[-1]
                advanced = False
                for w in it:
                    if w not in index:
                        index[w] = low[w] = counter[0]
                        counter[0] += 1
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(sorted(self.edges.get(w, {})))))
                        advanced = True
                        break
                    if w in on:
                        low[node] = min(low[node], index[w])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))

        for v in nodes:
            if v not in index:
                strong(v)
        result = []
        for comp in sorted(comps):
            members = set(comp)
            start = comp[0]
            # Shortest way back to start within the component (BFS).
            prev = {start: None}
            queue = [start]
            found = None
            while queue and found is None:
                nxt = []
                for v in queue:
                    for w in sorted(self.edges.get(v, {})):
                        if w not in members:
                            continue
                        if w == start:
                            found = v
                            break
                        if w not in prev:
                            prev[w] = v
                            nxt.append(w)
                    if found is not None:
                        break
                queue = nxt
            path = [found]
            while prev[path[-1]] is not None:
                path.append(prev[path[-1]])
            path.reverse()
            result.append(path)
        return result

    def run(self):
        self.collect()
        for rel in self.files:
            self.check_file(rel)
        for cyc in self.cycles():
            steps = []
            for a, b in zip(cyc, cyc[1:] + cyc[:1]):
                f, line, inc = self.edges[a][b]
                steps.append('lib/%s:%d #include "%s"' % (f, line, inc))
            self.problem("include cycle: %s (%s)"
                         % (" -> ".join(cyc + cyc[:1]), "; ".join(steps)))
        return self.problems


def main(argv):
    if len(argv) > 2:
        print("usage: check-layers.py [SRCDIR]", file=sys.stderr)
        return 2
    top = argv[1] if len(argv) == 2 else os.environ.get("RBDLITE_SRCDIR") or \
        os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "..", ".."))
    top = os.path.abspath(top)
    if not os.path.isdir(os.path.join(top, "lib")):
        print("check-layers: %s has no lib/ directory" % top, file=sys.stderr)
        return 2
    checker = Checker(top)
    problems = checker.run()
    for p in problems:
        print("check-layers: " + p)
    if problems:
        print("check-layers: %d problem(s)" % len(problems))
        return 1
    print("check-layers: ok (%d files in lib/%s/)"
          % (len(checker.files), "/, lib/".join(LAYERS)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
