#!/usr/bin/env python3
"""The headline figures of two builds, side by side, in one run:

    python3 bench/compare_commits.py --base 938f48f [--rounds 3] [--work /tmp/dft-compare] [--figures ...]
    python3 bench/compare_commits.py --build old=/work/venv-old/bin/python@4f9f238 \\
        --build new=/work/venv-new/bin/python [--build-dir old=<dir> --build-dir new=build] [--figures ...]

--base REV builds REV (a detached git worktree) and this working tree the
same way (RelWithDebInfo, the benchmark targets only) and installs each
one's Python package into a venv of its own. --build NAME=PYTHON[@REV]
(twice) takes installed builds instead: a Python with that build's dftracer
installed, and the git revision whose bench/ scripts it runs (no @REV: this
tree's; a revision's bench/ is taken with `git archive`); --build-dir
NAME=DIR gives that build's CMake build directory (with the benchmark
targets built) for the C++ figures, which are skipped for a build without
one.

Each build runs its OWN benchmark scripts (a build whose package layout
differs still runs), round by round, alternating which build goes first, so
both see the same machine load. Figures (--figures, comma list; default
record,writer,region,per-node,per-call,analyzer):

  record     bench_record, one thread, CPU ns per event: the L1 floor (2
             clock reads + a store), region (2 clock reads + record), record
             only, op event (64-byte record)      [build dir]
  writer     bench_writer: events per writer-CPU-second, op-event mix,
             .pfw.gz                                  [build dir]
  region     bench_regions.py worker "ours-on": ns per `with dft_fn(...)`
             region and per @dft_fn.log call, tracing on
  per-node   bench_hook.py --nodes N --rounds R: calling-thread CPU ns per
             graph node of the capture backend's mark
  per-call   a 2-op function compiled with our backend and with aot_eager,
             no_grad, tracing on: calling-thread CPU ns per call over
             aot_eager's (public API only, so any commit can run it)
  analyzer   dftracer-analyze summary, 2 threads, on one generated trace
             (.pfw.gz): wall and CPU seconds       [build dir]
  inductor   bench_inductor.py with --inductor-args: per model and mode,
             the traced step's thread-CPU ratio to plain Inductor's, the A/A
             control's (inductor-again), and the per-kernel thread CPU ns

and, once per build (instruction counts read the same in every round):

  record-instructions  bench/core/record_instructions.sh: instructions per
             region, record-only and op-event call (callgrind) [build dir]
  inductor-instructions  bench/dynamo/bench_inductor_instructions.py (this
             tree's, run by each build's Python): instructions per step
             traced - plain Inductor, per kernel call, kernels per step,
             and the A/A control (plain - plain), callgrind; --instr-models,
             --instr-steps

Prints the CPU model and the load at start and end, then per figure the
median over the rounds and the best (lowest; for writer throughput the
highest) of each build, and the ratio of the medians. Not a test: run it by
hand on a machine as quiet as you can get, and quote the load it prints.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGETS = ["bench_record", "bench_writer", "dftracer-analyze", "analyze_gen_trace"]
ROUND_FIGURES = ["record", "writer", "region", "per-node", "per-call", "analyzer", "inductor"]
ONCE_FIGURES = ["record-instructions", "inductor-instructions"]
NEEDS_BUILD = {"record", "writer", "analyzer", "record-instructions"}
DEFAULT_FIGURES = "record,writer,region,per-node,per-call,analyzer"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def out_of(cmd, env=None, cwd=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return r.stdout


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


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


def scripts_of(rev, work):
    """A directory holding `rev`'s bench/ (None: this tree), cached by the
    commit `rev` names (a branch that moved gets its new scripts)."""
    if rev is None:
        return ROOT
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", rev + "^{commit}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"--build: {rev} names no commit of {ROOT}")
    sha = r.stdout.strip()
    out = os.path.join(work, f"scripts-{sha}")
    if not os.path.isdir(os.path.join(out, "bench")):
        os.makedirs(out, exist_ok=True)
        archive = subprocess.run(["git", "-C", ROOT, "archive", sha, "bench"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def find(build, name):
    for d, _, files in os.walk(build):
        if name in files:
            return os.path.join(d, name)
    raise FileNotFoundError(f"{name} not built in {build}")


def gbench(binary, filt, extra=("--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true")):
    out = out_of([binary, f"--benchmark_filter={filt}", "--benchmark_format=json", *extra])
    return [b for b in json.loads(out)["benchmarks"] if b.get("aggregate_name", "median") == "median"]


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
RECORD_ROWS = {"Floor_L1": "record: L1 floor CPU ns/event", "BM_Ours_Region": "record: region CPU ns/event",
               "BM_Ours_RecordOnly": "record: record-only CPU ns/event", "BM_Ours_OpEvent": "record: op event CPU ns/event"}

WRITER_RATE = "writer: M events per writer-CPU-s (.pfw.gz, op mix)"  # higher is better: its best is the highest


def fmt(v):
    return f"{v:.3f}" if abs(v) < 10 else f"{v:,.1f}"


class Build:
    def __init__(self, name, src, build, vpy):
        self.name, self.src, self.build, self.vpy = name, src, build, vpy


def measure(b, figures, a, work, trace):
    """One round of the per-round figures for one build: {figure: value}."""
    r = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["PYTHONPATH"] = ""
    env["TMPDIR"] = work  # the traces the scripts leave go with the work directory
    # initialize_log() traces only with DFTRACER_ENABLE=1 since #13; older
    # trees trace with it too (they start on import, then move the file).
    env["DFTRACER_ENABLE"] = "1"
    has_build = b.build is not None
    if "per-call" in figures:
        out = out_of([b.vpy, "-c", PER_CALL], env=env, cwd=work).split()
        r["per-call: graph call over aot_eager, CPU ns"] = float(out[0])
        r["per-call: aot_eager's own call, CPU ns"] = float(out[1])
    if "record" in figures and has_build:
        rows = gbench(find(b.build, "bench_record"),
                      "^(Floor_L1|BM_Ours_Region|BM_Ours_RecordOnly|BM_Ours_OpEvent)/manual_time/threads:1$")
        for row in rows:
            name = row["run_name"].split("/")[0]
            r[RECORD_ROWS[name]] = row["cpu_ns_per_event"]
        r["record: region - L1 floor, CPU ns"] = r[RECORD_ROWS["BM_Ours_Region"]] - r[RECORD_ROWS["Floor_L1"]]
    if "writer" in figures and has_build:
        for row in gbench(find(b.build, "bench_writer"), "run/pfw_gz_ops_full/"):
            r[WRITER_RATE] = row["Mevents_per_writer_cpu_s"]
            r["writer: bytes per event on disk (.pfw.gz)"] = row["bytes_per_event"]
    if "region" in figures:
        td = os.path.join(work, "regions")
        os.makedirs(td, exist_ok=True)
        out = out_of([b.vpy, os.path.join(b.src, "bench/python/bench_regions.py"), "--worker", "ours-on",
                      "--trace-dir", td], env=env, cwd=td)
        for k, v in json.loads(out.strip().splitlines()[-1]).items():
            r[f"region: {k} ns"] = v
    if "per-node" in figures:
        out = out_of([b.vpy, os.path.join(b.src, "bench/dynamo/bench_hook.py"), "--nodes", str(a.nodes),
                      "--rounds", str(a.hook_rounds)], env=env, cwd=work)
        m = re.search(r"hook (-?\d+) ns/node", out)
        if m is None:
            sys.exit(f"{b.name}: no per-node line in bench_hook.py's output:\n{out}")
        r["per-node: hook CPU ns/node"] = float(m.group(1))
    if "analyzer" in figures and has_build and trace:
        analyzer = find(b.build, "dftracer-analyze")
        t0, c0 = time.perf_counter(), os.times()
        sh([analyzer, "summary", "--no-progress", "--threads", "2", trace], stdout=subprocess.DEVNULL)
        c1 = os.times()
        r["analyzer: summary .pfw.gz wall s"] = time.perf_counter() - t0
        r["analyzer: summary .pfw.gz CPU s"] = ((c1.children_user + c1.children_system)
                                                - (c0.children_user + c0.children_system))
    if "inductor" in figures:
        js = os.path.join(work, f"inductor-{b.name}.json")
        out_of([b.vpy, os.path.join(b.src, "bench/dynamo/bench_inductor.py"), *shlex.split(a.inductor_args),
                "--json", js], env=env, cwd=work)
        with open(js) as f:
            for x in json.load(f):
                what = f"inductor: {x['model']} {x['mode']}"
                r[f"{what}, traced / plain thread CPU"] = x["variants"]["dftracer"]["thread_cpu_ratio"]
                r[f"{what}, A/A control / plain"] = x["variants"]["inductor-again"]["thread_cpu_ratio"]
                r[f"{what}, per-kernel thread CPU ns"] = x["per_kernel_thread_cpu_ns"]
    return r


def measure_once(b, figures, a, work):
    """The instruction-count figures of one build: {figure: value}."""
    r = {}
    if "record-instructions" in figures and b.build is not None:
        out = out_of(["bash", os.path.join(ROOT, "bench/core/record_instructions.sh"), b.build])
        region, record, op = out.strip().splitlines()[-1].split()[-3:]
        r["record: instructions per region"] = float(region)
        r["record: instructions per record-only call"] = float(record)
        r["record: instructions per op event"] = float(op)
    if "inductor-instructions" in figures:
        js = os.path.join(work, f"inductor-instr-{b.name}.json")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
        print(f"inductor-instructions, {b.name} (load {load()}):", flush=True)
        print(out_of([b.vpy, os.path.join(ROOT, "bench/dynamo/bench_inductor_instructions.py"), "--models",
                      a.instr_models, "--steps", str(a.instr_steps), "--aa", "--json", js],
                     env={**env, "PYTHONPATH": ""}), flush=True)
        with open(js) as f:
            for x in json.load(f):
                what = f"inductor instructions: {x['model']} inference"
                r[f"{what}, traced - plain per step"] = x["added_per_step"]
                r[f"{what}, per kernel call"] = x["added_per_kernel"]
                r[f"{what}, kernels per step"] = x["kernels_per_step"]
                r[f"{what}, A/A control (plain - plain) per step"] = x["aa_per_step"]
                r[f"{what}, plain per step"] = x["plain_per_step"]
    return r


def builds_from_args(a, work):
    if a.base:
        py = sys.executable
        sha = out_of(["git", "-C", ROOT, "rev-parse", "--short", a.base]).strip()
        base_src = os.path.join(work, f"src-{sha}")
        if not os.path.exists(base_src):
            sh(["git", "-C", ROOT, "worktree", "add", "--detach", base_src, sha], stdout=subprocess.DEVNULL)
        head = out_of(["git", "-C", ROOT, "describe", "--always", "--dirty"]).strip()
        builds = []
        for label, src in ((sha, base_src), (head, ROOT)):
            print(f"building {label} ...", flush=True)
            builds.append(Build(label, src, *prepare(label, src, work, py)))
        return builds
    dirs = {}
    for spec in a.build_dir or []:
        name, eq, d = spec.partition("=")
        if not name or not eq or not d:
            sys.exit(f"--build-dir {spec}: expected NAME=DIR")
        if name in dirs:
            sys.exit(f"--build-dir: {name} given twice")
        dirs[name] = os.path.abspath(d)
    builds = []
    for spec in a.build:
        name, _, rest = spec.partition("=")
        py, at, rev = rest.rpartition("@")
        if not at:  # no @REV
            py, rev = rest, ""
        if not name or not py:
            sys.exit(f"--build {spec}: expected NAME=PYTHON[@REV]")
        if any(b.name == name for b in builds):
            sys.exit(f"--build: two builds named {name} (give each its own NAME)")
        if "/" in py:  # a path (a bare name is looked up on PATH): the scripts run in other directories
            py = os.path.abspath(py)
        builds.append(Build(name, scripts_of(rev or None, work), dirs.pop(name, None), py))
    if dirs:
        sys.exit(f"--build-dir for no --build: {', '.join(dirs)}")
    return builds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--base", help="build this commit and this tree, and compare them")
    src.add_argument("--build", action="append", metavar="NAME=PYTHON[@REV]",
                     help="an installed build (twice): its Python, and the revision whose bench/ it runs")
    ap.add_argument("--build-dir", action="append", metavar="NAME=DIR", help="a --build's CMake build directory")
    ap.add_argument("--figures", default=DEFAULT_FIGURES,
                    help=f"comma list of {', '.join(ROUND_FIGURES + ONCE_FIGURES)} (default {DEFAULT_FIGURES})")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=2_000_000, help="events in the analyzer's trace")
    ap.add_argument("--nodes", type=int, default=1000, help="per-node: bench_hook.py --nodes")
    ap.add_argument("--hook-rounds", type=int, default=20, help="per-node: bench_hook.py --rounds, per round")
    ap.add_argument("--inductor-args", default="--models small --threads 1 --modes inference --rounds 5 --iters 2 "
                    "--variants inductor", help="inductor: bench_inductor.py's arguments")
    ap.add_argument("--instr-models", default="bert-small", help="inductor-instructions: --models")
    ap.add_argument("--instr-steps", type=int, default=10, help="inductor-instructions: counted steps")
    ap.add_argument("--work", default="/tmp/dft-compare", help="work directory (builds and scripts kept for reuse)")
    a = ap.parse_args()
    figures = a.figures.split(",")
    bad = [f for f in figures if f not in ROUND_FIGURES + ONCE_FIGURES]
    if bad:
        ap.error(f"unknown figure {', '.join(bad)}")
    if a.build is not None and len(a.build) != 2:
        ap.error("--build: give exactly two builds")
    work = a.work
    os.makedirs(work, exist_ok=True)
    builds = builds_from_args(a, work)
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; load average at start {load()}", flush=True)
    for b in builds:
        if b.build is None and NEEDS_BUILD & set(figures):
            print(f"{b.name}: no build directory, so no {', '.join(sorted(NEEDS_BUILD & set(figures)))}")
    trace = None
    gen = next((b.build for b in reversed(builds) if b.build is not None), None)
    if "analyzer" in figures and gen is not None:
        trace = os.path.join(work, f"trace{a.events}")
        if not os.path.exists(trace + ".pfw.gz"):
            sh([find(gen, "analyze_gen_trace"), trace, str(a.events)], stdout=subprocess.DEVNULL)
        trace += ".pfw.gz"
    runs = {b.name: {} for b in builds}
    if set(figures) & set(ROUND_FIGURES):
        for rnd in range(a.rounds):
            for b in (builds if rnd % 2 == 0 else builds[::-1]):
                print(f"round {rnd + 1}/{a.rounds}: {b.name}  (load {load()})", flush=True)
                for k, v in measure(b, figures, a, work, trace).items():
                    runs[b.name].setdefault(k, []).append(v)
    for b in builds:
        for k, v in measure_once(b, figures, a, work).items():
            runs[b.name][k] = [v]
    labels = [b.name for b in builds]
    print(f"\n# {a.rounds} rounds, builds alternating; {cpu_model()}, {os.cpu_count()} CPUs; load average at end "
          f"{load()}; per build: median over rounds (best)")
    print(f"| figure | {labels[0]} | {labels[1]} | {labels[1]} / {labels[0]} (medians) |")
    print("|---|---:|---:|---:|")
    keys = list(runs[labels[0]]) + [k for k in runs[labels[1]] if k not in runs[labels[0]]]
    for k in keys:
        cells, meds = [], []
        for label in labels:
            v = runs[label].get(k)
            if v is None:
                cells.append("-")
                meds.append(None)
                continue
            med, best = statistics.median(v), (max(v) if k == WRITER_RATE else min(v))
            meds.append(med)
            cells.append(fmt(med) if len(v) == 1 else f"{fmt(med)} ({fmt(best)})")
        ratio = f"{meds[1] / meds[0]:.3f}" if None not in meds and meds[0] else "-"
        print(f"| {k} | {cells[0]} | {cells[1]} | {ratio} |")


if __name__ == "__main__":
    main()
