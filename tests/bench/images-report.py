#!/usr/bin/env python3
"""images-report.py - the tables and chart of tests/bench-images.sh.

    images-report.py IMAGES.TSV OUT.SVG COMMAND

Reads the rows bench-images.sh wrote (part "open": one row per process,
library and N; part "randread": one row per backend and N from
rbdlite-bench), prints two tables (medians over the blocks; librbdlite over
librbd ratios) and draws an SVG with four panels over N: threads added, RSS
added, close time of all images, CPU per I/O.
"""
import statistics
import sys
from collections import defaultdict

tsv, svg, command = sys.argv[1:4]
opens = defaultdict(list)       # (n, backend) -> [row]
reads = {}                      # (n, backend) -> (cpu, iops)
for line in open(tsv):
    if line.startswith("#") or not line.strip():
        continue
    f = line.rstrip("\n").split("\t")
    part, n, b = f[0], int(f[1]), f[2]
    if part == "open":
        opens[(n, b)].append([float(x) for x in f[3:9]])
    else:
        reads[(n, b)] = (float(f[9]), float(f[10]))
ns = sorted({k[0] for k in opens} | {k[0] for k in reads})
FIELDS = ["threads", "rss_kib", "fds", "open_p50_us", "open_p99_us", "close_ms"]


def med(n, b, field):
    rows = opens.get((n, b))
    if not rows:
        return float("nan")
    return statistics.median(r[FIELDS.index(field)] for r in rows)


def ratio(a, b):
    return "%.2fx" % (a / b) if b else "-"


print("Many images in one process (%s)" % command)
print()
print("N images open read-write, each written once (4 KiB), then closed;"
      " medians over the blocks")
print("%6s  %-8s %8s %10s %6s %10s %10s %10s" % (
    "N", "library", "threads", "RSS MiB", "fds", "open p50", "open p99",
    "close all"))
for n in ns:
    for b in ("lite", "librbd"):
        print("%6d  %-8s %8.0f %10.1f %6.0f %8.2fms %8.2fms %8.0fms" % (
            n, b, med(n, b, "threads"), med(n, b, "rss_kib") / 1024,
            med(n, b, "fds"), med(n, b, "open_p50_us") / 1000,
            med(n, b, "open_p99_us") / 1000, med(n, b, "close_ms")))
    print("%6s  %-8s %8s %10s %6s %10s %10s %10s" % (
        "", "ratio", "-", ratio(med(n, "lite", "rss_kib"),
                                med(n, "librbd", "rss_kib")),
        "-", ratio(med(n, "lite", "open_p50_us"), med(n, "librbd", "open_p50_us")),
        ratio(med(n, "lite", "open_p99_us"), med(n, "librbd", "open_p99_us")),
        ratio(med(n, "lite", "close_ms"), med(n, "librbd", "close_ms"))))
print()
print("4 KiB randread, total iodepth 32 spread over the N images"
      " (rbdlite-bench --spread=ios)")
print("%6s  %14s %14s %8s %12s %12s %14s" % (
    "N", "lite us/IO", "librbd us/IO", "ratio", "lite IOPS", "librbd IOPS",
    "lite vs N=1"))
base = reads.get((ns[0], "lite"), (0, 0))[0] if ns else 0
for n in ns:
    lc, li = reads.get((n, "lite"), (float("nan"), 0))
    rc, ri = reads.get((n, "librbd"), (float("nan"), 0))
    print("%6d  %14.1f %14.1f %8s %12.0f %12.0f %14s" % (
        n, lc, rc, ratio(lc, rc), li, ri, ratio(lc, base)))

# ---- the chart: four small panels, log-scaled N on x ----------------------
import math

panels = [
    ("threads added", lambda n, b: med(n, b, "threads"), ""),
    ("RSS added (MiB)", lambda n, b: med(n, b, "rss_kib") / 1024, ""),
    ("close of all (ms)", lambda n, b: med(n, b, "close_ms"), ""),
    ("CPU per I/O (us)", lambda n, b: reads.get((n, b), (float("nan"),))[0], ""),
]
W, H, PW, PH, M = 900, 260, 190, 170, 40
colors = {"lite": "#1f77b4", "librbd": "#d62728"}
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
       'font-family="sans-serif" font-size="11">' % (W, H),
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="10" y="16" font-size="13">Many images in one process: '
       'librbdlite (blue) vs librbd (red), N = %s</text>'
       % ", ".join(str(n) for n in ns)]
for pi, (title, fn, _) in enumerate(panels):
    x0, y0 = M + pi * (PW + 30), 40
    vals = [fn(n, b) for n in ns for b in colors if not math.isnan(fn(n, b))]
    top = max(vals) if vals else 1
    top = top if top > 0 else 1
    out.append('<text x="%d" y="%d">%s</text>' % (x0, y0 - 6, title))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#888"/>' % (x0, y0, PW, PH))
    out.append('<text x="%d" y="%d" text-anchor="end">%.3g</text>'
               % (x0 - 3, y0 + 10, top))
    lx = [math.log10(n) for n in ns]
    span = (max(lx) - min(lx)) or 1
    for b, col in colors.items():
        pts = []
        for n, l in zip(ns, lx):
            v = fn(n, b)
            if math.isnan(v):
                continue
            px = x0 + 8 + (l - min(lx)) / span * (PW - 16)
            py = y0 + PH - max(v, 0) / top * (PH - 10)
            pts.append("%.1f,%.1f" % (px, py))
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>'
                       % (px, py, col))
        if pts:
            out.append('<polyline points="%s" fill="none" stroke="%s"/>'
                       % (" ".join(pts), col))
    for n, l in zip(ns, lx):
        px = x0 + 8 + (l - min(lx)) / span * (PW - 16)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (px, y0 + PH + 14, n))
out.append('<text x="10" y="%d">%s</text>' % (H - 8, command))
out.append("</svg>")
open(svg, "w").write("\n".join(out) + "\n")
