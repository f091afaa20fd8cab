#!/usr/bin/env python3
"""What recording Python's garbage collections costs per collection, beside
no callback and a hand-written Python gc callback, in one process.

    python bench/python/bench_gc.py [--rounds 9] [--calls 100000]

A collection of an empty young generation (``gc.collect(0)`` in a loop) is
the cheapest the interpreter does, so what a callback adds shows plainly;
a real collection walks its objects on top (tens of microseconds for a
young generation, 0.1-0.4 s for a full one of a process that imported
torch). With tracing on (DFTRACER_ENABLE=1, initialize_log), rounds
alternate the contents of ``gc.callbacks``:

  none        no callback: the interpreter's own cost per collection
  any C cb    ``operator.is_`` (a C function that does nothing): what any
              callback costs, the info dict CPython builds and two calls
  dftracer    ``_core.gc_callback``: each collection a recorded event
  python cb   a Python function taking perf_counter_ns at start and
              appending (generation, t0, t1) at stop: recording them by hand

Figures: ns of CPU time (thread_time_ns) and wall time per collection,
the best round of each; then each over "none". Tests never assert on them.
"""
import argparse
import gc
import operator
import os
import sys
import tempfile
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=100_000)
    a = p.parse_args()
    os.environ["DFTRACER_ENABLE"] = "1"
    from dftracer import _core
    from dftracer.python import dftracer, gc_events

    gc_events.uninstall()  # this process sets gc.callbacks itself, round by round
    spans, start = [], [0]

    def python_cb(phase, info):
        if phase == "start":
            start[0] = time.perf_counter_ns()
        else:
            spans.append((info["generation"], start[0], time.perf_counter_ns()))

    cases = {"none": None, "any C cb": operator.is_, "dftracer": _core.gc_callback, "python cb": python_cb}
    best = {k: (float("inf"), float("inf")) for k in cases}
    with tempfile.TemporaryDirectory(prefix="dftracer-bench-gc-") as d:
        log = dftracer.initialize_log(os.path.join(d, "bench"), None, -1)
        collect = gc.collect
        for _ in range(a.rounds):
            for name, cb in cases.items():
                gc.callbacks[:] = [] if cb is None else [cb]
                spans.clear()
                c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
                for _ in range(a.calls):
                    collect(0)
                c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
                gc.callbacks[:] = []
                cpu, wall = (c1 - c0) / a.calls, (w1 - w0) / a.calls
                best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
        stats = _core.stats()
        log.finalize()
    print(f"{a.calls:,} gc.collect(0) per round, {a.rounds} rounds alternated, best round; "
          f"load {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}")
    print(f"{'callback':10} {'cpu_ns':>8} {'wall_ns':>8} {'cpu over none':>14}")
    for name in cases:
        cpu, wall = best[name]
        print(f"{name:10} {cpu:8.1f} {wall:8.1f} {cpu - best['none'][0]:+14.1f}")
    print(f"dftracer over any C cb: {best['dftracer'][0] - best['any C cb'][0]:+.1f} ns CPU per collection "
          f"(the event itself); events dropped: {stats.get('dropped', 0) if isinstance(stats, dict) else 'n/a'}")


if __name__ == "__main__":
    main()
