"""CPU and wall ns per outermost module call and per Tensor.backward() call
with the LibTorch observer on (trace_eager), to compare two builds side by
side: run it with each build's python, alternately.

    python bench/torch/bench_eager_calls.py --calls 20000 --repeats 7

A module call: nn.Identity (runs no op); a backward call: a scalar leaf's
backward (the seed and one AccumulateGrad node). Medians over rounds."""
import argparse
import os
import statistics
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    os.environ.setdefault("DFTRACER_ENABLE", "1")
    os.environ.setdefault("DFTRACER_DISABLE_IO", "1")
    import torch
    from dftracer.python import dftracer, trace_eager

    torch.set_num_threads(1)
    d = tempfile.mkdtemp()
    log = dftracer.initialize_log(os.path.join(d, "bench.pfw"), None, -1)
    m = torch.nn.Identity()
    x = torch.ones(())
    w = torch.ones((), requires_grad=True)
    res = {"module call": [], "backward call": []}
    with trace_eager():
        for _ in range(a.repeats):
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(a.calls):
                m(x)
            c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
            res["module call"].append(((c1 - c0) / a.calls, (t1 - t0) / a.calls))
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(a.calls // 4):
                (w * 1).backward()
            c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
            res["backward call"].append(((c1 - c0) / (a.calls // 4), (t1 - t0) / (a.calls // 4)))
    log.finalize()
    for k, v in res.items():
        print(f"{k}: CPU {statistics.median(c for c, _ in v):.0f} ns, wall {statistics.median(t for _, t in v):.0f} ns")


if __name__ == "__main__":
    main()
