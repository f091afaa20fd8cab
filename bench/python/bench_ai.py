#!/usr/bin/env python3
"""dft_ai cost per event, ours beside pydftracer's, in one run.

    python bench/python/bench_ai.py [--side-python .venv-ref/bin/python]

Cases: ``with ai.compute.forward:`` (context manager) and a call of a
function decorated ``@ai.compute.forward`` (decorator), each with tracing on
(DFTRACER_ENABLE=1, initialize_log) and off. Each column runs in a fresh
interpreter (tracing state is per process): ours with this interpreter,
pydftracer's with the side interpreter (a venv with `pydftracer dftracer`
from PyPI; it imports as `dftracer` too, hence the separate venv). Figures
are ns per event: the best of several runs of a loop minus the matching floor
(empty loop / call of an undecorated function) measured interleaved with it;
wall time from perf_counter_ns, CPU time from thread_time_ns beside it.
Target: ours traced <= 150 ns and <= 1/10 of pydftracer's.

    python bench/python/bench_ai.py --processes 12

prints instead the spread of ours over that many fresh processes (traced
and off alternating), min / median / max per case: a figure that moves from
one process to the next (per-process address layout, the VM's scheduling)
shows up there, where one run shows only one draw. With --placement, the
traced processes also run with the writer thread pinned to the calling
thread's CPU ("same") and to another CPU ("apart"): the writer formats and
compresses every event (about as much CPU per event as recording it, see
the "process cpu" rows), so where the scheduler puts it moves the calling
thread's figures, wall time most.
"""
import statistics
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

N = 50_000
REPEATS = 11


def best(fn, clock, n):
    t = clock()
    fn()
    return (clock() - t) / n


def net(case, floor, n=N, repeats=REPEATS):
    """(wall, cpu) ns per iteration: min(case) - min(floor), interleaved so
    both see the same load (the machine is shared)."""
    res = {}
    for name, clock in (("wall", time.perf_counter_ns), ("cpu", time.thread_time_ns),
                        ("process cpu", time.process_time_ns)):
        bc = bf = float("inf")
        for _ in range(repeats):
            bf = min(bf, best(floor, clock, n))
            bc = min(bc, best(case, clock, n))
        res[name] = bc - bf
    return res


def pin_writer(placement):
    """Pins this thread and the core's writer thread: "same" CPU or "apart"."""
    import threading
    cpus = sorted(os.sched_getaffinity(0))
    if placement == "apart" and len(cpus) < 2:
        sys.exit("--placement apart needs two CPUs")
    writer = [int(t) for t in os.listdir("/proc/self/task")
              if open(f"/proc/self/task/{t}/comm").read().strip() == "dftracer-writer"]
    if not writer:
        sys.exit("no dftracer-writer thread to pin")
    os.sched_setaffinity(threading.get_native_id(), {cpus[-1]})
    os.sched_setaffinity(writer[0], {cpus[-1] if placement == "same" else cpus[0]})


def worker(trace_dir, traced, placement=None):
    from dftracer.python import dftracer
    from dftracer.python.ai import ai

    log = dftracer.initialize_log(os.path.join(trace_dir, "bench.pfw"), None, -1) if traced else None
    if placement:
        pin_writer(placement)
    node = ai.compute.forward
    rng = range(N)

    def plain():
        pass

    decorated = node(plain)

    def loop():
        for _ in rng:
            pass

    def calls():
        for _ in rng:
            plain()

    def ctx():
        for _ in rng:
            with node:
                pass

    def deco():
        for _ in rng:
            decorated()

    out = {"with ai.compute.forward": net(ctx, loop), "@ai.compute.forward call": net(deco, calls)}
    if log is not None:
        log.finalize()
    print(json.dumps(out))


def run_column(python, traced, td, placement=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["DFTRACER_ENABLE"] = "1" if traced else "0"
    env["PYTHONPATH"] = ""
    cmd = [python, os.path.abspath(__file__), "--worker", "on" if traced else "off", "--trace-dir", td]
    p = subprocess.run(cmd + (["--pin", placement] if placement else []), env=env, capture_output=True,
                       text=True, cwd=td)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def spread(processes, placements):
    """Ours only, `processes` fresh interpreters per configuration, interleaved."""
    configs = [("traced", True, None)] + [(f"traced, writer {p}", True, p) for p in placements] + [("off", False, None)]
    runs = {label: [] for label, _, _ in configs}
    with tempfile.TemporaryDirectory() as td:
        for _ in range(processes):
            for label, traced, placement in configs:
                res = run_column(sys.executable, traced, td, placement)
                if "error" in res:
                    sys.exit(f"worker failed ({label}): {res['error']}")
                runs[label].append(res)
                for f in os.listdir(td):
                    os.remove(os.path.join(td, f))
    load = os.getloadavg()[0]
    print(f"# dft_ai, ours: ns per event over {processes} fresh processes per configuration (best of {REPEATS} x {N} "
          f"minus the floor in each); {os.cpu_count()} CPUs, load {load:.1f}")
    print("# cpu: the calling thread's; process cpu: all threads (the writer's backlog can spill into the floor)")
    print(f"{'case':28s} {'configuration':22s} {'clock':11s} {'min':>7s} {'median':>7s} {'max':>7s}  per process")
    for label, _, _ in configs:
        for case in ("with ai.compute.forward", "@ai.compute.forward call"):
            for clock in ("wall", "cpu", "process cpu"):
                v = [r[case][clock] for r in runs[label]]
                print(f"{case:28s} {label:22s} {clock:11s} {min(v):7.1f} "
                      f"{statistics.median(v):7.1f} {max(v):7.1f}  {' '.join(f'{x:.0f}' for x in v)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side-python", default=os.path.join((os.environ.get("DFTRACER_REFERENCE_VENV") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv-ref")), "bin", "python"),
                    help="interpreter with pydftracer + dftracer from PyPI")
    ap.add_argument("--worker", choices=("on", "off"))
    ap.add_argument("--trace-dir")
    ap.add_argument("--processes", type=int, default=0,
                    help="spread of ours over this many fresh processes instead of the table")
    ap.add_argument("--placement", action="store_true",
                    help="with --processes: also pin the writer to the calling thread's CPU and to another")
    ap.add_argument("--pin", choices=("same", "apart"), help=argparse.SUPPRESS)  # a worker's placement
    a = ap.parse_args()
    if a.worker:
        worker(a.trace_dir, a.worker == "on", a.pin)
        return
    if a.processes:
        spread(a.processes, ("same", "apart") if a.placement else ())
        return
    cols = {}
    with tempfile.TemporaryDirectory() as td:
        for traced in (True, False):
            state = "traced" if traced else "off"
            cols[f"ours {state}"] = run_column(sys.executable, traced, td)
            cols[f"pydftracer {state}"] = (run_column(a.side_python, traced, td) if os.path.exists(a.side_python)
                                           else {"error": f"{a.side_python} not found"})
    load = os.getloadavg()[0]
    print(f"# dft_ai: ns per event (wall / CPU), best of {REPEATS} x {N} minus the floor, interleaved; "
          f"{os.cpu_count()} CPUs, load {load:.1f}")
    cases = ("with ai.compute.forward", "@ai.compute.forward call")
    print(f"{'case':28s} {'state':7s} {'ours wall':>10s} {'ours cpu':>9s} {'pydft wall':>11s} {'pydft cpu':>10s} "
          f"{'ours/pydft':>10s}")
    for state in ("traced", "off"):
        ours, ref = cols[f"ours {state}"], cols[f"pydftracer {state}"]
        for case in cases:
            o = ours.get(case, {"wall": float("nan"), "cpu": float("nan")})
            r = ref.get(case, {"wall": float("nan"), "cpu": float("nan")})
            ratio = o["wall"] / r["wall"] if r["wall"] and r["wall"] == r["wall"] else float("nan")
            print(f"{case:28s} {state:7s} {o['wall']:10.1f} {o['cpu']:9.1f} {r['wall']:11.1f} {r['cpu']:10.1f} "
                  f"{ratio:10.3f}")
    for label, res in cols.items():
        if "error" in res:
            print(f"# {label}: not measured: {res['error']}")


if __name__ == "__main__":
    main()
