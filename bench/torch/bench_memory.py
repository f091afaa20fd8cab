"""Memory capture's cost: a traced training step of a tiny GPT-2 (CPU) with
eager op tracing on, memory capture off and on, side by side in one run
(interleaved rounds, median of each), and the cost per allocation event:
(step time on - step time off) / allocation events per step.

    python bench/torch/bench_memory.py [--rounds 15] [--steps 5] [--allocs 200000]

The per-event cost is also measured alone: `--allocs` torch.empty(16) calls
(one op, one allocation, one free each) with memory off and on, interleaved;
(on - off) / (2 * allocs) is the cost per allocation event on the
allocating thread, torch's own bookkeeping while reporting is on (the CPU
allocator's mutex and size map) included.

Prints one JSON line. Never run as a test.

Instructions per allocation event (the same on any machine, loaded or not):

    valgrind --tool=callgrind --toggle-collect=starmap_next \
        python bench/torch/bench_memory.py --callgrind-loop on   # and: off

runs 20000 torch.empty(16) (kept alive: allocations only) inside
itertools.starmap; callgrind_annotate --inclusive=yes then splits the
cost between torch's reporting (c10::ProfiledCPUMemoryReporter::New,
c10::reportMemoryUsageToProfiler) and ours (MemoryReporter::reportMemoryUsage).
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import transformers

from dftracer.python import dftracer, trace_eager


def model_step():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64, use_cache=False)
    model = transformers.GPT2LMHeadModel(cfg).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ids = torch.randint(0, 128, (4, 64))

    def step():
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()

    return step


def callgrind_loop(memory):
    import itertools

    with tempfile.TemporaryDirectory() as d:
        log = dftracer.initialize_log(os.path.join(d, "cg"), None, -1, enable=True)
        with trace_eager(memory=memory):
            for _ in range(2000):
                torch.empty(16)
            kept = list(itertools.starmap(torch.empty, [(16,)] * 20000))
        log.finalize()
    del kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--callgrind-loop", choices=("on", "off"))
    args = ap.parse_args()
    if args.callgrind_loop:
        callgrind_loop(args.callgrind_loop == "on")
        return
    torch.set_num_threads(1)
    step = model_step()
    for _ in range(3):
        step()
    with tempfile.TemporaryDirectory() as d:
        log = dftracer.initialize_log(os.path.join(d, "bench"), None, -1, enable=True)
        times = {False: [], True: []}
        for _ in range(args.rounds):
            for mem in (False, True):
                with trace_eager(memory=mem):
                    t0 = time.perf_counter_ns()
                    for _ in range(args.steps):
                        step()
                    times[mem].append((time.perf_counter_ns() - t0) / args.steps)
        micro = {False: [], True: []}
        for _ in range(args.rounds):
            for mem in (False, True):
                with trace_eager(memory=mem):
                    t0 = time.perf_counter_ns()
                    for _ in range(args.allocs):
                        torch.empty(16)
                    micro[mem].append(time.perf_counter_ns() - t0)
        # allocation events per step: torch.profiler counts them
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        log.finalize()
    allocs = sum(1 for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(json.dumps({"step_ms_memory_off": off / 1e6, "step_ms_memory_on": on / 1e6, "ratio": on / off,
                      "alloc_events_per_step": allocs, "ns_per_alloc_event": (on - off) / allocs if allocs else None,
                      "micro_ns_per_alloc_event": (statistics.median(micro[True]) - statistics.median(micro[False]))
                      / (2 * args.allocs),
                      "micro_ns_per_alloc_event_min": (min(micro[True]) - min(micro[False])) / (2 * args.allocs),
                      "step_ratio_min": min(times[True]) / min(times[False]),
                      "micro_ns_per_empty_memory_off": statistics.median(micro[False]) / args.allocs,
                      "rounds": args.rounds, "steps_per_round": args.steps}))


if __name__ == "__main__":
    main()
