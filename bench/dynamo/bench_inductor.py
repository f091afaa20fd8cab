"""Inductor kernel tracing overhead, side by side, in one run (issue #15).

    python bench/dynamo/bench_inductor.py [--models small|full] [--modes inference,train] [--rounds 5] [--iters 3]

For each model and mode (inference under no_grad; a training step: forward,
loss, backward, SGD step), interleaved round by round, on CPU:

  inductor          torch.compile(model), untraced (the baseline)
  dftracer          Dynamo(backend="inductor").compile: Inductor's kernels, one
                    event per kernel call, tracing on
  torch.profiler    torch.compile with cpp.enable_kernel_profile=True, run
                    under torch.profiler.profile() (what shows Inductor's CPU
                    kernels there)
  dftracer-aot      our aot_eager capture backend, traced (one event per ATen
                    op): what a user traced before this backend existed
  kprofile+observer the other hook candidate's floor: Inductor compiled with
                    cpp.enable_kernel_profile=True (a RECORD_FUNCTION per C++
                    kernel) run with our LibTorch observer on (trace_eager);
                    the observer still skips ops inside compiled graphs, so
                    this is what the RecordFunction calls alone cost

Prints best wall ms per iteration, the median calling-thread CPU ms, ratios to
inductor (CPU time: steadier on a shared machine) and the per-kernel cost
((dftracer - inductor) CPU time / kernel calls per iteration).

--models small: a BERT-style encoder (hidden 256, 4 layers, 64 tokens) and a
ResNet-50 on 64x64 images, batch 2 (what a loaded 2-core machine can run);
full: BERT-base (128 tokens) and ResNet-50 (224x224), batch 1.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
from bench_dynamo import step_fn, timed  # noqa: E402

from dftracer.python import Dynamo, dftracer, dftracer_dynamo_backend, trace_eager  # noqa: E402
from dftracer.python.dynamo import instrumented_graphs  # noqa: E402
from dftracer.python.dynamo_graphs import graph_count  # noqa: E402


def small_bert():
    return models.bert_base(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


MODELS = {
    "small": [("bert-small", small_bert, lambda: models.bert_inputs(2, 64)),
              ("resnet50-64px", models.ResNet50, lambda: models.resnet_inputs(2, 64))],
    "full": [("bert-base", models.bert_base, lambda: models.bert_inputs(1, 128)),
             ("resnet50", models.ResNet50, lambda: models.resnet_inputs(1, 224))],
}


def bench(name, make_model, inputs, mode, rounds, iters):
    torch._dynamo.reset()

    def fresh():
        torch.manual_seed(0)
        m = make_model()
        if mode == "inference":
            m.eval()
        return m, torch.optim.SGD(m.parameters(), lr=1e-6)

    runs = {}
    m, opt = fresh()
    runs["inductor"] = step_fn(torch.compile(m), inputs, mode, opt)
    m, opt = fresh()
    n0 = graph_count()
    runs["dftracer"] = step_fn(Dynamo("bench", backend="inductor").compile(m), inputs, mode, opt)
    runs["dftracer"]()  # compile now, so the graphs below are this model's
    phases = {0, 1} if mode == "train" else {2}
    kernels = sum(len(g.op_names) for g in instrumented_graphs(n0) if g.phase in phases)
    m, opt = fresh()
    prof_run = step_fn(torch.compile(m, options={"cpp.enable_kernel_profile": True}), inputs, mode, opt)

    def profiled():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            prof_run()

    runs["torch.profiler"] = profiled
    m, opt = fresh()
    kprof_run = step_fn(torch.compile(m, options={"cpp.enable_kernel_profile": True}), inputs, mode, opt)

    def kprofile_observer():
        with trace_eager():
            kprof_run()

    runs["kprofile+observer"] = kprofile_observer
    m, opt = fresh()
    runs["dftracer-aot"] = step_fn(torch.compile(m, backend=dftracer_dynamo_backend), inputs, mode, opt)
    t0 = time.perf_counter()
    for r in runs.values():  # compile + warm up
        r()
        r()
    warm_s = time.perf_counter() - t0
    wall = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    for _ in range(rounds):
        for k, r in runs.items():
            w, c = timed(r, iters)
            wall[k] += w
            cpu[k] += c
    base_cpu = statistics.median(cpu["inductor"])
    return {
        "model": name, "mode": mode, "kernels_per_iter": kernels, "warmup_s": warm_s,
        "wall_ms": {k: min(v) / 1e6 for k, v in wall.items()},
        "cpu_ms": {k: statistics.median(v) / 1e6 for k, v in cpu.items()},
        "cpu_ratio": {k: statistics.median(v) / base_cpu for k, v in cpu.items()},
        "wall_ratio": {k: min(v) / min(wall["inductor"]) for k, v in wall.items()},
        "per_kernel_cpu_ns": (statistics.median(cpu["dftracer"]) - base_cpu) / max(kernels, 1),
    }


def main():
    p = argparse.ArgumentParser(description="Inductor kernel tracing vs plain Inductor and torch.profiler")
    p.add_argument("--models", default="small", choices=sorted(MODELS))
    p.add_argument("--only", default=None, help="comma list of model names to keep")
    p.add_argument("--modes", default="inference,train")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    trace_dir = tempfile.mkdtemp(prefix="dft-bench-inductor-")
    log = dftracer.initialize_log(os.path.join(trace_dir, "bench"), None, -1)
    results = []
    for name, make, inputs in MODELS[a.models]:
        if a.only and name not in a.only.split(","):
            continue
        for mode in a.modes.split(","):
            r = bench(name, make, inputs(), mode, a.rounds, a.iters)
            results.append(r)
            print(f"{name:14s} {mode:9s} kernels/iter {r['kernels_per_iter']:4d}  "
                  + "  ".join(f"{k} {r['wall_ms'][k]:.2f}ms cpu {r['cpu_ms'][k]:.2f}ms (x{r['cpu_ratio'][k]:.3f})"
                              for k in r["wall_ms"])
                  + f"  per-kernel {r['per_kernel_cpu_ns']:.0f} ns", flush=True)
    log.finalize()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
