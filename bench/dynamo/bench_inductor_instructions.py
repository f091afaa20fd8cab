"""Inductor kernel tracing in instructions (callgrind): what tracing adds to
an Inductor step on the calling thread, per step and per kernel call.

    python bench/dynamo/bench_inductor_instructions.py [--models bert-small] [--steps 10] [--aa] [--top 15] [--json F]

For each model (bench_inductor.py's small ones, or a 1-layer hidden-64
encoder "bert-tiny"; inference under no_grad, 1 thread),
two children run under valgrind --tool=callgrind:

* "plain":  torch.compile(model) (plain Inductor);
* "traced": Dynamo(backend="inductor").compile(model), tracing on: a mark per
  kernel call and the kernel events recorded.

Both initialize a dftracer log, as bench_inductor.py's process does. Each
child starts with callgrind's instrumentation off (--instr-atstart=no, so
Dynamo, AOT autograd and Inductor's compile run at valgrind's uninstrumented
speed), compiles and warms up (CPython's quickening and specialization done),
collects and disables the cyclic GC, switches instrumentation on through a client
request (a tiny C helper built with valgrind/callgrind.h), then runs the
counted steps through itertools.starmap under --toggle-collect=starmap_next:
only those steps' instructions on the calling thread are counted (the writer
thread never enters starmap_next; its cost is the process-CPU column of
bench_inductor.py). Prints instructions per step of both, the difference
(what tracing adds), that difference per kernel call, and the functions that
differ most (exclusive instructions, traced - plain) and the same by object
(library). --aa adds a third child, plain Inductor again: its difference to
the first is the noise floor of the per-step difference (allocator and
interpreter state that differs between two processes of the same program).

Deterministic settings: PYTHONHASHSEED=0, a fresh TORCHINDUCTOR_CACHE_DIR per
child, one compile thread, and AVX2 code (ATEN_CPU_CAPABILITY=avx2,
TORCHINDUCTOR_CPP_MARCH=x86-64-v3): valgrind does not run AVX-512. Only the
public API of the package is used, so any build's Python can run it (pass it
as the interpreter). Instructions are not time; unlike a CPU-time figure they
read the same at any load. The time figure is bench_inductor.py.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ("plain", "traced", "plain-again")
HELPER = r"""
#include <valgrind/callgrind.h>
void dft_bench_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void dft_bench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
"""


def graph_count():
    try:
        from dftracer.python.compile.dynamo_graphs import graph_count as f
    except ImportError:  # older package layout
        from dftracer.python.dynamo_graphs import graph_count as f
    return f()


def child(config, model, steps, warmup, work, helper):
    import ctypes
    import gc

    import torch

    sys.path.insert(0, HERE)
    import models
    from bench_dynamo import step_fn
    from dftracer.python import Dynamo, dftracer
    from dftracer.python.dynamo import instrumented_graphs

    torch.set_num_threads(1)
    make, inputs = {
        "bert-small": (lambda: models.bert_base(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                                intermediate_size=1024), lambda: models.bert_inputs(1, 64)),
        "bert-tiny": (lambda: models.bert_base(hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                                               intermediate_size=128), lambda: models.bert_inputs(1, 16)),
        "resnet50-64px": (models.ResNet50, lambda: models.resnet_inputs(1, 64)),
    }[model]
    torch.manual_seed(0)
    m = make().eval()
    x = inputs()
    log = dftracer.initialize_log(os.path.join(work, f"trace-{config}"), None, -1)
    n0 = graph_count()
    compiled = Dynamo("count", backend="inductor").compile(m) if config == "traced" else torch.compile(m)
    run = step_fn(compiled, x, "inference", None)
    for _ in range(warmup):
        run()
    kernels = sum(len(g.op_names) for g in instrumented_graphs(n0) if g.phase == 2)
    lib = ctypes.CDLL(helper)
    gc.collect()
    gc.disable()  # no collection at a point that differs between the configurations
    lib.dft_bench_start()
    list(itertools.starmap(run, itertools.repeat((), steps)))
    lib.dft_bench_stop()
    log.finalize()
    with open(os.path.join(work, f"kernels-{config}"), "w") as f:
        f.write(str(kernels))


def count(config, model, steps, warmup, work, helper):
    """(total instructions, {function: exclusive instructions}, kernels per step)."""
    out = os.path.join(work, f"callgrind.out.{model}.{config}")
    env = {**os.environ, "PYTHONHASHSEED": "0", "DFTRACER_ENABLE": "1", "ATEN_CPU_CAPABILITY": "avx2",
           "TORCHINDUCTOR_CPP_MARCH": "x86-64-v3", "TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1",
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(work, f"inductor-cache-{model}-{config}")}
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--toggle-collect=starmap_next",
           f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__), "--child", config,
           "--models", model, "--steps", str(steps), "--warmup", str(warmup), "--work", work, "--helper", helper]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise SystemExit(f"bench_inductor_instructions: {model} {config} failed under valgrind "
                         f"(exit {r.returncode}):\n{tail}")
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", out], capture_output=True, text=True).stdout
    per_fn = {}
    for line in ann.splitlines():
        mm = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+[^:]*:(.*?)(?: \[(.*)\])?$", line)
        if mm:
            obj = mm.group(3) or ""
            # The kernels' libraries sit in each child's own cache directory.
            obj = "inductor kernels" if "inductor-cache" in obj else os.path.basename(obj)
            name = f"{mm.group(2).strip()} [{obj}]" if obj else mm.group(2).strip()
            per_fn[name] = per_fn.get(name, 0) + int(mm.group(1).replace(",", ""))
    with open(os.path.join(work, f"kernels-{config}")) as f:
        kernels = int(f.read())
    return int(m.group(1)), per_fn, kernels


def build_helper(work):
    src, so = os.path.join(work, "cg_helper.c"), os.path.join(work, "cg_helper.so")
    with open(src, "w") as f:
        f.write(HELPER)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", src, "-o", so], check=True)
    return so


def measure(model, steps, warmup, top, aa):
    """{model, steps, kernels_per_step, plain/traced instructions per step, added per step and per kernel, top}."""
    work = tempfile.mkdtemp(prefix="dft-inductor-instr-")
    try:
        helper = build_helper(work)
        configs = CONFIGS if aa else CONFIGS[:2]
        for config in configs:  # separate work dirs: each child writes its kernel count there
            os.makedirs(os.path.join(work, config))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futs = {c: pool.submit(count, c, model, steps, warmup, os.path.join(work, c), helper) for c in configs}
            runs = {c: f.result() for c, f in futs.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain, traced = runs["plain"][0] / steps, runs["traced"][0] / steps
    kernels = runs["traced"][2]
    fp, ft = runs["plain"][1], runs["traced"][1]
    diff = sorted((((ft.get(k, 0) - fp.get(k, 0)) / steps, k) for k in set(fp) | set(ft)), key=lambda t: -abs(t[0]))
    by_obj = {}
    for d, k in diff:
        obj = k.rsplit(" [", 1)[1][:-1] if k.endswith("]") else "?"
        by_obj[obj] = by_obj.get(obj, 0) + d
    r = {"model": model, "steps": steps, "kernels_per_step": kernels, "plain_per_step": plain,
         "traced_per_step": traced, "added_per_step": traced - plain,
         "added_per_kernel": (traced - plain) / max(kernels, 1),
         "top": [[round(d, 1), k] for d, k in diff[:top] if abs(d) >= 1],
         "by_object": sorted(([round(d, 1), o] for o, d in by_obj.items() if abs(d) >= 1), key=lambda t: -abs(t[0]))}
    if aa:
        r["aa_per_step"] = runs["plain-again"][0] / steps - plain
    return r


def report(r):
    print(f"{r['model']} inference: {r['kernels_per_step']} kernel calls/step, {r['steps']} counted steps; "
          f"plain {r['plain_per_step']:,.0f} instr/step, traced {r['traced_per_step']:,.0f}: tracing adds "
          f"{r['added_per_step']:,.0f} instr/step, {r['added_per_kernel']:,.1f} per kernel call")
    if "aa_per_step" in r:
        print(f"  A/A control: plain in a second process {r['aa_per_step']:+,.0f} instr/step")
    print(f"  {'instr/step':>12s}  function [object] (exclusive, traced - plain)")
    for d, k in r["top"]:
        print(f"  {d:12,.0f}  {k}")
    print(f"  {'instr/step':>12s}  object (traced - plain)")
    for d, o in r["by_object"]:
        print(f"  {d:12,.0f}  {o}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="bert-small",
                   help="comma list of bert-small, resnet50-64px (bench_inductor.py's small models), bert-tiny")
    p.add_argument("--steps", type=int, default=10, help="counted steps per configuration")
    p.add_argument("--warmup", type=int, default=10, help="steps before counting (the first compiles)")
    p.add_argument("--top", type=int, default=15, help="functions to list")
    p.add_argument("--aa", action="store_true", help="also count plain Inductor in a third child (the A/A control)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--helper", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.steps < 1 or a.warmup < 2:
        p.error("--steps must be >= 1 and --warmup >= 2")
    if a.child:
        child(a.child, a.models, a.steps, a.warmup, a.work, a.helper)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_inductor_instructions: valgrind not found (apt-get install valgrind)")
    results = []
    for model in a.models.split(","):
        results.append(measure(model, a.steps, a.warmup, a.top, a.aa))
        report(results[-1])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
