#!/usr/bin/env python3
# fio-driver.py - unmodified fio (--ioengine=rbd) on the real librbd and on
# librbdlite (LD_PRELOAD), interleaved, with whole-process CPU accounting.
# Run by tests/bench-fio.sh, which sets up the cluster and the images.
# Writes every fio JSON output, fio.json, fio-scaling.tsv and the chart
# fio-scaling.svg (committed as tests/bench/results/fio-scaling.svg) to DIR.
#
#   fio-driver.py --lib=LIBRBDLITE.so --pool=POOL --images=A,B,... --out=DIR
#                 [--short=S] [--long=S] [--blocks=N]
#                 [--sweeps=main,writes,images,threads,qemu]
#
# fio's own "cpu" line counts only its job threads (getrusage RUSAGE_THREAD);
# librbd's and librados' threads would be missed.  Here every fio run is a
# child process reaped with wait4(), whose rusage covers all its threads.
# Set-up and tear-down (connect, open, thread creation, close) are removed
# by running every job twice, time-based, for --short and --long seconds:
#
#   CPU per I/O = (cpu(long) - cpu(short)) / (ios(long) - ios(short))
#
# with ios the I/Os fio completed (its JSON output), and likewise context
# switches per I/O.  IOPS and latency percentiles come from the long run.
# Backends alternate per block, lite first in odd blocks and librbd first in
# even ones (ABBA).  fio's rbd engine runs without busy_poll (it waits on the
# image's eventfd), at librbd's defaults (rbd cache on).  With --wrapper=
# rbdlite-run a third backend, fio+run, runs fio through the wrapper with its
# defaults (librbdlite and jemalloc preloaded), as shipped to users.
#
# The qemu sweep runs `qemu-img bench -w` (4 KiB writes, depth 32, a fixed
# count) through qemu's rbd driver with -t none (qemu sets rbd_cache=false)
# and -t writeback (rbd_cache=true), per backend and block, and reports the
# wall time and the whole process' CPU time of each run (medians).
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BACKENDS = ["fio+lite", "fio+librbd"]


def run_fio(args, env, outfile):
    t0 = time.monotonic()
    with open(outfile + ".stderr", "w") as err:
        p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                             stderr=err)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    with open(outfile, "wb") as f:
        f.write(out)
    if status != 0:
        raise RuntimeError("fio failed (status %d): see %s.stderr"
                           % (status, outfile))
    text = out.decode(errors="replace")
    d = json.loads(text[text.index("{"):])
    ios, p50, p99, p999 = 0, [], [], []
    for job in d["jobs"]:
        if job.get("error"):
            raise RuntimeError("fio job error %s: see %s"
                               % (job["error"], outfile))
        for dd in ("read", "write"):
            s = job[dd]
            ios += s["total_ios"]
            pct = s.get("clat_ns", {}).get("percentile")
            if s["total_ios"] and pct:
                p50.append(pct["50.000000"] / 1000)
                p99.append(pct["99.000000"] / 1000)
                p999.append(pct["99.900000"] / 1000)
    return {"cpu": ru.ru_utime + ru.ru_stime, "ctxsw": ru.ru_nvcsw + ru.ru_nivcsw,
            "ios": ios, "wall": wall,
            "p50": max(p50) if p50 else float("nan"),
            "p99": max(p99) if p99 else float("nan"),
            "p999": max(p999) if p999 else float("nan")}


def fio_args(o, case, secs):
    a = ["fio", "--output-format=json", "--ioengine=rbd", "--clientname=admin",
         "--pool=" + o.pool, "--busy_poll=0", "--rw=" + case["rw"],
         "--bs=" + case.get("bs", "4k"),
         "--time_based", "--runtime=%dms" % int(secs * 1000), "--ramp_time=0",
         "--iodepth=%d" % case["qd"], "--invalidate=0", "--randrepeat=1",
         "--percentile_list=50:99:99.9"]
    for j, img in enumerate(case["jobs"]):
        a += ["--name=j%d" % j, "--rbdname=" + img]
    return a


def cell(o, case, label):
    res = {b: [] for b in BACKENDS}
    base = os.environ.copy()
    base.pop("LD_PRELOAD", None)
    for blk in range(o.blocks):
        order = BACKENDS if blk % 2 == 0 else BACKENDS[::-1]
        for be in order:
            env = dict(base)
            pre = []
            if be == "fio+lite":
                env["LD_PRELOAD"] = o.lib
            elif be == "fio+run":
                env["RBDLITE_RUN_LIB"] = o.lib
                pre = [o.wrapper]
            r = {}
            for kind, secs in (("short", o.short), ("long", o.long)):
                f = os.path.join(o.out, "fio-%s-%s-b%d-%s.json"
                                 % (label, be.replace("fio+", ""), blk + 1, kind))
                r[kind] = run_fio(pre + fio_args(o, case, secs), env, f)
            dios = r["long"]["ios"] - r["short"]["ios"]
            if dios <= 0:
                raise RuntimeError("%s %s: no more I/Os in the long run" % (label, be))
            v = {"cpu": (r["long"]["cpu"] - r["short"]["cpu"]) / dios * 1e6,
                 "ctxsw": (r["long"]["ctxsw"] - r["short"]["ctxsw"]) / dios,
                 "iops": r["long"]["ios"] / o.long,
                 "p50": r["long"]["p50"], "p99": r["long"]["p99"],
                 "p999": r["long"]["p999"]}
            res[be].append(v)
            print("%-22s block %d/%d %-10s %8.0f IOPS %7.1f us CPU/IO  p50 %.0f us"
                  % (label, blk + 1, o.blocks, be, v["iops"], v["cpu"], v["p50"]),
                  file=sys.stderr, flush=True)
    summ = {}
    for be, l in res.items():
        cpus = [x["cpu"] for x in l]
        summ[be] = {"cpu_med": statistics.median(cpus), "cpu_min": min(cpus),
                    "cpu_max": max(cpus),
                    **{k: statistics.median(x[k] for x in l)
                       for k in ("ctxsw", "iops", "p50", "p99", "p999")},
                    "blocks": l}
    return summ


def qemu_run(args, env):
    t0 = time.monotonic()
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError("%s failed (status %d): %s"
                           % (" ".join(args), status, out.decode()[-500:]))
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime


def qemu_sweep(o, img, report):
    """qemu-img bench -w through qemu's rbd driver, cache=none and
    cache=writeback, each backend per block (ABBA)."""
    base = os.environ.copy()
    base.pop("LD_PRELOAD", None)
    conf = os.environ.get("CEPH_CONF", "")
    target = "rbd:%s/%s:id=admin%s" % (o.pool, img,
                                       ":conf=" + conf if conf else "")
    lines = ["qemu-img bench -w -c %d -d 32 -s 4096 -f raw (qemu's rbd "
             "driver), wall and whole-process CPU seconds, medians of %d "
             "blocks" % (o.qemu_count, o.blocks),
             "%-16s %-11s %8s %8s %10s" % ("cache", "backend", "wall s",
                                          "CPU s", "CPU us/IO")]
    ratios = []
    for mode in ("none", "writeback"):
        res = {b: [] for b in BACKENDS}
        for blk in range(o.blocks):
            order = BACKENDS if blk % 2 == 0 else BACKENDS[::-1]
            for be in order:
                env = dict(base)
                pre = []
                if be == "fio+lite":
                    env["LD_PRELOAD"] = o.lib
                elif be == "fio+run":
                    env["RBDLITE_RUN_LIB"] = o.lib
                    pre = [o.wrapper]
                w, c = qemu_run(pre + ["qemu-img", "bench", "-f", "raw",
                                       "-t", mode, "-w", "-c",
                                       str(o.qemu_count), "-d", "32", "-s",
                                       "4096", target], env)
                res[be].append((w, c))
                print("qemu-img bench -t %-9s block %d/%d %-10s %6.2f s wall "
                      "%6.2f s CPU" % (mode, blk + 1, o.blocks, be, w, c),
                      file=sys.stderr, flush=True)
        med = {be: (statistics.median(x[0] for x in l),
                    statistics.median(x[1] for x in l))
               for be, l in res.items()}
        report.setdefault("qemu", []).append({"cache": mode, "result": med})
        for i, be in enumerate(BACKENDS):
            lines.append("%-16s %-11s %8.2f %8.2f %10.1f"
                         % (mode if i == 0 else "", be.replace("fio+", "qemu+"),
                            med[be][0], med[be][1],
                            med[be][1] / o.qemu_count * 1e6))
        for be in BACKENDS:
            if be == "fio+librbd":
                continue
            ratios.append("cache=%-10s %s/librbd wall %.2fx, CPU %.2fx"
                          % (mode, be.replace("fio+", ""),
                             med[be][0] / med["fio+librbd"][0],
                             med[be][1] / med["fio+librbd"][1]))
    return lines + [""] + ratios + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--pool", required=True)
    ap.add_argument("--images", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--short", type=float, default=2)
    ap.add_argument("--long", type=float, default=6)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--qd", type=int, default=32)
    ap.add_argument("--sweeps", default="main,images,threads")
    ap.add_argument("--image-points", default="1,2,4,8,16")
    ap.add_argument("--thread-points", default="1,2,4,8")
    ap.add_argument("--wrapper", default="")
    ap.add_argument("--qemu-count", type=int, default=20000)
    o = ap.parse_args()
    if o.wrapper:
        BACKENDS.append("fio+run")
    imgs = o.images.split(",")
    sweeps = o.sweeps.split(",")
    report = {"fio": subprocess.run(["fio", "--version"], capture_output=True,
                                    text=True).stdout.strip(),
              "lib": o.lib, "short_s": o.short, "long_s": o.long,
              "blocks": o.blocks, "main": [], "scaling": []}
    lines = []
    # main: 4 KiB random reads and writes; writes: the write path's cases
    # (4 KiB random and sequential at iodepth 32 and 1, 64 KiB and 1 MiB
    # sequential), each on 1 job and 1 image.
    tables = []
    if "main" in sweeps:
        tables.append(("main", [(rw, "4k", qd) for rw in ("randread", "randwrite")
                                for qd in (o.qd, 1)]))
    if "writes" in sweeps:
        tables.append(("writes", [("randwrite", "4k", o.qd), ("randwrite", "4k", 1),
                                  ("write", "4k", o.qd), ("write", "4k", 1),
                                  ("write", "64k", o.qd), ("write", "1m", o.qd)]))
    for name, cases in tables:
        lines.append("fio %s, --ioengine=rbd, busy_poll=0, 1 job, 1 image; CPU = "
                     "user+sys of the whole fio process per I/O (slope between %g s "
                     "and %g s runs), medians of %d blocks"
                     % (report["fio"], o.short, o.long, o.blocks))
        lines.append("%-16s %-11s %8s %8s %8s %9s %10s %9s"
                     % ("case", "backend", "IOPS", "p50 us", "p99 us",
                        "p99.9 us", "CPU us/IO", "ctxsw/IO"))
        ratios = []
        for rw, bs, qd in cases:
            case = {"rw": rw, "bs": bs, "qd": qd, "jobs": [imgs[0]]}
            label = "%s-qd%d" % (rw, qd) if bs == "4k" else \
                "%s-%s-qd%d" % (rw, bs, qd)
            s = cell(o, case, label)
            report.setdefault(name, []).append({"case": label, "result": s})
            for i, be in enumerate(BACKENDS):
                v = s[be]
                lines.append("%-16s %-11s %8.0f %8.0f %8.0f %9.0f %10.1f %9.2f"
                             % (label if i == 0 else "", be, v["iops"], v["p50"],
                                v["p99"], v["p999"], v["cpu_med"], v["ctxsw"]))
            for be in BACKENDS:
                if be == "fio+librbd":
                    continue
                r = s[be]["cpu_med"] / s["fio+librbd"]["cpu_med"]
                ratios.append("%-16s %s/librbd CPU per I/O %.2fx, IOPS %.2fx (blocks: %s)"
                              % (label, be.replace("fio+", ""), r,
                                 s[be]["iops"] / s["fio+librbd"]["iops"], " ".join(
                                     "%.2f" % (a["cpu"] / b["cpu"]) for a, b in
                                     zip(s[be]["blocks"], s["fio+librbd"]["blocks"]))))
        lines.append("")
        lines += ratios
        lines.append("")
    if "qemu" in sweeps:
        lines += qemu_sweep(o, imgs[0], report)
    tsv = os.path.join(o.out, "fio-scaling.tsv")
    with open(tsv, "w") as t:
        t.write("# sweep\tx\tbackend\tcpu_med\tcpu_min\tcpu_max\tiops\tp50_us\tp99_us\n")
        for sweep, pts in (("images", o.image_points), ("threads", o.thread_points)):
            if sweep not in sweeps:
                continue
            for n in [int(x) for x in pts.split(",")]:
                if sweep == "images":
                    if n > len(imgs):
                        raise SystemExit("need %d images" % n)
                    jobs = imgs[:n]        # one fio job (thread) per image
                else:
                    jobs = [imgs[0]] * n   # n jobs, own handles, one image
                case = {"rw": "randread", "qd": max(1, o.qd // n), "jobs": jobs}
                s = cell(o, case, "%s-%d" % (sweep, n))
                report["scaling"].append({"sweep": sweep, "x": n, "result": s})
                for be in BACKENDS:
                    v = s[be]
                    t.write("\t".join(str(x) for x in (
                        sweep, n, be, v["cpu_med"], v["cpu_min"], v["cpu_max"],
                        v["iops"], v["p50"], v["p99"])) + "\n")
                t.flush()
    with open(os.path.join(o.out, "fio.json"), "w") as f:
        json.dump(report, f, indent=1)
    print("\n".join(lines))
    if report["scaling"]:
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run([sys.executable, os.path.join(here, "scaling-report.py"),
                            tsv, os.path.join(o.out, "fio-scaling.svg"),
                            "fio --ioengine=rbd, whole process: 4 KiB randread, "
                            "total iodepth %d, %d blocks" % (o.qd, o.blocks)])
        if r.returncode:
            sys.exit(1)


main()
