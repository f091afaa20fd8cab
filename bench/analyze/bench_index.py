#!/usr/bin/env python3
"""The write-time index's headline figure: `dftracer-analyze summary` over many
small finalized traces written by the real writer, answered from the indexes
(nothing inflated) vs the same command with --no-index (every member read),
wall and CPU, in one run with alternating order.

  python3 bench/analyze/bench_index.py --build build [--files 1000] [--events 1000] [--rounds 3]

Target: the index-only summary of 1,000 finalized files under 1 s.
Not a test: run it by hand and quote the machine's load with the figures.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_analyze import timed  # noqa: E402  (wall, cpu, peak RSS, stdout of one command)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the CMake build directory")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--events", type=int, default=1000, help="events per file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    gen = os.path.join(args.build, "bench", "analyze", "analyze_gen_indexed_traces")
    exe = os.path.join(args.build, "src", "analyze", "dftracer-analyze")
    d = tempfile.mkdtemp(prefix="dft-bench-index-")
    try:
        env = dict(os.environ, DFTRACER_LOG_LEVEL="error")
        subprocess.run([gen, d, str(args.files), str(args.events)], check=True, env=env)
        traces = [f for f in os.listdir(d) if f.endswith(".pfw.gz")]
        size = sum(os.path.getsize(os.path.join(d, f)) for f in traces)
        idx = sum(os.path.getsize(os.path.join(d, f + ".idx")) for f in traces)
        print(f"{len(traces)} files, {args.events} events each, {size / 1e6:.1f} MB of .pfw.gz, "
              f"{idx / 1e6:.1f} MB of .idx; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        base = [exe, "summary", "--format", "json", "--no-progress", "--threads", str(args.threads), d]
        best = {}
        results = {}
        for r in range(args.rounds):
            order = ["index", "no-index"] if r % 2 == 0 else ["no-index", "index"]
            for mode in order:
                cmd = base + (["--no-index"] if mode == "no-index" else [])
                wall, cpu, rss, out = timed(cmd)
                doc = json.loads(out)
                assert doc["index"] == (mode == "index"), "the index was not used" if mode == "index" else "?"
                results[mode] = doc
                print(f"round {r} {mode:9s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  rss {rss:6.1f} MiB")
                w, c = best.get(mode, (1e30, 1e30))
                best[mode] = (min(w, wall), min(c, cpu))
        same = results["index"]["rows"] == results["no-index"]["rows"]
        print(f"best: index {best['index'][0]:.3f} s wall / {best['index'][1]:.3f} s CPU; "
              f"no-index {best['no-index'][0]:.3f} s wall / {best['no-index'][1]:.3f} s CPU; "
              f"{best['no-index'][0] / best['index'][0]:.1f}x; rows identical: {same}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
