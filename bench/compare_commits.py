#!/usr/bin/env python3
"""The headline figures of this tree and of an earlier commit, side by side,
in one run:

    python3 bench/compare_commits.py --base 938f48f [--rounds 3] [--work /tmp/dft-compare]

Builds the base commit (a detached git worktree) and this working tree the
same way (RelWithDebInfo, the benchmark targets only), installs each one's
Python package into a venv of its own, then runs each tree's OWN benchmark
scripts round by round, alternating which tree goes first, so both see the
same machine load. Each figure is the best (lowest) over the rounds:

  record     bench_record: ns per event, region (2 clock reads + record) and
             record only, one thread
  writer     bench_writer: events per writer-CPU-second, op-event mix, .pfw.gz
  region     bench_regions.py worker "ours-on": ns per `with dft_fn(...)`
             region and per @dft_fn.log call, tracing on
  per-node   bench_hook.py: calling-thread CPU ns per graph node of the
             capture backend's instrumentation
  per-call   a 2-op function compiled with our backend and with aot_eager,
             no_grad, tracing on: calling-thread CPU ns per call over
             aot_eager's (public API only, so any commit can run it)
  analyzer   dftracer-analyze summary, 2 threads, on one generated trace
             (.pfw.gz): wall and CPU seconds

Not a test: run it by hand on a machine as quiet as you can get, and quote
the load it prints.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGETS = ["bench_record", "bench_writer", "dftracer-analyze", "analyze_gen_trace"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def prepare(label, src, work, py):
    """Build dir and venv for one tree; returns (build dir, venv python)."""
    build = os.path.join(work, f"build-{label}")
    sh(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        f"-DPython_EXECUTABLE={py}", "-DDFTRACER_BUILD_TESTS=OFF", "-DDFTRACER_BUILD_ANALYZER=ON",
        "-DDFTRACER_BUILD_BENCH=ON", "-DDFTRACER_BUILD_EXAMPLES=OFF"], stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", build, "-j", str(os.cpu_count()), "--target", *TARGETS], stdout=subprocess.DEVNULL)
    venv = os.path.join(work, f"venv-{label}")
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        sh([py, "-m", "venv", "--system-site-packages", venv])
    vpy = os.path.join(venv, "bin", "python")
    sh([vpy, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", src], stdout=subprocess.DEVNULL)
    return build, vpy


def find(build, name):
    for d, _, files in os.walk(build):
        if name in files:
            return os.path.join(d, name)
    raise FileNotFoundError(f"{name} not built in {build}")


def gbench(binary, filt):
    out = subprocess.run([binary, f"--benchmark_filter={filt}", "--benchmark_format=json",
                          "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True).stdout
    return {b["run_name"]: b for b in json.loads(out)["benchmarks"] if b.get("aggregate_name") == "median"}


PER_CALL = r"""
import os, sys, tempfile, time, torch
from dftracer.python import dftracer, dftracer_dynamo_backend
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(tempfile.mkdtemp(prefix="dft-call-"), "call"), None, -1)
def f(x):
    return (x + 1).relu()
ours = torch.compile(f, backend=dftracer_dynamo_backend)
ref = torch.compile(f, backend="aot_eager")
x = torch.randn(4)
best = {}
with torch.no_grad():
    for fn in (ours, ref):
        fn(x)
    for _ in range(40):
        for name, fn in (("ours", ours), ("ref", ref)):
            t = time.thread_time_ns()
            for _ in range(200):
                fn(x)
            best[name] = min(best.get(name, 1e18), (time.thread_time_ns() - t) / 200)
log.finalize()
print(best["ours"] - best["ref"], best["ref"])
"""


def measure(tree, trace, work, only=None):
    """One round of every figure for one tree."""
    src, build, vpy = tree
    r = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["PYTHONPATH"] = ""
    # initialize_log() traces only with DFTRACER_ENABLE=1 since #13; older
    # trees trace with it too (they start on import, then move the file).
    env["DFTRACER_ENABLE"] = "1"
    out = subprocess.run([vpy, "-c", PER_CALL], check=True, capture_output=True, text=True, env=env,
                         cwd=work).stdout.split()
    r["per-call: graph call over aot_eager, CPU ns"] = float(out[0])
    r["per-call: aot_eager's own call, CPU ns"] = float(out[1])
    if only == "per-call":
        return r
    rec = gbench(find(build, "bench_record"), "BM_Ours_(Region|RecordOnly)/manual_time/threads:1$")
    for name, b in rec.items():
        key = "record: region ns/event" if "Region" in name else "record: record-only ns/event"
        r[key] = b["ns_per_event"]
    wr = gbench(find(build, "bench_writer"), "run/pfw_gz_ops_full/")
    for b in wr.values():
        # Higher is better: negated so that min() keeps the best round.
        r["writer: M events per writer-CPU-s (.pfw.gz, op mix)"] = -b["Mevents_per_writer_cpu_s"]
        r["writer: bytes per event on disk (.pfw.gz)"] = b["bytes_per_event"]
    td = os.path.join(work, "regions")
    os.makedirs(td, exist_ok=True)
    out = subprocess.run([vpy, os.path.join(src, "bench/python/bench_regions.py"), "--worker", "ours-on",
                          "--trace-dir", td], check=True, capture_output=True, text=True, env=env, cwd=td).stdout
    for k, v in json.loads(out.strip().splitlines()[-1]).items():
        r[f"region: {k} ns"] = v
    out = subprocess.run([vpy, os.path.join(src, "bench/dynamo/bench_hook.py"), "--rounds", "20"],
                         check=True, capture_output=True, text=True, env=env, cwd=work).stdout
    m = re.search(r"hook (-?\d+) ns/node", out)
    r["per-node: hook CPU ns/node"] = float(m.group(1))
    analyzer = find(build, "dftracer-analyze")
    t0, c0 = time.perf_counter(), os.times()
    sh([analyzer, "summary", "--no-progress", "--threads", "2", trace], stdout=subprocess.DEVNULL)
    c1 = os.times()
    r["analyzer: summary .pfw.gz wall s"] = time.perf_counter() - t0
    r["analyzer: summary .pfw.gz CPU s"] = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=2_000_000, help="events in the analyzer's trace")
    ap.add_argument("--work", default="/tmp/dft-compare")
    ap.add_argument("--only", choices=["per-call"], help="measure only this figure")
    a = ap.parse_args()
    py = sys.executable
    os.makedirs(a.work, exist_ok=True)
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", a.base], check=True,
                         capture_output=True, text=True).stdout.strip()
    base_src = os.path.join(a.work, f"src-{sha}")
    if not os.path.exists(base_src):
        sh(["git", "-C", ROOT, "worktree", "add", "--detach", base_src, sha], stdout=subprocess.DEVNULL)
    head = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], check=True,
                          capture_output=True, text=True).stdout.strip()
    trees = {}
    for label, src in ((sha, base_src), (head, ROOT)):
        print(f"building {label} ...", flush=True)
        trees[label] = (src, *prepare(label, src, a.work, py))
    trace = os.path.join(a.work, f"trace{a.events}")
    if not os.path.exists(trace + ".pfw.gz"):
        sh([find(trees[head][1], "analyze_gen_trace"), trace, str(a.events)], stdout=subprocess.DEVNULL)
    trace += ".pfw.gz"
    best = {label: {} for label in trees}
    labels = list(trees)
    for rnd in range(a.rounds):
        order = labels if rnd % 2 == 0 else labels[::-1]
        for label in order:
            print(f"round {rnd + 1}/{a.rounds}: {label}  (load {os.getloadavg()[0]:.2f})", flush=True)
            for k, v in measure(trees[label], trace, a.work, a.only).items():
                best[label][k] = min(v, best[label].get(k, float("inf")))
    print(f"\n# best of {a.rounds} rounds, trees alternating; {os.cpu_count()} CPUs, load at end "
          f"{os.getloadavg()[0]:.2f}")
    print(f"| figure | {labels[0]} | {labels[1]} | {labels[1]} / {labels[0]} |")
    print("|---|---:|---:|---:|")
    for k in best[labels[1]]:
        b, h = best[labels[0]].get(k), best[labels[1]][k]
        if b is None:
            print(f"| {k} | - | {abs(h):.2f} | - |")
            continue
        print(f"| {k} | {abs(b):.2f} | {abs(h):.2f} | {abs(h) / abs(b) if b else float('nan'):.2f} |")


if __name__ == "__main__":
    main()
