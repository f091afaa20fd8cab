"""Cost of the device analysis's steps in a dftracer trace: one process's
training loop with no ProfilerStep range (ops, a launch call in each, its
kernel on the process's GPU track, optimizer steps ending the steps),
written to a temp file; then `device --format json` (the step finder fed by
the timeline's read) and `summary --by step` (its own two reads) are timed
side by side, CPU time (user + sys of the child) and wall, best of N.

    python3 bench/analyze/bench_device_steps.py [STEPS] [--bin A] [--other-bin B] [--repeat N]

--other-bin: a second build's analyzer, timed on the same file in the same
run (a build before the change: the device command without steps)."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PID, OPS = 4242, 40


def write_trace(path, steps):
    gpu = 0x40000000 | PID << 8
    corr = 0
    with open(path, "w") as f:
        f.write("[\n")
        t = 1_000_000
        for _ in range(steps):
            f.write(f'{{"ph":"X","cat":"torch","name":"Optimizer.zero_grad#SGD.zero_grad","pid":{PID},"tid":{PID},'
                    f'"ts":{t},"dur":5}}\n')
            t += 10
            for i in range(OPS):
                corr += 1
                name = "aten::linear" if i < OPS // 2 else "AddmmBackward0"
                cat = "aten" if i < OPS // 2 else "autograd"
                f.write(f'{{"ph":"X","cat":"{cat}","name":"{name}","pid":{PID},"tid":{PID},"ts":{t},"dur":20,'
                        f'"args":{{"External id":{corr}}}}}\n')
                f.write(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{PID},"tid":{PID},'
                        f'"ts":{t + 2},"dur":3,"args":{{"correlation":{corr},"External id":{corr}}}}}\n')
                f.write(f'{{"ph":"X","cat":"kernel","name":"gemm","pid":{gpu},"tid":7,"ts":{t + 6},"dur":25,'
                        f'"args":{{"device":0,"stream":7,"correlation":{corr},"External id":{corr}}}}}\n')
                t += 25
            f.write(f'{{"ph":"X","cat":"torch","name":"Optimizer.step#SGD.step","pid":{PID},"tid":{PID},'
                    f'"ts":{t},"dur":30}}\n')
            t += 40
        f.write("]\n")


def timed(cmd, repeat):
    best = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit(f"{cmd}: {p.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = (cpu, wall) if best is None or cpu < best[0] else best
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="?", type=int, default=5000)
    ap.add_argument("--bin", default=os.environ.get("DFTRACER_ANALYZE_BIN",
                                                    os.path.join(ROOT, "build", "src", "analyze", "dftracer-analyze")))
    ap.add_argument("--other-bin")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.pfw")
        write_trace(path, a.steps)
        mib = os.path.getsize(path) / 2**20
        lines = a.steps * (2 + 3 * OPS)
        print(f"trace: {a.steps} steps, {lines} events, {mib:.0f} MiB; load {os.getloadavg()[0]:.1f}; best of {a.repeat}")
        runs = [("device (steps from the step finder, one read)", [a.bin, "device", "--format", "json", "--threads", "1", path]),
                ("summary --by step (two reads)", [a.bin, "summary", "--by", "step", "--format", "json", "--threads", "1", path])]
        if a.other_bin:
            runs.append(("device, --other-bin", [a.other_bin, "device", "--format", "json", "--threads", "1", path]))
        for what, cmd in runs:
            cpu, wall = timed(cmd + ["--no-progress"], a.repeat)
            print(f"{what:50s} cpu {cpu:7.3f} s  wall {wall:7.3f} s")


if __name__ == "__main__":
    main()
