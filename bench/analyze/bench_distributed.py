#!/usr/bin/env python3
"""The index and Dask benchmark, one run: per-name summaries of 100, 1,000 and 10,000
trace files, side by side:

  local      dftracer.analyze.summary(use_index=False): this machine's C++ reader, all cores
  dask-1     the same read on a Dask LocalCluster of 1 worker process (1 thread)
  dask-2     ... of 2 worker processes (target: at least 1.7x dask-1)
  dask-2-idx dask-2 with the write-time indexes: the workers answer from the .idx files
  cli-index  `dftracer-analyze summary`: index-only (nothing inflated)
  cli-full   `dftracer-analyze summary --no-index`: a full read
  dftu-build dftracer-utils' `dftracer_stats --report names`, first run: builds its
             RocksDB index (.dftindex) then answers
  dftu-query the same again: answered from the index

and per-file cost (ms per file) as the count grows. Two sets of files of the
same count and events per file: the read columns (local, dask-1, dask-2,
cli-full, dftu-*) read .pfw.gz op traces with args, nesting and two threads
from tests/python/synthetic_traces.py (their .idx is version 1: member offsets
only); the index columns (dask-2-idx, cli-index) answer over finalized traces
written by the real writer with version-2 .idx
(build/bench/analyze/analyze_gen_indexed_traces). 20 distinct files are
written per set and size and copied under new names for the rest (the reader
does the same work for each). Each Dask cluster's workers import the extension
before anything is timed. Usage:

  python bench/analyze/bench_distributed.py [--build build] [--counts 100,1000,10000]
      [--events 10000] [--events-10k 10000] [--dir DIR] [--repeat 3] [--repeat-10k 1]
      [--dftu-max-files 100]

Prints a table; DFAnalyzer (PyPI dftracer-analyzer) is not run: see
docs/analyzer.md, "Dask".
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import dftracer.analyze as da  # noqa: E402

REFERENCE_VENV = (os.environ.get("DFTRACER_REFERENCE_VENV") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv-ref"))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import synthetic_traces  # noqa: E402

DISTINCT = 20  # distinct files generated per size; the rest are copies


def make_read_files(directory, n_files, n_events):
    """n_files .pfw.gz (+ version-1 .idx: member offsets, no statistics) of about n_events
    op events each, with args, nesting and threads (tests/python/synthetic_traces.py): what
    the reader reads in the read columns."""
    os.makedirs(directory, exist_ok=True)
    templates = []
    for k in range(min(DISTINCT, n_files)):
        p = os.path.join(directory, f"trace-app-{k}.pfw.gz")
        synthetic_traces.write_multi_member_gz(p, n_events, threads=2, member_lines=5000, seed=k, split_lines=False)
        templates.append(p)
    for i in range(len(templates), n_files):
        src = templates[i % len(templates)]
        dst = os.path.join(directory, f"trace-app-{i}.pfw.gz")
        shutil.copyfile(src, dst)
        shutil.copyfile(src + ".idx", dst + ".idx")
    return directory


def make_indexed_files(gen, directory, n_files, n_events):
    """n_files finalized .pfw.gz (+ version-2 .idx) of n_events events each, from the real
    writer: what the index columns answer from."""
    os.makedirs(directory, exist_ok=True)
    tmpl_dir = directory + "-templates"
    os.makedirs(tmpl_dir, exist_ok=True)
    env = dict(os.environ, DFTRACER_LOG_LEVEL="error")
    env.pop("DFTRACER_ENABLE", None)
    subprocess.run([gen, tmpl_dir, str(min(DISTINCT, n_files)), str(n_events)], check=True, env=env)
    templates = sorted(os.path.join(tmpl_dir, f) for f in os.listdir(tmpl_dir) if f.endswith(".pfw.gz"))
    for i in range(n_files):
        src = templates[i % len(templates)]
        dst = os.path.join(directory, f"trace-app-{i}.pfw.gz")
        shutil.copyfile(src, dst)
        shutil.copyfile(src + ".idx", dst + ".idx")
    shutil.rmtree(tmpl_dir, ignore_errors=True)
    return directory


def timed(fn, repeat, out=None):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    if out is not None:
        out.append(result)
    return best


def analyzer_bin():
    for c in (os.environ.get("DFTRACER_ANALYZE_BIN"), os.path.join(os.path.dirname(sys.executable), "dftracer-analyze"),
              shutil.which("dftracer-analyze")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def knows_no_index(exe):
    r = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return "--no-index" in (r.stdout + r.stderr)


def run_quiet(cmd):
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {r.returncode}: {r.stderr.strip()[:300]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build", help="the CMake build directory (for the trace generator)")
    ap.add_argument("--counts", default="100,1000,10000")
    ap.add_argument("--events", type=int, default=10000, help="events per file for 100 and 1,000 files")
    ap.add_argument("--events-10k", type=int, default=10000, help="events per file for 10,000 files")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs per cell")
    ap.add_argument("--repeat-10k", type=int, default=1, help="the same for 10,000 files and more")
    ap.add_argument("--dftu-max-files", type=int, default=100,
                    help="run dftracer_stats only up to this many files (its index build is slow)")
    a = ap.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="dft-bench-dist-")
    exe = analyzer_bin()
    gen = os.path.join(a.build, "bench", "analyze", "analyze_gen_indexed_traces")
    if not os.access(gen, os.X_OK):
        sys.exit(f"{gen}: not built (cmake -DDFTRACER_BUILD_BENCH=ON, target analyze_gen_indexed_traces)")
    no_index = exe is not None and knows_no_index(exe)
    stats_bin = os.path.join(REFERENCE_VENV, "bin", "dftracer_stats")
    have_dftu = os.access(stats_bin, os.X_OK)
    from dftracer.analyze.distributed import local_cluster

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(f"dftracer-analyze: {exe or 'not found'}; --no-index known: {no_index}; dftracer_stats: "
          f"{stats_bin if have_dftu else 'not found'}")
    clients = {1: local_cluster(n_workers=1), 2: local_cluster(n_workers=2)}
    for c in clients.values():  # every worker imports the extension before the clock runs
        c.run(lambda: __import__("dftracer._analyze"))
    rows = []
    try:
        for n in [int(x) for x in a.counts.split(",")]:
            ev = a.events if n < 10000 else a.events_10k
            repeat = a.repeat if n < 10000 else a.repeat_10k
            d = os.path.join(base, f"n{n}-e{ev}")
            di = os.path.join(base, f"n{n}-e{ev}-indexed")
            t0 = time.perf_counter()
            if not os.path.isdir(d):
                make_read_files(d, n, ev)
            if not os.path.isdir(di):
                make_indexed_files(gen, di, n, ev)
            gen_s = time.perf_counter() - t0
            size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".gz"))
            assert sum(f.endswith(".pfw.gz") for f in os.listdir(d)) == n
            r = {"files": n, "events/file": ev, "MB": size / 1e6, "gen_s": gen_s}
            local = []
            r["local"] = timed(lambda: da.summary(d, use_index=False), repeat, local)
            r["events"] = int(local[0].attrs["totals"]["complete_events"])
            for w, c in clients.items():
                r[f"dask-{w}"] = timed(lambda: da.summary(d, client=c, use_index=False), repeat)
            idx_out = []
            r["dask-2-idx"] = timed(lambda: da.summary(di, client=clients[2]), repeat, idx_out)
            assert idx_out[0].attrs["stats"]["indexed_files"] == n, idx_out[0].attrs["stats"]
            if exe:
                r["cli-index"] = timed(lambda: run_quiet([exe, "summary", "--no-progress", di]), repeat)
                r["cli-full"] = (timed(lambda: run_quiet([exe, "summary", "--no-progress", "--no-index", d]), repeat)
                                 if no_index else None)
            if have_dftu and n <= a.dftu_max_files:
                idx = os.path.join(base, f"dftindex-{n}")
                shutil.rmtree(idx, ignore_errors=True)
                cmd = [stats_bin, "--directory", d, "--index-dir", idx, "--report", "names"]
                try:
                    r["dftu-build"] = timed(lambda: run_quiet(cmd), 1)
                    r["dftu-query"] = timed(lambda: run_quiet(cmd), repeat)
                except RuntimeError as e:
                    print(f"dftracer_stats failed on {n} files: {e}")
            rows.append(r)
            print_row(r, header=len(rows) == 1)
    finally:
        for c in clients.values():
            cl = c.cluster
            c.close()
            cl.close()
    print()
    print("per-file cost (ms per file): " + "; ".join(
        f"{r['files']} files: local {1e3 * r['local'] / r['files']:.2f}, dask-2 {1e3 * r['dask-2'] / r['files']:.2f}"
        for r in rows))
    print("dask-2 speed-up over dask-1: " + "; ".join(f"{r['files']} files {r['dask-1'] / r['dask-2']:.2f}x"
                                                     for r in rows))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if not a.dir:
        shutil.rmtree(base, ignore_errors=True)


COLS = ["files", "events/file", "events", "MB", "local", "dask-1", "dask-2", "dask-2-idx", "cli-index", "cli-full",
        "dftu-build", "dftu-query"]


def print_row(r, header):
    if header:
        print(" ".join(f"{c:>11}" for c in COLS) + "   (times in s)")
    out = []
    for c in COLS:
        v = r.get(c)
        if v is None:
            out.append(f"{'n/a':>11}")
        elif isinstance(v, float):
            out.append(f"{v:11.3f}")
        else:
            out.append(f"{v:>11}")
    print(" ".join(out), flush=True)


if __name__ == "__main__":
    main()
