"""Inductor kernel tracing overhead, side by side, in one run.

    python bench/dynamo/bench_inductor.py [--models full|small] [--modes inference,train]
                                          [--rounds 7] [--iters 2] [--extra]

For each model and mode (inference under no_grad; a training step: forward,
loss, backward, SGD step), interleaved round by round so that the load of a
shared machine hits every variant alike, on CPU:

  inductor          torch.compile(model), untraced (the baseline)
  inductor-again    a second, identical torch.compile(model) instance, untraced:
                    the A/A control. Its ratio to inductor is the spread between
                    two instances of the same program (their tensors land at
                    other addresses), the noise floor any ratio is read against
  dftracer          Dynamo(backend="inductor").compile: Inductor's kernels, one
                    event per kernel call, tracing on
  torch.profiler    torch.compile with cpp.enable_kernel_profile=True, run
                    under torch.profiler.profile() (what shows Inductor's CPU
                    kernels there); the profiler is entered once per round
                    around that round's iterations, its start and its
                    post-processing at exit are not in the per-step times
  dftracer-aot      our aot_eager capture backend, traced (one event per ATen
                    op): what a user traced before this backend existed
  kprofile+observer (--extra) Inductor with cpp.enable_kernel_profile=True run
                    under trace_eager(): the LibTorch-observer hook candidate

Per variant: best and median wall ms per step, median CPU ms per step of the
calling thread (what the marks cost the model's thread) and of the whole
process (all threads: Inductor's OpenMP workers and our writer thread
included), the ratio of each to inductor's, and the per-kernel cost:
(dftracer - inductor) CPU time / kernel calls per step (the count of marked
kernel calls in the generated code, per step: forward + backward in train).

--models full (the default): BERT-base (12 layers, hidden 768, transformers
config, random weights) batch 1 x 64 tokens, and ResNet-50 (the torchvision
layout, models.ResNet50) batch 1 x 3 x 160 x 160; layer counts and widths
are full size, batch and sequence/image are small so one run fits in 15
minutes on a 2-core machine. --models small: a 4-layer hidden-256 encoder and
ResNet-50 on 64 x 64 images (a quick check).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DFTRACER_ENABLE", "1")  # read when dftracer is imported
import models  # noqa: E402
from bench_dynamo import step_fn  # noqa: E402

from dftracer.python import Dynamo, dftracer, dftracer_dynamo_backend, trace_eager  # noqa: E402
from dftracer.python.dynamo import instrumented_graphs  # noqa: E402
from dftracer.python.compile.dynamo_graphs import graph_count  # noqa: E402


def small_bert():
    return models.bert_base(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


MODELS = {
    "small": [("bert-small", small_bert, lambda: models.bert_inputs(1, 64)),
              ("resnet50-64px", models.ResNet50, lambda: models.resnet_inputs(1, 64))],
    "full": [("bert-base", models.bert_base, lambda: models.bert_inputs(1, 64)),
             ("resnet50", models.ResNet50, lambda: models.resnet_inputs(1, 160))],
}


class Variant:
    """One way of running the step; `around` is entered once per round."""

    def __init__(self, run, around=None):
        self.run, self.around = run, around
        self.wall, self.thread, self.proc = [], [], []

    def time_round(self, iters):
        ctx = self.around() if self.around is not None else None
        if ctx is not None:
            ctx.__enter__()
        try:
            for _ in range(iters):
                t0, c0, p0 = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
                self.run()
                self.thread.append(time.thread_time_ns() - c0)
                self.proc.append(time.process_time_ns() - p0)
                self.wall.append(time.perf_counter_ns() - t0)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)


def bench(name, make_model, inputs, mode, rounds, iters, extra, keep=None):
    torch._dynamo.reset()

    def fresh():
        torch.manual_seed(0)
        m = make_model()
        if mode == "inference":
            m.eval()
        return m, torch.optim.SGD(m.parameters(), lr=1e-6)

    v = {}
    m, opt = fresh()
    v["inductor"] = Variant(step_fn(torch.compile(m), inputs, mode, opt))
    m, opt = fresh()
    v["inductor-again"] = Variant(step_fn(torch.compile(m), inputs, mode, opt))
    m, opt = fresh()
    n0 = graph_count()
    v["dftracer"] = Variant(step_fn(Dynamo("bench", backend="inductor").compile(m), inputs, mode, opt))
    t0 = time.perf_counter()
    v["dftracer"].run()  # compile now, so the graphs below are this model's
    phases = {0, 1} if mode == "train" else {2}
    kernels = sum(len(g.op_names) for g in instrumented_graphs(n0) if g.phase in phases)
    m, opt = fresh()
    v["torch.profiler"] = Variant(
        step_fn(torch.compile(m, options={"cpp.enable_kernel_profile": True}), inputs, mode, opt),
        lambda: torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]))
    m, opt = fresh()
    v["dftracer-aot"] = Variant(step_fn(torch.compile(m, backend=dftracer_dynamo_backend), inputs, mode, opt))
    if extra:
        m, opt = fresh()
        v["kprofile+observer"] = Variant(
            step_fn(torch.compile(m, options={"cpp.enable_kernel_profile": True}), inputs, mode, opt), trace_eager)
    if keep:  # --variants: time only these (inductor, its control and dftracer always: the ratios need them)
        v = {k: x for k, x in v.items() if k in keep or k in ("inductor", "inductor-again", "dftracer")}
    for x in v.values():  # compile + warm up
        x.run()
        x.run()
    warm_s = time.perf_counter() - t0
    for _ in range(rounds):
        for x in v.values():
            x.time_round(iters)
    med = statistics.median
    base_t, base_p = med(v["inductor"].thread), med(v["inductor"].proc)
    return {
        "model": name, "mode": mode, "kernels_per_step": kernels, "compile_and_warmup_s": warm_s,
        "samples": len(v["inductor"].wall),
        "variants": {k: {"wall_best_ms": min(x.wall) / 1e6, "wall_median_ms": med(x.wall) / 1e6,
                         "thread_cpu_ms": med(x.thread) / 1e6, "process_cpu_ms": med(x.proc) / 1e6,
                         "thread_cpu_ratio": med(x.thread) / base_t, "process_cpu_ratio": med(x.proc) / base_p,
                         "wall_median_ratio": med(x.wall) / med(v["inductor"].wall)}
                     for k, x in v.items()},
        "per_kernel_thread_cpu_ns": (med(v["dftracer"].thread) - base_t) / max(kernels, 1),
        "per_kernel_process_cpu_ns": (med(v["dftracer"].proc) - base_p) / max(kernels, 1),
    }


def print_result(r):
    print(f"\n{r['model']} {r['mode']}: {r['kernels_per_step']} kernel calls/step, {r['samples']} steps per "
          f"variant, compile+warm-up {r['compile_and_warmup_s']:.0f} s")
    print(f"  {'variant':18s} {'wall best':>10s} {'wall med':>10s} {'thread CPU':>11s} {'x':>6s} "
          f"{'process CPU':>12s} {'x':>6s} {'wall x':>7s}")
    for k, x in r["variants"].items():
        print(f"  {k:18s} {x['wall_best_ms']:8.2f}ms {x['wall_median_ms']:8.2f}ms {x['thread_cpu_ms']:9.2f}ms "
              f"{x['thread_cpu_ratio']:6.3f} {x['process_cpu_ms']:10.2f}ms {x['process_cpu_ratio']:6.3f} "
              f"{x['wall_median_ratio']:7.3f}")
    print(f"  per-kernel cost (dftracer - inductor): thread CPU {r['per_kernel_thread_cpu_ns']:.0f} ns, "
          f"process CPU {r['per_kernel_process_cpu_ns']:.0f} ns", flush=True)


def main():
    p = argparse.ArgumentParser(description="Inductor kernel tracing vs plain Inductor and torch.profiler")
    p.add_argument("--models", default="full", choices=sorted(MODELS))
    p.add_argument("--only", default=None, help="comma list of model names to keep")
    p.add_argument("--modes", default="inference,train")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=2)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--extra", action="store_true", help="also time the kprofile+observer hook candidate")
    p.add_argument("--variants", default=None, help="comma list of variants to time (inductor, inductor-again, dftracer always)")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average at start "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    trace_dir = tempfile.mkdtemp(prefix="dft-bench-inductor-")
    log = dftracer.initialize_log(os.path.join(trace_dir, "bench"), None, -1)
    results = []
    for name, make, inputs in MODELS[a.models]:
        if a.only and name not in a.only.split(","):
            continue
        for mode in a.modes.split(","):
            r = bench(name, make, inputs(), mode, a.rounds, a.iters, a.extra,
                      a.variants.split(",") if a.variants else None)
            results.append(r)
            print_result(r)
    log.finalize()
    size = sum(os.path.getsize(os.path.join(trace_dir, f)) for f in os.listdir(trace_dir))
    shutil.rmtree(trace_dir, ignore_errors=True)
    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; traces written: {size} bytes")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
