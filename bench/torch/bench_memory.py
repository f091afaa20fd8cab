"""Memory capture's cost: a traced training step of a tiny GPT-2 (CPU) with
eager op tracing on, memory capture off and on, side by side in one run, and
the cost per allocation event: (step time on - step time off) / allocation
events per step.

    python bench/torch/bench_memory.py [--rounds 41] [--steps 3] [--allocs 20000]

Robust at load: the rounds are interleaved and paired (each round times off
and on back to back, in alternating order: off-on, on-off, ...), each timed by
wall clock and by the process's CPU time (time.process_time: the time the
process ran, not the time it waited for a core on a loaded machine; the
trace writer's thread included). Each half waits for the writer (a flush)
before its CPU clock stops and before the next half starts, so the writing
of a half's events is counted in that half. The process CPU is split: the
thread running the step (the allocating thread, time.thread_time) and the
others (the trace writer: torch runs one thread), and the whole run's CPU
per thread name is printed from /proc/self/task (10 ms ticks). The step ratio is the median of the rounds'
on/off ratios (paired: a load change hits both halves of a round), with its
quartiles; the medians and quartiles of each mode are printed too.

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
The step's instructions, on / off, the same way (whatever the load):

    valgrind --tool=callgrind --toggle-collect=starmap_next \
        python bench/torch/bench_memory.py --callgrind-step on --steps 3   # and: off

(the steps run inside itertools.starmap; the collected total over --steps
is the instructions per step, on the calling thread and the trace writer's).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

from dftracer.python import dftracer, trace_eager

# the tests' GPT-2 training step (tests/python/gpt2_training.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
from gpt2_training import TINY, gpt2_train_step  # noqa: E402


def model_step():
    return gpt2_train_step(TINY)


def flush_writer():
    """Waits until the trace writer has written (formatted, compressed) all
    that was recorded: its work for a timed half lands in that half."""
    from dftracer import _core

    return _core.flush


def thread_cpu_ticks():
    """CPU time (utime + stime, clock ticks) per thread name of this process,
    from /proc/self/task/*/stat: coarse (10 ms ticks), summed over the run."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        name = "main" if int(tid) == os.getpid() else comm
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out


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


def callgrind_step(memory, steps):
    import itertools

    torch.set_num_threads(1)
    step = model_step()
    with tempfile.TemporaryDirectory() as d:
        log = dftracer.initialize_log(os.path.join(d, "cg"), None, -1, enable=True)
        with trace_eager(memory=memory):
            for _ in range(3):
                step()
            list(itertools.starmap(step, [()] * steps))
        log.finalize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--allocs", type=int, default=20000)
    ap.add_argument("--callgrind-loop", choices=("on", "off"))
    ap.add_argument("--callgrind-step", choices=("on", "off"))
    args = ap.parse_args()
    if args.callgrind_step:
        callgrind_step(args.callgrind_step == "on", args.steps)
        return
    if args.callgrind_loop:
        callgrind_loop(args.callgrind_loop == "on")
        return
    torch.set_num_threads(1)
    step = model_step()
    for _ in range(3):
        step()
    with tempfile.TemporaryDirectory() as d:
        log = dftracer.initialize_log(os.path.join(d, "bench"), None, -1, enable=True)
        wall = {False: [], True: []}
        cpu = {False: [], True: []}
        main_cpu = {False: [], True: []}  # the thread running the step (the allocating thread)
        writer_wait = flush_writer()
        threads0 = thread_cpu_ticks()
        for r in range(args.rounds):
            for mem in ((False, True) if r % 2 == 0 else (True, False)):
                with trace_eager(memory=mem):
                    writer_wait()  # the previous half's events written: not counted in this one
                    c0, m0, t0 = time.process_time_ns(), time.thread_time_ns(), time.perf_counter_ns()
                    for _ in range(args.steps):
                        step()
                    t1 = time.perf_counter_ns()
                    writer_wait()  # this half's events written: in its CPU time (not its wall time)
                    m1, c1 = time.thread_time_ns(), time.process_time_ns()
                wall[mem].append((t1 - t0) / args.steps)
                cpu[mem].append((c1 - c0) / args.steps)
                main_cpu[mem].append((m1 - m0) / args.steps)
        threads1 = thread_cpu_ticks()
        times = wall
        micro = {False: [], True: []}
        micro_cpu = {False: [], True: []}
        for r in range(args.rounds):
            for mem in ((False, True) if r % 2 == 0 else (True, False)):
                with trace_eager(memory=mem):
                    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
                    for _ in range(args.allocs):
                        torch.empty(16)
                    t1, c1 = time.perf_counter_ns(), time.process_time_ns()
                micro[mem].append(t1 - t0)
                micro_cpu[mem].append(c1 - c0)
        # allocation events per step: torch.profiler counts them
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        log.finalize()
    allocs = sum(1 for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    off, on = statistics.median(times[False]), statistics.median(times[True])

    def quartiles(xs):
        q = statistics.quantiles(xs, n=4)
        return {"p25": q[0], "median": statistics.median(xs), "p75": q[2], "min": min(xs)}

    def ms(xs):
        return {k: v / 1e6 for k, v in quartiles(xs).items()}

    def paired(d):
        return quartiles([a / b for a, b in zip(d[True], d[False])])

    cpu_off = statistics.median(cpu[False])
    # the other threads: process CPU minus the stepping thread's (the trace writer; torch runs one thread)
    other_cpu = {m: [c - t for c, t in zip(cpu[m], main_cpu[m])] for m in (False, True)}
    tick = os.sysconf("SC_CLK_TCK")
    threads = {k: (threads1[k] - threads0.get(k, 0)) / tick for k in threads1 if threads1[k] > threads0.get(k, 0)}
    print(json.dumps({
        "load": os.getloadavg()[0], "rounds": args.rounds, "steps_per_round": args.steps,
        # the step, memory on / off: the median of the rounds' paired ratios, with quartiles
        "step_ratio_wall": paired(wall), "step_ratio_cpu": paired(cpu),
        "step_ms_wall": {"off": ms(wall[False]), "on": ms(wall[True])},
        "step_ms_cpu": {"off": ms(cpu[False]), "on": ms(cpu[True])},
        # the process CPU split: the thread running the step (it allocates) and the others (the writer)
        "step_ratio_cpu_main_thread": paired(main_cpu),
        "step_ms_cpu_main_thread": {"off": ms(main_cpu[False]), "on": ms(main_cpu[True])},
        "step_ms_cpu_other_threads": {"off": ms(other_cpu[False]), "on": ms(other_cpu[True])},
        # whole step benchmark, both modes, per thread name (s, 10 ms ticks)
        "thread_cpu_s": threads,
        "alloc_events_per_step": allocs,
        "ns_per_alloc_event_wall": (on - off) / allocs if allocs else None,
        "ns_per_alloc_event_cpu": (statistics.median(cpu[True]) - cpu_off) / allocs if allocs else None,
        # torch.empty(16) alone (our part and torch's bookkeeping), on minus off
        "micro_ns_per_alloc_event_wall": (statistics.median(micro[True]) - statistics.median(micro[False]))
        / (2 * args.allocs),
        "micro_ns_per_alloc_event_cpu": (statistics.median(micro_cpu[True]) - statistics.median(micro_cpu[False]))
        / (2 * args.allocs),
        "micro_ns_per_empty_memory_off_cpu": statistics.median(micro_cpu[False]) / args.allocs,
    }))

if __name__ == "__main__":
    main()
