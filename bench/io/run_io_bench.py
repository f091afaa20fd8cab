#!/usr/bin/env python3
"""Added cost per I/O call, ours (PRELOAD and FUNCTION) vs untraced vs
DFTracer's own preload library (the PyPI `dftracer` wheel), in one run.

    python3 bench/io/run_io_bench.py --build build [--rounds 5] [--calls 200000]
        [--dftracer-preload .venv-ref/lib/python3.11/site-packages/dftracer/lib64/libdftracer_preload.so]

Configurations run interleaved, round after round, each a fresh process
reading the same page-cached 1 MiB file under a traced DFTRACER_DATA_DIR;
the table gives medians over rounds: wall and thread-CPU ns per read() of
4 KiB and per open()+close() pair, and the cost added over untraced.

Two rows split what tracing adds: "untraced + idle thread" is the kernel's
cost of a second thread sharing the descriptor table (tracing starts a writer
thread; see io_call_bench.c), and "ours FUNCTION, untraced path" runs the
hooks with the file outside DFTRACER_DATA_DIR (the hook's dispatch alone).
"ours added" is ours minus "untraced + idle thread": what the hook and the
record cost in a program that already has a thread (any PyTorch program).
Last, bench_io_hook_parts times the parts of a traced read one by one.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def find_dftracer_preload():
    hits = glob.glob(os.path.join((os.environ.get("DFTRACER_REFERENCE_VENV") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv-ref")), "lib", "python3*", "site-packages", "dftracer", "lib*",
                                  "libdftracer_preload.so"))
    return hits[0] if hits else None


def run(binary, mode, data, calls, env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_") and k != "LD_PRELOAD"}
    full.update(env)
    out = subprocess.run([binary, mode, os.path.join(data, "file.bin"), str(calls)], env=full,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{mode} {env.get('LD_PRELOAD', '')}: exit {out.returncode}\n{out.stderr}")
    return {k: float(v) for k, v in (kv.split("=") for kv in out.stdout.split())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--dftracer-preload", default=find_dftracer_preload())
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench/io/bench_io_calls")
    ours = os.path.join(a.build, "src/capture/io/libdftracer_preload.so")
    work = tempfile.mkdtemp(prefix="io_bench_")
    try:
        data = os.path.join(work, "data")
        os.mkdir(data)
        with open(os.path.join(data, "file.bin"), "wb") as f:
            f.write(os.urandom(1 << 20))
        traces = os.path.join(work, "traces")
        os.mkdir(traces)
        traced = {"DFTRACER_ENABLE": "1", "DFTRACER_DATA_DIR": data}
        configs = [
            ("untraced", "plain", {}),
            ("untraced + idle thread", "thread", {}),
            ("ours FUNCTION, untraced path", "function",
             dict(traced, DFTRACER_DATA_DIR=os.path.join(work, "elsewhere"), DFTRACER_LOG_FILE=traces + "/u")),
            ("ours FUNCTION", "function", dict(traced, DFTRACER_LOG_FILE=traces + "/f")),
            ("ours PRELOAD", "plain", dict(traced, DFTRACER_INIT="PRELOAD", LD_PRELOAD=os.path.abspath(ours),
                                           DFTRACER_LOG_FILE=traces + "/p")),
        ]
        if a.dftracer_preload:
            configs.append(("DFTracer 2.2.0 PRELOAD", "plain",
                            dict(traced, DFTRACER_INIT="PRELOAD", LD_PRELOAD=a.dftracer_preload,
                                 DFTRACER_LOG_FILE=traces + "/d")))
        else:
            print("DFTracer's preload library not found (scripts/setup.sh installs it in .venv-ref): its row is left out")
        results = {name: [] for name, _, _ in configs}
        for _ in range(a.rounds):
            for name, mode, env in configs:
                results[name].append(run(binary, mode, data, a.calls, env))
                for f in glob.glob(traces + "/*"):  # keep the disk small between rounds
                    os.remove(f) if os.path.isfile(f) else shutil.rmtree(f)
        keys = ["read_wall_ns", "read_cpu_ns", "openclose_wall_ns", "openclose_cpu_ns"]
        med = {n: {k: statistics.median(r[k] for r in rs) for k in keys} for n, rs in results.items()}
        base = med["untraced"]
        print(f"{a.rounds} rounds x {a.calls} read() of 4 KiB + {a.calls // 4} open/close pairs; medians, ns")
        print(f"{'configuration':29} {'read wall':>10} {'read cpu':>9} {'+cpu':>7} {'open+close wall':>16} "
              f"{'open+close cpu':>15} {'+cpu':>7}")
        for n in results:
            m = med[n]
            print(f"{n:29} {m['read_wall_ns']:10.1f} {m['read_cpu_ns']:9.1f} {m['read_cpu_ns'] - base['read_cpu_ns']:7.1f} "
                  f"{m['openclose_wall_ns']:16.1f} {m['openclose_cpu_ns']:15.1f} "
                  f"{m['openclose_cpu_ns'] - base['openclose_cpu_ns']:7.1f}")
        threaded = med["untraced + idle thread"]
        for n in ("ours FUNCTION", "ours PRELOAD"):
            for call, k in (("read", "read_cpu_ns"), ("open+close", "openclose_cpu_ns")):
                print(f"{n} {call}: ours added {med[n][k] - threaded[k]:.1f} ns over untraced + idle thread "
                      f"(the thread itself: {threaded[k] - base[k]:.1f} ns)")
        if a.dftracer_preload:
            d = med["DFTracer 2.2.0 PRELOAD"]
            for n in ("ours FUNCTION", "ours PRELOAD"):
                for call, k in (("read", "read_cpu_ns"), ("open+close", "openclose_cpu_ns")):
                    theirs = d[k] - base[k]
                    mine = med[n][k] - base[k]
                    print(f"{n} {call}: added {mine:.1f} ns vs DFTracer {theirs:.1f} ns "
                          f"({mine / theirs:.2f}x of DFTracer's)" if theirs > 0 else f"{n} {call}: -")
        parts = os.path.join(a.build, "bench/io/bench_io_hook_parts")
        if os.path.exists(parts):
            env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=traces + "/parts")
            out = subprocess.run([parts, os.path.join(data, "file.bin"), str(a.calls), str(max(a.rounds, 3))],
                                 env=env, capture_output=True, text=True, timeout=600)
            print("\nparts of a traced read(), thread CPU, medians (hook_parts_bench.c):")
            print(out.stdout.rstrip() if out.returncode == 0 else f"failed: {out.stderr.strip()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
