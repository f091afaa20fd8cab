"""Per-op cost of eager ATen op tracing in instructions, counted by
valgrind's callgrind: untraced vs torch's RecordFunction floor vs our
observer vs torch.profiler, on bench_eager.py's model.

    python bench/torch/bench_eager_instructions.py [--steps 10] [--warmup 5] [--no-grad]

--no-grad counts an evaluation step instead of a training step: the model's
forward under torch.no_grad(), where the observer writes "grad": 0 on each
thread-outermost op.

Why a second benchmark: bench_eager.py measures CPU time, which on a shared
2-core VM moves by +-40 ns/op between runs -- as much as our observer's own
part. Instruction counts are the same on every run (same binary, same
inputs), so the split between torch's machinery, our callbacks and
torch.profiler's callbacks reads the same on any machine, loaded or not.
Instructions are not time (a cache miss costs many); the CPU-time benchmark
stays the one for time.

How: each configuration runs in a child process under
`valgrind --tool=callgrind --toggle-collect=starmap_next`. The child warms
up outside any `itertools.starmap`, then runs the measured steps through
`itertools.starmap`, so callgrind counts exactly the instructions of those
steps in the stepping thread (our writer thread, which never enters
starmap_next, is not counted: its cost is in bench_eager.py's "+other").
"""
import argparse
import concurrent.futures
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ("untraced", "no-op observer", "dftracer", "torch.profiler", "no-op +inputs", "dftracer+flops",
           "torch.profiler+flops")


def eval_step(model, x, y):
    import torch
    with torch.no_grad():
        model(x)


def child(config, steps, warmup, trace_dir, no_grad=False):
    """Runs in the valgrind'ed process: set up `config`, warm up, then the
    counted steps inside itertools.starmap."""
    sys.path.insert(0, HERE)
    import torch

    import bench_eager as be
    from dftracer.python import dftracer
    from dftracer.python.eager import _load as eager_ext
    from dftracer.python.eager import trace_eager

    torch.set_num_threads(1)
    model = be.make_model(64, 8)
    x, y = torch.randn(8, 64), torch.randint(0, 4, (8,))

    step = eval_step if no_grad else be.step

    def run():
        for _ in range(warmup):
            step(model, x, y)  # first sight of every name, allocator warm
        list(itertools.starmap(step, itertools.repeat((model, x, y), steps)))

    if config == "untraced":
        run()
    elif config == "no-op observer":
        eager_ext()._enable_noop_for_benchmark()
        run()
        eager_ext().disable()
    elif config == "no-op +inputs":  # every op's arguments boxed, nothing else
        eager_ext()._enable_noop_for_benchmark(True)
        run()
        eager_ext().disable()
    elif config in ("dftracer", "dftracer+flops"):
        log = dftracer.initialize_log(os.path.join(trace_dir, "count"), None, -1, enable=True)
        with trace_eager(flops=config == "dftracer+flops"):
            run()
        log.finalize()
    elif config in ("torch.profiler", "torch.profiler+flops"):
        flops = config == "torch.profiler+flops"
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=flops,
                                    with_flops=flops):
            run()
    else:
        raise SystemExit(f"bench_eager_instructions: unknown configuration {config!r}")


def count(config, steps, warmup, trace_dir, no_grad):
    """Instructions callgrind collected for `config`'s counted steps."""
    out = os.path.join(trace_dir, "callgrind.out." + config.replace(" ", "_").replace(".", "_"))
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
           sys.executable, os.path.abspath(__file__), "--child", config, "--steps", str(steps),
           "--warmup", str(warmup), "--trace-dir", trace_dir] + (["--no-grad"] if no_grad else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        tail = "\n".join(r.stderr.splitlines()[-15:])
        raise SystemExit(f"bench_eager_instructions: {config} failed under valgrind (exit {r.returncode}):\n{tail}")
    return int(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=10, help="counted training steps per configuration")
    p.add_argument("--warmup", type=int, default=5, help="uncounted steps before them")
    p.add_argument("--no-grad", action="store_true", help="an evaluation step (forward under no_grad)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--trace-dir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.steps < 1 or a.warmup < 1:
        p.error("--steps and --warmup must be >= 1")
    if a.child:
        child(a.child, a.steps, a.warmup, a.trace_dir, a.no_grad)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_eager_instructions: valgrind not found (apt-get install valgrind)")

    sys.path.insert(0, HERE)
    import bench_eager as be

    trace_dir = tempfile.mkdtemp(prefix="bench_eager_instr_")
    # Events per step, from our own trace of one warm-up and one counted
    # step, run without valgrind (fast).
    count_dir = os.path.join(trace_dir, "events")
    os.mkdir(count_dir)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "dftracer", "--steps", "1",
                    "--warmup", "1", "--trace-dir", count_dir] + (["--no-grad"] if a.no_grad else []), check=True)
    ops = be.events_per_step(count_dir, 2)

    # Two at a time: each valgrind'ed child is single-threaded in effect,
    # and instruction counts do not depend on what else runs.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(CONFIGS, pool.map(lambda c: count(c, a.steps, a.warmup, trace_dir, a.no_grad), CONFIGS)))
    base = counts["untraced"] / a.steps
    per_op = {c: (counts[c] / a.steps - base) / ops for c in CONFIGS}
    kind = "evaluation step (no_grad forward)" if a.no_grad else "train step"
    print(f"callgrind, stepping thread only; bench_eager.py's model, {kind}, {ops:.0f} ATen ops "
          f"per step; {a.steps} counted steps after {a.warmup} warm-up steps")
    print(f"{'configuration':18s} {'instr/step':>12s} {'instr/op':>9s} {'above floor':>12s}")
    floor = per_op["no-op observer"]
    for c in CONFIGS:
        above = "" if c in ("untraced", "no-op observer") else f"{per_op[c] - floor:12.0f}"
        print(f"{c:18s} {counts[c] / a.steps:12.0f} {per_op[c]:9.0f} {above}")
    ours, prof = per_op["dftracer"], per_op["torch.profiler"]
    print(f"dftracer / torch.profiler = {ours / prof:.2f} including the floor, "
          f"{(ours - floor) / (prof - floor):.2f} above it; the floor alone is {floor / prof:.2f} of torch.profiler")
    shutil.rmtree(trace_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
