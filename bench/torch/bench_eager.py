"""Per-op cost of eager ATen op tracing: untraced vs our LibTorch observer
vs torch.profiler, side by side in one run, on the same eager model.

    python bench/torch/bench_eager.py [--iters 200] [--repeats 5] [--width 64] [--layers 8]

The model is a stack of small Linear/LayerNorm/GELU blocks trained step by
step (forward, loss, backward) -- many cheap ops, so per-op overhead shows.
Each configuration runs `--repeats` times, interleaved with the others so
machine load hits them alike; the best (least disturbed) repeat counts.
Per-op cost = (CPU time per step traced - untraced) / ATen ops per step
(counted from our trace: its "aten" events; the same ops torch.profiler
records). Everything else an observer records -- autograd nodes, other
scopes -- is overhead on top of those ops, so the ratio between
configurations is the ratio of their per-step overheads.

Configurations:
  untraced            no observer
  no-op observer      our RecordFunction callback registered with empty bodies:
                      torch's RecordFunction machinery alone, the floor under
                      any RecordFunction observer (ours and torch.profiler's)
  dftracer            trace_eager(): events into the core's buffers -> .pfw.gz
  dftracer+shapes     trace_eager(shapes=True)
  no-op +inputs       the no-op callback asking for inputs: every op's arguments
                      boxed by the dispatcher, nothing else (the floor under
                      shapes and FLOPs)
  dftracer+flops      trace_eager(flops=True): args.flops on the ops
                      FlopCounterMode counts
  torch.profiler      profile(activities=[CPU]) (loop only; its stop/postprocess
                      time is printed separately)
  torch.profiler+shapes  the same with record_shapes=True
  torch.profiler+flops   the same with record_shapes=True, with_flops=True
"""
import argparse
import gc
import glob
import gzip
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn

from dftracer.python import dftracer
from dftracer.python.eager import _load as eager_ext
from dftracer.python.eager import trace_eager


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x + nn.functional.gelu(self.norm(self.fc(x)))


def make_model(width, layers):
    torch.manual_seed(0)
    return nn.Sequential(*[Block(width) for _ in range(layers)], nn.Linear(width, 4))


def step(model, x, y):
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()


class Cost:
    """CPU nanoseconds per step: of the stepping thread (`thread`) and of the
    whole process (`process`: plus our writer thread) during the loop, and of
    the whole process for the stop that follows (finalize / profiler stop
    and collection). CPU time, not wall time: on a loaded machine other
    processes' time slices do not count against a configuration."""

    def __init__(self, thread, process, stop):
        self.thread, self.process, self.stop = thread, process, stop


def time_steps(model, x, y, iters):
    t0, p0 = time.thread_time_ns(), time.process_time_ns()
    for _ in range(iters):
        step(model, x, y)
    return (time.thread_time_ns() - t0) / iters, (time.process_time_ns() - p0) / iters


def run_untraced(model, x, y, iters):
    return Cost(*time_steps(model, x, y, iters), 0.0)


def run_noop(model, x, y, iters, inputs=False):
    ext = eager_ext()
    ext._enable_noop_for_benchmark(inputs)
    try:
        return Cost(*time_steps(model, x, y, iters), 0.0)
    finally:
        ext.disable()


def run_ours(model, x, y, iters, shapes, trace_dir, tag, flops=False):
    log = dftracer.initialize_log(os.path.join(trace_dir, tag), None, -1, enable=True)
    with trace_eager(shapes=shapes, flops=flops):
        t, p = time_steps(model, x, y, iters)
    p0 = time.process_time_ns()
    log.finalize()  # the writer drains what is left, writes the end of the file
    return Cost(t, p, (time.process_time_ns() - p0) / iters)


def run_profiler(model, x, y, iters, shapes, flops=False):
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=shapes,
                                  with_flops=flops)
    prof.__enter__()
    t, p = time_steps(model, x, y, iters)
    p0 = time.process_time_ns()
    prof.__exit__(None, None, None)
    prof.events()  # what a user does next: the post-processing torch.profiler defers
    return Cost(t, p, (time.process_time_ns() - p0) / iters)


def events_per_step(trace_dir, iters):
    """ATen ops one step runs, counted from our own trace."""
    paths = [p for p in glob.glob(os.path.join(trace_dir, "count-*.pfw*")) if p.endswith((".pfw", ".pfw.gz"))]
    if not paths:
        raise SystemExit(f"bench_eager: no trace written in {trace_dir}: is the observer built?")
    path = sorted(paths)[-1]
    opener = gzip.open if path.endswith(".gz") else open
    n = 0
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("ph") == "X" and e.get("cat") == "aten":
                    n += 1
    return n / iters


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    a = p.parse_args()
    if min(a.iters, a.repeats, a.width, a.layers, a.batch) < 1:
        p.error("all sizes must be >= 1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)

    model = make_model(a.width, a.layers)
    x, y = torch.randn(a.batch, a.width), torch.randint(0, 4, (a.batch,))
    for _ in range(20):
        step(model, x, y)  # warm up allocator and lazy init

    trace_dir = tempfile.mkdtemp(prefix="bench_eager_")
    run_ours(model, x, y, 20, False, trace_dir, "count")
    ops = events_per_step(trace_dir, 20)

    configs = {
        "untraced": lambda: run_untraced(model, x, y, a.iters),
        "no-op observer": lambda: run_noop(model, x, y, a.iters),
        "dftracer": lambda: run_ours(model, x, y, a.iters, False, trace_dir, "ours"),
        "dftracer+shapes": lambda: run_ours(model, x, y, a.iters, True, trace_dir, "shapes"),
        "no-op +inputs": lambda: run_noop(model, x, y, a.iters, inputs=True),
        "dftracer+flops": lambda: run_ours(model, x, y, a.iters, False, trace_dir, "flops", flops=True),
        "torch.profiler": lambda: run_profiler(model, x, y, a.iters, False),
        "torch.profiler+shapes": lambda: run_profiler(model, x, y, a.iters, True),
        "torch.profiler+flops": lambda: run_profiler(model, x, y, a.iters, True, flops=True),
    }
    costs = {k: [] for k in configs}
    for _ in range(a.repeats):
        for name, fn in configs.items():
            gc.collect()
            costs[name].append(fn())

    def best(name, field):
        return min(getattr(c, field) for c in costs[name])

    base_t, base_p = best("untraced", "thread"), best("untraced", "process")
    print(f"torch {torch.__version__}, 1 intra-op thread, model {a.layers}x(Linear {a.width} + LayerNorm + GELU) "
          f"+ Linear, batch {a.batch}, train step (forward, loss, backward); {ops:.0f} ATen ops "
          f"per step; {a.iters} steps x {a.repeats} repeats, best repeat; CPU time")
    print(f"{'configuration':22s} {'us/step':>9s} {'in-thread':>10s} {'+other':>8s} {'+stop':>8s} {'total':>8s}")
    print(f"{'':22s} {'(thread)':>9s} {'ns/op':>10s} {'ns/op':>8s} {'ns/op':>8s} {'ns/op':>8s}")
    per_op = {}
    for name in configs:
        t, p = best(name, "thread"), best(name, "process")
        stop = statistics.median(c.stop for c in costs[name])
        in_thread = (t - base_t) / ops
        other = ((p - base_p) - (t - base_t)) / ops
        stop_op = stop / ops
        per_op[name] = in_thread
        print(f"{name:22s} {t / 1e3:9.1f} {in_thread:10.0f} {other:8.0f} {stop_op:8.0f} "
              f"{in_thread + other + stop_op:8.0f}")
    print("in-thread: the traced thread's own extra CPU per op; +other: other threads during the loop "
          "(our writer thread); +stop: finalize / profiler stop + events() afterwards")
    floor = per_op["no-op observer"]
    print(f"floor: torch's RecordFunction machinery (no-op callback) = {floor:.0f} ns/op in-thread; above it:")
    for name in ("dftracer", "dftracer+shapes", "no-op +inputs", "dftracer+flops", "torch.profiler",
                 "torch.profiler+shapes", "torch.profiler+flops"):
        print(f"  {name:22s} {per_op[name] - floor:6.0f} ns/op")
    if per_op["torch.profiler"] > 0:
        print(f"in-thread per-op cost, dftracer / torch.profiler = "
              f"{per_op['dftracer'] / per_op['torch.profiler']:.2f} including the floor (target <= 0.5)")
    above_ours, above_prof = per_op["dftracer"] - floor, per_op["torch.profiler"] - floor
    if above_prof > 0:
        print(f"                                   = {above_ours / above_prof:.2f} above the floor "
              f"(each observer's own callbacks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
