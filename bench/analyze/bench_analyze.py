#!/usr/bin/env python3
"""Analyzer benchmark: our reader vs Python json+pandas (and dftracer-utils'
dftracer_stats when installed) on the same generated trace, .pfw and .pfw.gz.

  python3 bench/analyze/bench_analyze.py --build build-analyze [--events 10000000] [--dir DIR]

Prints one table: wall time, CPU time, peak RSS, events/s and MB/s of
uncompressed JSON for each tool and file. Not a test: run it by hand.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd):
    """Runs cmd; returns (wall s, cpu s, peak RSS MiB, stdout)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = "", ""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out = p.stdout.read()
    err = p.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed: {err.strip()[-500:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out


def generated_trace(build, events, directory=None):
    """The prefix of the generated trace (PREFIX.pfw, PREFIX.pfw.gz + .idx), made once."""
    d = directory or os.path.join(build, "bench-analyze")
    os.makedirs(d, exist_ok=True)
    prefix = os.path.join(d, f"trace{events}")
    if not os.path.exists(prefix + ".pfw.gz.idx"):
        print(f"generating {events} events into {prefix}.pfw[.gz] ...", flush=True)
        subprocess.run([os.path.join(build, "bench/analyze/analyze_gen_trace"), prefix, str(events)], check=True)
    return prefix


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="CMake build dir with dftracer-analyze and analyze_gen_trace")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--dir", default=None, help="where the trace goes (default: BUILD/bench-analyze)")
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    analyzer = os.path.join(a.build, "src/analyze/dftracer-analyze")
    prefix = generated_trace(a.build, a.events, a.dir)
    d = os.path.dirname(prefix)
    pfw, gz = prefix + ".pfw", prefix + ".pfw.gz"
    json_bytes = os.path.getsize(pfw)
    print(f"trace: {a.events} events, {json_bytes / 1e9:.2f} GB JSON ({json_bytes / a.events:.0f} B/event), "
          f"{os.path.getsize(gz) / 1e9:.2f} GB gzip; {os.cpu_count()} CPUs; load before: {os.getloadavg()[0]:.2f}")
    rows = []

    def run(tool, f, cmd):
        # Page cache warm for every tool alike: read the file once first.
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
        wall, cpu, rss, _ = timed(cmd)
        rows.append((tool, os.path.basename(f), wall, cpu, rss))
        print(f"  {tool:<34} {os.path.basename(f):<24} {wall:8.2f} s  {cpu:8.2f} cpu-s  {rss:8.0f} MiB  "
              f"{a.events / wall / 1e6:7.2f} M ev/s  {json_bytes / wall / 1e6:8.0f} MB/s", flush=True)

    for f in (pfw, gz):
        run("dftracer-analyze (2 threads)", f, [analyzer, "summary", "--no-progress", "--threads", "2", f])
        run("dftracer-analyze (1 thread)", f, [analyzer, "summary", "--no-progress", "--threads", "1", f])
    # dftracer-utils installs in a throwaway venv: point DFTRACER_STATS at its dftracer_stats.
    stats = os.environ.get("DFTRACER_STATS") or shutil.which("dftracer_stats")
    if stats:
        for f in (pfw, gz):
            idx = os.path.join(d, "dftindex")
            shutil.rmtree(idx, ignore_errors=True)
            os.makedirs(idx)
            run("dftracer_stats (index+query)", f, [stats, "--files", f, "--group-by", "name", "--json",
                                                   "--index-dir", idx, "--executor-threads", "2", "--io-threads", "2"])
            run("dftracer_stats (indexed)", f, [stats, "--files", f, "--group-by", "name", "--json",
                                               "--index-dir", idx, "--executor-threads", "2", "--io-threads", "2"])
    if not a.skip_baseline:
        for f in (pfw, gz):
            run("python json + pandas", f, [sys.executable, os.path.join(HERE, "baseline_pandas.py"), f])
    base = {r[1]: r[2] for r in rows if r[0] == "python json + pandas"}
    ours = {r[1]: r[2] for r in rows if r[0] == "dftracer-analyze (2 threads)"}
    for f in base:
        print(f"speed-up over json+pandas on {f}: {base[f] / ours[f]:.1f}x")


if __name__ == "__main__":
    main()
