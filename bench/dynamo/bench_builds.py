"""Two installed builds' compile-capture costs, side by side, in one run.

    python3 bench/dynamo/bench_builds.py --build old=/work/venv-old/bin/python@4f9f238 \\
        --build new=/work/venv-lead/bin/python [--hook-runs 4] [--hook-rounds 5] [--nodes 1000] \\
        [--inductor-runs 1] [--inductor-args "--models small --threads 1 --modes inference ..."]

Each --build is NAME=PYTHON[@REV]: a Python with that build's dftracer
installed, and the git revision whose bench/dynamo scripts it runs (each
build runs its OWN scripts, so a build whose package layout differs still
runs; no @REV: this tree's scripts). A revision's scripts are taken with
`git archive` into a temporary directory.

  hook      bench_hook.py --nodes N --rounds R, run --hook-runs times per
            build, the builds alternated run by run (the first build goes
            first in even runs, last in odd ones): the per-node cost of the
            capture backend's mark (calling-thread CPU ns per node over the
            plain graph; best and median over the runs)
  inductor  bench_inductor.py with --inductor-args, --inductor-runs times
            per build, alternated the same way: per model and mode, the
            traced step's thread-CPU ratio to plain Inductor's, beside the
            A/A control's (inductor-again), and the per-kernel cost

Prints the CPU model and the load average at start and end. Not a test.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HOOK_LINE = re.compile(r"plain (-?\d+) ns/node \| hook (-?\d+) ns/node .*\(calling-thread CPU\)")


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


def scripts_of(rev, work):
    """bench/dynamo of `rev` (None: this tree's)."""
    if rev is None:
        return HERE
    out = os.path.join(work, rev)
    if not os.path.isdir(out):
        os.makedirs(out)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "bench/dynamo"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return os.path.join(out, "bench", "dynamo")


def run(py, script, args, work):
    # TMPDIR: the traces the scripts leave go with the work directory.
    r = subprocess.run([py, script, *args], capture_output=True, text=True, env={**os.environ, "TMPDIR": work})
    if r.returncode != 0:
        sys.exit(f"{py} {script} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return r.stdout


def alternated(builds, runs):
    for i in range(runs):
        yield from (builds if i % 2 == 0 else builds[::-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", action="append", required=True, metavar="NAME=PYTHON[@REV]")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--hook-runs", type=int, default=4)
    p.add_argument("--hook-rounds", type=int, default=5, help="bench_hook.py --rounds, per run")
    p.add_argument("--inductor-runs", type=int, default=1)
    p.add_argument("--inductor-args", default="--models small --threads 1 --modes inference --rounds 5 --iters 2 "
                   "--variants inductor")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="dft-builds-")
    builds = []
    for spec in a.build:
        name, _, rest = spec.partition("=")
        py, _, rev = rest.partition("@")
        builds.append((name, py, scripts_of(rev or None, work)))
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; load average at start {load()}", flush=True)

    hook = {name: [] for name, _, _ in builds}
    if a.hook_runs:
        for name, py, scripts in alternated(builds, a.hook_runs):
            out = run(py, os.path.join(scripts, "bench_hook.py"),
                      ["--nodes", str(a.nodes), "--rounds", str(a.hook_rounds)], work)
            m = HOOK_LINE.search(out)
            if m is None:
                sys.exit(f"{name}: no calling-thread CPU line in bench_hook.py's output:\n{out}")
            hook[name].append(int(m.group(2)))
            print(f"  hook run, {name}: {m.group(2)} ns/node (plain graph {m.group(1)} ns/node)", flush=True)
        print(f"\nper-node mark cost (bench_hook.py --nodes {a.nodes} --rounds {a.hook_rounds}, "
              f"{a.hook_runs} runs each, calling-thread CPU ns/node over the plain graph):")
        for name, v in hook.items():
            print(f"  {name:10s} best {min(v)}  median {statistics.median(v):.0f}  runs {v}")

    ind = {name: [] for name, _, _ in builds}
    for name, py, scripts in alternated(builds, a.inductor_runs):
        js = os.path.join(work, f"inductor-{name}-{len(ind[name])}.json")
        run(py, os.path.join(scripts, "bench_inductor.py"), [*shlex.split(a.inductor_args), "--json", js], work)
        with open(js) as f:
            ind[name].append(json.load(f))
        print(f"  inductor run, {name}: done (load {load()})", flush=True)
    if a.inductor_runs:
        print(f"\nInductor whole step (bench_inductor.py {a.inductor_args}), median over runs; thread CPU "
              f"ratio to plain Inductor (x), the A/A control's, per-kernel thread CPU ns:")
        for name, results in ind.items():
            for k, r in enumerate(results[0]):
                rs = [res[k] for res in results]
                med = lambda f: statistics.median(f(x) for x in rs)  # noqa: E731
                print(f"  {name:10s} {r['model']} {r['mode']}: dftracer x "
                      f"{med(lambda x: x['variants']['dftracer']['thread_cpu_ratio']):.3f}, inductor-again x "
                      f"{med(lambda x: x['variants']['inductor-again']['thread_cpu_ratio']):.3f}, "
                      f"{med(lambda x: x['per_kernel_thread_cpu_ns']):.0f} ns/kernel "
                      f"({r['kernels_per_step']} kernels/step; inductor "
                      f"{med(lambda x: x['variants']['inductor']['thread_cpu_ms']):.2f} ms thread CPU/step)")
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at end {load()}")


if __name__ == "__main__":
    main()
