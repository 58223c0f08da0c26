#!/usr/bin/env python3
# scaling-report.py - table and SVG chart of CPU per I/O across a sweep.
#
#   scaling-report.py DATA.tsv OUT.svg TITLE
#
# Used by tests/bench-scaling.sh and tests/bench-fio.sh.  DATA.tsv has one
# line per (sweep, point, backend), tab-separated, '#' comments allowed:
#
#   sweep  x  backend  cpu_us_med  cpu_us_min  cpu_us_max  iops  p50_us  p99_us
#
# sweep is a free-form label ("images", "threads", ...), x a positive
# integer.  Prints, per sweep, CPU per I/O per backend and point, the ratios
# of the first backend to the others, and the flatness of each backend:
# the largest deviation of its CPU per I/O from its value at the first
# point.  Writes one chart panel per sweep (median, min-max bars); the
# committed tests/bench/results/scaling.svg and fio-scaling.svg are such
# charts.
import sys
from collections import OrderedDict

COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"]


def load(path):
    data = OrderedDict()      # sweep -> OrderedDict(backend -> {x: row})
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 9:
            raise SystemExit("%s: bad line: %r" % (path, line))
        sweep, x, be = f[0], int(f[1]), f[2]
        v = [float(t) if t not in ("", "nan", "NaN") else float("nan")
             for t in f[3:9]]
        data.setdefault(sweep, OrderedDict()).setdefault(be, {})[x] = v
    return data


def fmt(v, spec="%.1f"):
    return "-" if v != v else spec % v


def table(data):
    out = []
    for sweep, bes in data.items():
        names = list(bes)
        xs = sorted({x for b in bes.values() for x in b})
        out.append("CPU us per I/O vs %s (median over blocks; IOPS in brackets)"
                   % sweep)
        w = max([18] + [len(n) + 2 for n in names])
        rw = max([14] + [len(names[0]) + len(n) + 3 for n in names[1:]])
        hdr = "%-8s" % sweep + "".join("%*s" % (w, n) for n in names)
        for n in names[1:]:
            hdr += "%*s" % (rw, "%s/%s" % (names[0], n))
        out.append(hdr)
        for x in xs:
            row = "%-8d" % x
            for n in names:
                v = bes[n].get(x)
                row += "%*s" % (w, "-" if v is None else
                                 "%s (%s)" % (fmt(v[0]), fmt(v[3], "%.0f")))
            for n in names[1:]:
                a, b = bes[names[0]].get(x), bes[n].get(x)
                r = a[0] / b[0] if a and b and b[0] > 0 else float("nan")
                row += "%*s" % (rw, fmt(r, "%.2fx"))
            out.append(row)
        row = "%-8s" % "flat"
        for n in names:
            pts = [bes[n][x][0] for x in xs if x in bes[n]]
            if len(pts) > 1 and pts[0] > 0:
                devs = [(p / pts[0] - 1) * 100 for p in pts[1:]]
                row += "%*s" % (w, "max %+.0f%%" % max(devs, key=abs))
            else:
                row += "%*s" % (w, "-")
        out.append(row)
        out.append("(flat: largest deviation from the value at %s=%d; the "
                   "target is within +-10%%)" % (sweep, xs[0]))
        out.append("")
    return "\n".join(out)


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(data, title):
    pw, ph, ml, mr, mt, mb = 380, 260, 60, 20, 50, 60
    n = len(data)
    W, H = ml + n * (pw + mr + ml) , ph + mt + mb + 30
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>'
         % (ml, esc(title))]
    allbe = []
    for bes in data.values():
        for b in bes:
            if b not in allbe:
                allbe.append(b)
    for pi, (sweep, bes) in enumerate(data.items()):
        x0 = ml + pi * (pw + mr + ml)
        xs = sorted({x for b in bes.values() for x in b})
        ymax = max(v[2] if v[2] == v[2] else v[0]
                   for b in bes.values() for v in b.values())
        ymax = ymax * 1.15 if ymax > 0 else 1
        step = 10 ** len(str(int(ymax / 5))) / 10 if ymax >= 5 else 1
        for m in (1, 2, 2.5, 5, 10):
            if ymax / (step * m) <= 6:
                step *= m
                break

        def X(x):
            i = xs.index(x)
            return x0 + (pw * (i + 0.5) / len(xs))

        def Y(v):
            return mt + ph - ph * v / ymax
        s.append('<text x="%d" y="%d" font-weight="bold">CPU per I/O vs %s'
                 '</text>' % (x0, mt - 10, esc(sweep)))
        t = 0.0
        while t <= ymax:
            s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                     % (x0, x0 + pw, Y(t), Y(t)))
            s.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>'
                     % (x0 - 5, Y(t) + 4, t))
            t += step
        s.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
                 'stroke="#444"/>' % (x0, mt, pw, ph))
        for x in xs:
            s.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                     % (X(x), mt + ph + 16, x))
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                 % (x0 + pw / 2, mt + ph + 34, esc(sweep)))
        s.append('<text transform="translate(%d,%d) rotate(-90)" '
                 'text-anchor="middle">client CPU us per I/O (all threads)'
                 '</text>' % (x0 - 42, mt + ph / 2))
        for bi, (b, pts) in enumerate(bes.items()):
            col = COLORS[allbe.index(b) % len(COLORS)]
            px = sorted(pts)
            dx = (bi - (len(bes) - 1) / 2) * 5   # keep the bars apart

            def X(x, _X=X, dx=dx):
                return _X(x) + dx
            s.append('<polyline fill="none" stroke="%s" stroke-width="2" '
                     'points="%s"/>' % (col, " ".join(
                         "%.1f,%.1f" % (X(x), Y(pts[x][0])) for x in px)))
            for x in px:
                v = pts[x]
                if v[1] == v[1] and v[2] == v[2]:
                    s.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" '
                             'stroke="%s"/>' % (X(x), X(x), Y(v[1]), Y(v[2]),
                                                col))
                s.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>'
                         % (X(x), Y(v[0]), col))
    ly = H - 14
    for i, b in enumerate(allbe):
        lx = ml + i * 150
        s.append('<rect x="%d" y="%d" width="14" height="10" fill="%s"/>'
                 % (lx, ly - 9, COLORS[i % len(COLORS)]))
        s.append('<text x="%d" y="%d">%s</text>' % (lx + 18, ly, esc(b)))
    s.append('</svg>')
    return "\n".join(s) + "\n"


def main():
    if len(sys.argv) != 4:
        raise SystemExit("usage: scaling-report.py DATA.tsv OUT.svg TITLE")
    data = load(sys.argv[1])
    if not data:
        raise SystemExit("%s: no data" % sys.argv[1])
    print(table(data))
    with open(sys.argv[2], "w") as f:
        f.write(svg(data, sys.argv[3]))


main()
