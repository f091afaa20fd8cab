#!/usr/bin/env python3
"""What a short traced process costs under the preload library: CPU per
`cat <file>` run untraced, traced and with the library loaded but tracing
off, for one or more builds of the library, alternated round by round.

    python3 bench/io/bench_proc_start.py --lib new=build/src/capture/io/libdftracer_preload.so
        [--lib old=OTHER_BUILD/src/capture/io/libdftracer_preload.so] [--procs 100] [--rounds 7]
        [--instructions]

Each round runs `--procs` processes per configuration, one after another,
in a fresh directory (the traced file under DFTRACER_DATA_DIR, the traces
beside it); CPU = user + system of each process from wait4. The table gives
the median and range over the rounds of the CPU and wall time per process.
--instructions adds, per configuration, the instructions of one process
under callgrind (valgrind; the same at any load; threads included).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TRACED = {"DFTRACER_ENABLE": "1", "DFTRACER_INIT": "PRELOAD"}


def base_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_") and k != "LD_PRELOAD"}


def fresh(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "d"))
    os.makedirs(os.path.join(work, "t"))
    with open(os.path.join(work, "d", "f"), "w") as f:
        f.write("data\n")
    return dict(DFTRACER_DATA_DIR=os.path.join(work, "d"), DFTRACER_LOG_FILE=os.path.join(work, "t", "x"))


def run_round(work, procs, env):
    """(CPU ms, wall ms) per process."""
    env = dict(env, **fresh(work))
    cpu = 0.0
    t0 = time.monotonic()
    for _ in range(procs):
        p = subprocess.Popen(["cat", "d/f"], cwd=work, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"cat failed under {env.get('LD_PRELOAD', 'no preload')}")
        cpu += usage.ru_utime + usage.ru_stime
    return cpu / procs * 1e3, (time.monotonic() - t0) / procs * 1e3


def instructions(work, env):
    env = dict(env, **fresh(work))
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "cat", "d/f"], cwd=work,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    m = re.search(r"Collected\s*:\s*([\d,]+)", out)
    return int(m.group(1).replace(",", "")) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", action="append", required=True, help="name=path of a libdftracer_preload.so")
    ap.add_argument("--procs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--instructions", action="store_true")
    a = ap.parse_args()
    configs = [("untraced", base_env())]
    for spec in a.lib:
        name, _, path = spec.partition("=")
        path = os.path.abspath(path)
        if not os.path.exists(path):
            sys.exit(f"{path}: not found")
        configs.append((f"{name} traced", dict(base_env(), LD_PRELOAD=path, **TRACED)))
        configs.append((f"{name} loaded, off", dict(base_env(), LD_PRELOAD=path)))
    top = tempfile.mkdtemp(prefix="proc_start_")
    cpu = {n: [] for n, _ in configs}
    wall = {n: [] for n, _ in configs}
    instr = {}
    try:
        work = os.path.join(top, "w")
        for _ in range(a.rounds):
            for name, env in configs:
                c, w = run_round(work, a.procs, env)
                cpu[name].append(c)
                wall[name].append(w)
        if a.instructions:
            for name, env in configs:
                instr[name] = instructions(work, env)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"{a.procs} processes x {a.rounds} alternated rounds; load average {os.getloadavg()[0]:.2f}; "
          f"ms per process, median [range]")
    head = f"{'run':<24} {'CPU ms':>8} {'CPU range':>15} {'wall ms':>8}"
    print(head + (f" {'instructions':>13}" if instr else ""))
    for name, _ in configs:
        c, w = cpu[name], wall[name]
        line = f"{name:<24} {statistics.median(c):>8.3f} {min(c):>7.3f}-{max(c):<7.3f} {statistics.median(w):>8.3f}"
        if instr:
            line += f" {instr[name]:>13,}" if instr[name] else f" {'-':>13}"
        print(line)


if __name__ == "__main__":
    main()
