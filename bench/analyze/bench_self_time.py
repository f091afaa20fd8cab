#!/usr/bin/env python3
"""What self-time accounting costs `summary`: this build's dftracer-analyze
against one built before it (the summary without self time), on the same
generated trace, in one run, interleaved round by round.

  python3 bench/analyze/bench_self_time.py --build build --previous OLD/dftracer-analyze \
      [--events 10000000] [--rounds 3] [--dir DIR]

Prints wall time, CPU time and peak RSS of each (median of the rounds) and the
overhead. Not a test: run it by hand; the target is at most +15 %.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_analyze import generated_trace, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="CMake build dir with dftracer-analyze and analyze_gen_trace")
    ap.add_argument("--previous", required=True, help="a dftracer-analyze built without self time")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dir", default=None, help="where the trace goes (default: BUILD/bench-analyze)")
    a = ap.parse_args()
    ours = os.path.join(a.build, "src/analyze/dftracer-analyze")
    prefix = generated_trace(a.build, a.events, a.dir)
    tools = {"previous summary (no self time)": a.previous, "summary with self time": ours}
    print(f"{a.events} events, {a.threads} reader threads, {a.rounds} rounds; {os.cpu_count()} CPUs; "
          f"load before: {os.getloadavg()[0]:.2f}")
    for f in (prefix + ".pfw", prefix + ".pfw.gz"):
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)  # page cache warm for both
        res = {name: [] for name in tools}
        for _ in range(a.rounds):
            for name, exe in tools.items():
                wall, cpu, rss, _ = timed([exe, "summary", "--no-progress", "--threads", str(a.threads), f])
                res[name].append((wall, cpu, rss))
        med = {}
        for name, rs in res.items():
            med[name] = tuple(statistics.median(r[i] for r in rs) for i in range(3))
            wall, cpu, rss = med[name]
            print(f"  {os.path.basename(f):<22} {name:<34} {wall:7.2f} s  {cpu:7.2f} cpu-s  {rss:7.0f} MiB  "
                  f"(walls: {', '.join(f'{r[0]:.2f}' for r in rs)})", flush=True)
        (pw, pc, _), (ow, oc, _) = med["previous summary (no self time)"], med["summary with self time"]
        print(f"  self-time overhead on {os.path.basename(f)}: wall {100 * (ow / pw - 1):+.1f} %, "
              f"CPU {100 * (oc / pc - 1):+.1f} %")


if __name__ == "__main__":
    main()
