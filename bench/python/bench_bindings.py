#!/usr/bin/env python3
"""Trivial-call cost: nanobind vs pybind11 vs the raw CPython API.

    python bench/python/bench_bindings.py [--build-dir /tmp/dft-binding-bench]

Builds bench/python/binding_overhead (three modules exposing the same three
functions: noop(), ticks() -> int, end(int, int, int)) and times each call,
interleaving the three so that they see the same machine load.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def best_ns(fn, n, repeats=1):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter_ns()
        fn()
        best = min(best, (time.perf_counter_ns() - t) / n)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="/tmp/dft-binding-bench")
    a = ap.parse_args()
    subprocess.run(["cmake", "-S", os.path.join(HERE, "binding_overhead"), "-B", a.build_dir,
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", a.build_dir, "-j2"], check=True, stdout=subprocess.DEVNULL)
    sys.path.insert(0, a.build_dir)
    import capi_calls
    import nb_calls
    import pb_calls

    n = 200_000
    rng = range(n)
    mods = {"CPython API": capi_calls, "nanobind": nb_calls, "pybind11": pb_calls}

    def loops(m):
        noop, ticks, end = m.noop, m.ticks, m.end

        def f_noop():
            for _ in rng:
                noop()

        def f_ticks():
            for _ in rng:
                ticks()

        def f_end():
            for _ in rng:
                end(7, 9, 123456789)

        return {"noop()": f_noop, "ticks() -> int": f_ticks, "end(int, int, int)": f_end}

    def f_loop():
        for _ in rng:
            pass

    cases = {name: loops(m) for name, m in mods.items()}
    best = {(name, c): float("inf") for name in mods for c in cases[name]}
    floor = float("inf")
    for _ in range(15):
        floor = min(floor, best_ns(f_loop, n))
        for name in mods:
            for c, fn in cases[name].items():
                best[(name, c)] = min(best[(name, c)], best_ns(fn, n))
    print(f"# ns per call minus the empty loop ({floor:.1f} ns), best of 15; load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'call':22s}" + "".join(f"{name:>14s}" for name in mods))
    for c in cases["nanobind"]:
        print(f"{c:22s}" + "".join(f"{best[(name, c)] - floor:14.1f}" for name in mods))


if __name__ == "__main__":
    main()
