"""dlopen cost in FUNCTION mode: every dlopen patches the GOTs of what it
loaded (Inductor and Triton dlopen a library per compiled kernel).

Runs child interpreters that import torch (a few hundred loaded objects,
as in a training job) and then dlopen N fresh copies of a small shared
library: untraced, traced with DFTRACER_DISABLE_IO=1 (only the process
hooks) and traced with I/O. Prints wall and CPU ms per dlopen for each,
medians of --rounds alternated rounds.

    python3 bench/io/bench_dlopen.py [--python PY] [--before-python PY] [--libs 20] [--rounds 5]

--before-python: a second interpreter with another build of the package
(its rows are printed beside, alternated in the same run).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, sys, time
import torch  # noqa: F401 -- the loaded objects a training process has
if sys.argv[1] == "traced":
    import dftracer.python  # noqa: F401
libs = sys.argv[2:]
w, c = time.perf_counter(), time.process_time()
for p in libs:
    ctypes.CDLL(p)
w, c = time.perf_counter() - w, time.process_time() - c
print("%.4f %.4f" % (w / len(libs) * 1e3, c / len(libs) * 1e3))
"""

SOURCE = "#include <stdio.h>\nint bench_fn(const char* p) { FILE* f = fopen(p, \"r\"); if (f) fclose(f); return 0; }\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--before-python")
    ap.add_argument("--libs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "lib.c")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", os.path.join(d, "lib.so"), src], check=True)
        configs = [("untraced", a.python, "untraced", {})]
        pythons = [("this", a.python)] + ([("before", a.before_python)] if a.before_python else [])
        for tag, py in pythons:
            configs.append((f"{tag} DISABLE_IO=1", py, "traced", {"DFTRACER_DISABLE_IO": "1"}))
            configs.append((f"{tag} I/O on", py, "traced", {}))
        results = {name: [] for name, *_ in configs}
        for r in range(a.rounds):
            for name, py, mode, extra in configs:
                libs = []
                for i in range(a.libs):
                    p = os.path.join(d, f"r{r}-{configs.index((name, py, mode, extra))}-{i}.so")
                    shutil.copy(os.path.join(d, "lib.so"), p)  # a new object each
                    libs.append(p)
                env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
                if mode == "traced":
                    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=os.path.join(d, "t"), **extra)
                out = subprocess.run([py, "-c", CHILD, mode] + libs, env=env, capture_output=True, text=True,
                                     check=True).stdout.split()
                results[name].append((float(out[0]), float(out[1])))
                for p in libs:
                    os.unlink(p)
        print(f"per dlopen, median of {a.rounds} rounds ({a.libs} libraries each), load {os.getloadavg()[0]:.1f}:")
        for name, rows in results.items():
            print(f"  {name:24s} {statistics.median(w for w, _ in rows):7.3f} ms wall"
                  f"  {statistics.median(c for _, c in rows):7.3f} ms CPU")


if __name__ == "__main__":
    main()
