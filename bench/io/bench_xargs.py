#!/usr/bin/env python3
"""What tracing costs a shell pipeline of short-lived processes: 200
`xargs -P8 sh -c` jobs, untraced, under our preload library and under
DFTracer's own (the PyPI `dftracer` wheel), in one run.

    python3 bench/io/bench_xargs.py --build build [--rounds 5] [--jobs 200]
        [--dftracer-preload .venv-ref/lib/python3.11/site-packages/dftracer/lib64/libdftracer_preload.so]
        [--previous OTHER_BUILD/src/capture/io/libdftracer_preload.so]

Every job is a fork+exec of `sh` whose redirection and `cat` are traced I/O
(under DFTRACER_DATA_DIR):

    seq 200 | xargs -P8 -I{} sh -c 'echo "$1" > d/f$1; cat d/f$1 > /dev/null' sh {}

Configurations run interleaved, round after round, each in a fresh
directory; the table gives per configuration the median and range of the
wall time and of the CPU time (user + system of xargs and every process
under it, from wait4), and the trace files left by the last round.
"""
import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

JOB = 'echo "$1" > d/f$1; cat d/f$1 > /dev/null'


def find_dftracer_preload():
    venv = os.environ.get("DFTRACER_REFERENCE_VENV") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "..", "..", ".venv-ref")
    hits = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "dftracer", "lib*",
                                  "libdftracer_preload.so"))
    return hits[0] if hits else None


def run_once(work, jobs, env):
    """(wall s, CPU s) of one xargs run in a fresh directory under `work`."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "d"))
    os.makedirs(os.path.join(work, "t"))
    full = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_") and k != "LD_PRELOAD"}
    full.update({k: v.replace("@WORK@", work) for k, v in env.items()})
    seq = "\n".join(str(i) for i in range(1, jobs + 1)) + "\n"
    t0 = time.monotonic()
    p = subprocess.Popen(["xargs", "-P8", "-I{}", "sh", "-c", JOB, "sh", "{}"], cwd=work, env=full,
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(seq.encode())
    p.stdin.close()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0 or err:
        sys.exit(f"{env.get('LD_PRELOAD', 'untraced')}: exit {p.returncode}\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--dftracer-preload", default=find_dftracer_preload())
    ap.add_argument("--previous", help="another build's libdftracer_preload.so, as an extra row")
    a = ap.parse_args()
    ours = os.path.abspath(os.path.join(a.build, "src/capture/io/libdftracer_preload.so"))
    if not os.path.exists(ours):
        sys.exit(f"{ours}: not found (build the dftracer_preload target)")
    traced = {"DFTRACER_ENABLE": "1", "DFTRACER_INIT": "PRELOAD", "DFTRACER_DATA_DIR": "@WORK@/d",
              "DFTRACER_LOG_FILE": "@WORK@/t/x"}
    configs = [("untraced", {}), ("ours PRELOAD", dict(traced, LD_PRELOAD=ours))]
    if a.previous:
        configs.append(("ours, --previous", dict(traced, LD_PRELOAD=os.path.abspath(a.previous))))
    if a.dftracer_preload:
        configs.append(("DFTracer PRELOAD", dict(traced, LD_PRELOAD=os.path.abspath(a.dftracer_preload))))
    else:
        print("DFTracer's preload library not found (scripts/setup.sh installs it in .venv-ref): its row is left out")
    top = tempfile.mkdtemp(prefix="xargs_bench_")
    results = {name: [] for name, _ in configs}
    files = {}
    try:
        for _ in range(a.rounds):
            for name, env in configs:
                work = os.path.join(top, "w")
                results[name].append(run_once(work, a.jobs, env))
                traces = [t for t in os.listdir(os.path.join(work, "t")) if not t.endswith(".idx")]
                empty = sum(1 for t in traces if os.path.getsize(os.path.join(work, "t", t)) == 0)
                files[name] = (len(traces), empty)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"{a.jobs} jobs, xargs -P8, {a.rounds} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    print(f"{'run':<20} {'wall median s':>14} {'wall range s':>14} {'CPU median s':>13} {'CPU range s':>13} "
          f"{'trace files':>12} {'empty':>6}")
    for name, _ in configs:
        w = [r[0] for r in results[name]]
        c = [r[1] for r in results[name]]
        n, empty = files[name]
        print(f"{name:<20} {statistics.median(w):>14.2f} {min(w):>6.2f}-{max(w):<7.2f} {statistics.median(c):>13.2f} "
              f"{min(c):>6.2f}-{max(c):<6.2f} {n:>12} {empty:>6}")


if __name__ == "__main__":
    main()
