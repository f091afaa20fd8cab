"""Instructions per region of each form (callgrind), builds side by side:

    python bench/python/region_instructions.py [--python before=/venv-old/bin/python] \
        [--forms floorctx,reused,aictx,new] [--on] [--n 50000]

Runs `region_forms.py <form> N` under `valgrind --tool=callgrind
--separate-threads=yes` with each interpreter (the one running this is "this"; add others
with --python label=path) and prints, per form, the calling thread's
instructions per iteration minus those of the same interpreter's `loop` (an
empty `for`). `floorctx` and `nullctx` exist in this package only (nan
under pydftracer). --on
starts tracing (DFTRACER_ENABLE=1, initialize_log into a temporary
directory). Instructions are not time, but read the same at any load; this
package's `with` forms run at ~17 instructions per ns (bench_regions.py).
"""
import argparse
import os
import subprocess
import sys
import tempfile

FORMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "region_forms.py")


def total(python, form, n, on, work):
    out = os.path.join(work, f"cg.{abs(hash(python))}.{form}")
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("DFTRACER_ENABLE", None)
    if on:
        td = tempfile.mkdtemp(dir=work)
        env.update(ON="1", DFTRACER_ENABLE="1", TD=td)
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                    python, FORMS, form, str(n)], env=env, check=True, capture_output=True)
    with open(out + "-01") as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}-01")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", action="append", default=[], help="label=interpreter (repeatable)")
    ap.add_argument("--forms", default="floorctx,reused,aictx,new")
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--on", action="store_true", help="tracing on")
    a = ap.parse_args()
    pythons = [("this", sys.executable)] + [tuple(p.split("=", 1)) for p in a.python]
    forms = a.forms.split(",")
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        for label, python in pythons:
            loop = total(python, "loop", a.n, a.on, work)
            for form in forms:
                try:  # (floorctx and nullctx fail under pydftracer: nan)
                    rows.setdefault(form, {})[label] = (total(python, form, a.n, a.on, work) - loop) / a.n
                except subprocess.CalledProcessError:
                    rows[form][label] = float("nan")
    labels = [label for label, _ in pythons]
    print(f"# instructions per region, calling thread, minus `loop`; tracing {'on' if a.on else 'off'}, N={a.n}")
    print(f"  {'form':12s}" + "".join(f"{label:>12s}" for label in labels))
    for form in forms:
        print(f"  {form:12s}" + "".join(f"{rows[form].get(label, float('nan')):12.1f}" for label in labels))


if __name__ == "__main__":
    main()
