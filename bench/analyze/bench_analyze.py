#!/usr/bin/env python3
"""Analyzer benchmark: our reader vs Python json+pandas (and dftracer-utils'
dftracer_stats when installed) on the same generated trace, .pfw and .pfw.gz.

  python3 bench/analyze/bench_analyze.py --build build-analyze [--events 10000000] [--dir DIR]
      [--previous OTHER/dftracer-analyze] [--repeat 3] [--gen PATH/analyze_gen_trace]

Prints one table: wall time, CPU time (user + system), peak RSS, events/s,
MB/s of uncompressed JSON, and MB per CPU-second for each tool and file. With
--previous, another build's analyzer runs the same commands, interleaved with
ours (A, B, A, B, ...) so that load from elsewhere falls on both alike; each
row is the median of --repeat runs. Not a test: run it by hand.
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


def generated_trace(build, events, directory=None, gen=None):
    """The prefix of the generated trace (PREFIX.pfw, PREFIX.pfw.gz + .idx), made once."""
    d = directory or os.path.join(build, "bench-analyze")
    os.makedirs(d, exist_ok=True)
    prefix = os.path.join(d, f"trace{events}")
    if not os.path.exists(prefix + ".pfw.gz.idx"):
        print(f"generating {events} events into {prefix}.pfw[.gz] ...", flush=True)
        gen = gen or os.path.join(build, "bench/analyze/analyze_gen_trace")
        subprocess.run([gen, prefix, str(events)], check=True)
    return prefix


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="CMake build dir with dftracer-analyze (and analyze_gen_trace)")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--dir", default=None, help="where the trace goes (default: BUILD/bench-analyze)")
    ap.add_argument("--gen", default=None, help="the trace generator (default: BUILD/bench/analyze/analyze_gen_trace)")
    ap.add_argument("--previous", default=None, help="another dftracer-analyze to compare with, run interleaved")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (the median is shown)")
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    analyzer = os.path.join(a.build, "src/analyze/dftracer-analyze")
    prefix = generated_trace(a.build, a.events, a.dir, a.gen)
    d = os.path.dirname(prefix)
    pfw, gz = prefix + ".pfw", prefix + ".pfw.gz"
    json_bytes = os.path.getsize(pfw)
    print(f"trace: {a.events} events, {json_bytes / 1e9:.2f} GB JSON ({json_bytes / a.events:.0f} B/event), "
          f"{os.path.getsize(gz) / 1e9:.2f} GB gzip; {os.cpu_count()} CPUs; load before: {os.getloadavg()[0]:.2f}")
    rows = []

    def show(tool, f, wall, cpu, rss):
        rows.append((tool, os.path.basename(f), wall, cpu, rss))
        print(f"  {tool:<34} {os.path.basename(f):<24} {wall:8.2f} s  {cpu:8.2f} cpu-s  {rss:8.0f} MiB  "
              f"{a.events / wall / 1e6:7.2f} M ev/s  {json_bytes / wall / 1e6:8.0f} MB/s  "
              f"{json_bytes / cpu / 1e6:8.0f} MB/cpu-s", flush=True)

    def measure(cmds):
        """cmds: [(tool, file, argv)]; runs them round-robin --repeat times, shows medians."""
        got = {i: [] for i in range(len(cmds))}
        for _ in range(max(a.repeat, 1)):
            for i, (_, f, cmd) in enumerate(cmds):
                # Page cache warm for every tool alike: read the file once first.
                subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
                got[i].append(timed(cmd)[:3])
        for i, (tool, f, _) in enumerate(cmds):
            runs = got[i]
            show(tool, f, median([r[0] for r in runs]), median([r[1] for r in runs]), max(r[2] for r in runs))

    for f in (pfw, gz):
        for threads in ("2", "1"):
            cmds = [(f"dftracer-analyze ({threads} thread{'s' if threads == '2' else ''})", f,
                     [analyzer, "summary", "--no-progress", "--threads", threads, f])]
            if a.previous:
                cmds.append((f"previous ({threads} thread{'s' if threads == '2' else ''})", f,
                             [a.previous, "summary", "--no-progress", "--threads", threads, f]))
            measure(cmds)
    # dftracer-utils installs in a throwaway venv: point DFTRACER_STATS at its dftracer_stats.
    stats = os.environ.get("DFTRACER_STATS") or shutil.which("dftracer_stats")
    if stats:
        for f in (pfw, gz):
            idx = os.path.join(d, "dftindex")
            shutil.rmtree(idx, ignore_errors=True)
            os.makedirs(idx)
            subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
            show("dftracer_stats (index+query)", f, *timed([stats, "--files", f, "--group-by", "name", "--json",
                                                            "--index-dir", idx, "--executor-threads", "2",
                                                            "--io-threads", "2"])[:3])
            show("dftracer_stats (indexed)", f, *timed([stats, "--files", f, "--group-by", "name", "--json",
                                                        "--index-dir", idx, "--executor-threads", "2",
                                                        "--io-threads", "2"])[:3])
    if not a.skip_baseline:
        for f in (pfw, gz):
            subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
            show("python json + pandas", f,
                 *timed([sys.executable, os.path.join(HERE, "baseline_pandas.py"), f])[:3])
    base = {r[1]: r for r in rows if r[0] == "python json + pandas"}
    for tool in ("dftracer-analyze (2 threads)", "previous (2 threads)"):
        mine = {r[1]: r for r in rows if r[0] == tool}
        for f in base:
            if f in mine:
                print(f"{tool} over json+pandas on {f}: {base[f][2] / mine[f][2]:.1f}x wall, "
                      f"{base[f][3] / mine[f][3]:.1f}x CPU")
    load = os.getloadavg()[0]
    print(f"load after: {load:.2f}")


if __name__ == "__main__":
    main()
