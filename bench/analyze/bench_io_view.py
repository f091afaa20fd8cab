"""Cost of `dftracer-analyze io` on I/O-only traces, two builds side by
side: instructions (callgrind, independent of the machine's load) and CPU
time (user + sys of the child, best of N). Two traces of 100k POSIX reads
on 64 files over 4 threads, with a `torch.save` checkpoint event every
5,000 calls (the io view tells the files a checkpoint event's calls touched):

- `random`: each call on a random file (the io view's per-file lookup on
  every call: its worst case);
- `runs`: 50 calls at a time on one file (a thread reading or writing a
  file in pieces, as programs do).

    python3 bench/analyze/bench_io_view.py --bin build/src/analyze/dftracer-analyze \\
        [--other-bin <a build before>/dftracer-analyze] [--repeat N] [--events N]
"""
import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES, THREADS, RUN = 64, 4, 50


def write_trace(path, events, runs):
    rng = random.Random(0)
    with open(path, "w") as f:
        f.write("[\n")
        for i in range(FILES):
            f.write(f'{{"id":0,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M",'
                    f'"args":{{"name":"/data/f{i}.bin","value":"{i + 1:016x}"}}}}\n')
        ts, n = 1_000_000, 0
        for it in range(events // RUN):
            tid = 1 + it % THREADS
            for _ in range(RUN):
                fh = (it % FILES if runs else rng.randrange(FILES)) + 1
                f.write(f'{{"id":{n},"name":"read","cat":"POSIX","pid":1,"tid":{tid},"ts":{ts},"dur":3,"ph":"X",'
                        f'"args":{{"fhash":"{fh:016x}","ret":4096}}}}\n')
                ts += 5
                n += 1
            if it % 100 == 0:
                f.write(f'{{"id":{n},"name":"torch.save","cat":"checkpoint","pid":1,"tid":{tid},"ts":{ts - 200},'
                        f'"dur":200,"ph":"X"}}\n')
        f.write("]\n")


def cpu_seconds(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(cmd):
    if shutil.which("valgrind") is None:
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    for line in p.stderr.splitlines():
        if "Collected" in line:
            return int(line.split(":")[-1].strip())
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "src", "analyze", "dftracer-analyze"))
    ap.add_argument("--other-bin")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", type=int, default=100_000)
    a = ap.parse_args()
    bins = [("this", a.bin)] + ([("other", a.other_bin)] if a.other_bin else [])
    print(f"load {os.getloadavg()[0]:.1f}; {a.events} I/O events per trace")
    print(f"{'trace':8} {'build':6} {'instructions':>14} {'cpu s (best)':>13}")
    with tempfile.TemporaryDirectory() as d:
        for name, runs in (("random", False), ("runs", True)):
            path = os.path.join(d, name + ".pfw")
            write_trace(path, a.events, runs)
            for label, exe in bins:
                cmd = [exe, "io", path, "--threads", "1", "--format", "json"]
                ins = instructions(cmd)
                best = min(cpu_seconds(cmd) for _ in range(a.repeat))
                print(f"{name:8} {label:6} {ins if ins is not None else 'n/a':>14} {best:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
