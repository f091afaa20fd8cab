#!/usr/bin/env python3
"""The ordinary (interned, below DFTRACER_INTERN_CAP) recording paths of two
builds of this package, interleaved, so that a change to the bindings is
measured against the code before it under the same machine load.

    cp -r <site-packages>/dftracer /tmp/dft-before/   # before the change
    pip install --no-build-isolation --no-deps .       # after it
    python bench/python/bench_before_after.py --before /tmp/dft-before [--runs 5]

Each run of each side is a fresh interpreter (`--before` goes first on
PYTHONPATH for the "before" side); the sides alternate run by run. Figures
are ns per event: the best of 7 repeats of a loop minus the best of an
empty loop interleaved with it, best over runs; wall time (perf_counter_ns)
beside CPU time (thread_time_ns).
"""
import argparse
import json
import os
import subprocess
import sys

CASES = r"""
import json, os, shutil, sys, tempfile, time
from dftracer.python import dftracer, dft_fn
from dftracer.python.ai import ai

d = tempfile.mkdtemp()
log = dftracer.initialize_log(os.path.join(d, "t"), None, -1)
fn = dft_fn("c", "n")
N = 20000

@fn.log
def traced():
    pass

@ai.compute.forward
def ai_traced():
    pass

def with_region():
    for _ in range(N):
        with fn:
            pass

def traced_call():
    for _ in range(N):
        traced()

def ai_call():
    for _ in range(N):
        ai_traced()

def log_event_args():
    for i in range(N):
        log.log_event("step", "c", 1700000000000000, 1, {"file": "/data/x.bin", "k": i})

def with_update():
    for _ in range(N):
        with fn:
            fn.update(args={"file": "/data/x.bin"})

def empty():
    for _ in range(N):
        pass

cases = {"with dft_fn": with_region, "traced call": traced_call, "dft_ai decorated call": ai_call,
         "log_event, 2 args": log_event_args, "with + update(args)": with_update}
out = {}
for name, body in cases.items():
    bw = bc = ew = ec = float("inf")  # best of the case and of the empty loop, each on its own
    for _ in range(7):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        body()
        w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        empty()
        w2, c2 = time.perf_counter_ns(), time.thread_time_ns()
        bw, bc = min(bw, w1 - w0), min(bc, c1 - c0)
        ew, ec = min(ew, w2 - w1), min(ec, c2 - c1)
    out[name] = ((bw - ew) / N, (bc - ec) / N)
log.finalize()
shutil.rmtree(d)
print(json.dumps(out))
"""


def run_side(pythonpath):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["DFTRACER_ENABLE"] = "1"
    env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, "-c", CASES], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="directory holding the 'before' dftracer package")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    sides = {"before": a.before, "after": ""}
    best = {s: {} for s in sides}
    for _ in range(a.runs):
        for side, path in sides.items():
            for case, (w, c) in run_side(path).items():
                bw, bc = best[side].get(case, (float("inf"), float("inf")))
                best[side][case] = (min(bw, w), min(bc, c))
    print(f"{'ns per event':24s} {'before wall':>11s} {'before cpu':>10s} {'after wall':>10s} {'after cpu':>9s}")
    for case in best["before"]:
        (bw, bc), (aw, ac) = best["before"][case], best["after"][case]
        print(f"{case:24s} {bw:11.0f} {bc:10.0f} {aw:10.0f} {ac:9.0f}")


if __name__ == "__main__":
    main()
