"""Per-collective tracing cost: a 2-rank gloo all_reduce loop on
CPU, small and large tensors, untraced vs ours vs torch.profiler, in one run.

    python bench/comm/bench_comm.py [--small-iters 2000] [--large-iters 20] [--rounds 3] [--all-sizes]

Both ranks run in this one job (torch.multiprocessing, gloo over
127.0.0.1) with tracing on from the environment; the three modes are
interleaved round by round on the same tensors, so machine load hits them
alike:
  untraced        torch's own all_reduce (the function our wrapper calls)
  ours            torch.distributed.all_reduce as the program calls it:
                  the dftracer wrapper, one `comm` event per call
  torch.profiler  the untraced call inside torch.profiler.profile(CPU):
                  RecordFunction's record_param_comms path, the alternative
                  capture mechanism (its collection cost only: the trace
                  export after the loop is not counted)
Per collective, the median of the rounds, in microseconds: rank 0's wall
and CPU time of the calling thread, and the CPU time of both ranks' whole
processes (every thread: gloo's, dftracer's writer, the profiler's) added
together. The difference ours - untraced is the tracing cost of one
collective; the both-ranks column also counts what a mechanism does off the
calling thread, but carries gloo's own thread scheduling as noise.
"""
import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

SIZES = {"1 KiB": 256, "16 MiB": 4 * 1024 * 1024}  # float32 elements
MORE_SIZES = {"64 KiB": 16 * 1024, "1 MiB": 256 * 1024, "64 MiB": 16 * 1024 * 1024}  # --all-sizes
# The same 1 KiB call on a group of this rank alone: no peer to wait for, so
# the difference to untraced is the wrapper's own cost, out of the noise of
# the 2-rank rows on a loaded machine.
ALONE = "1 KiB, 1-rank group"


def _loop(fn, tensor, iters):
    """(wall, thread CPU, process CPU) us per call."""
    w0, c0, p0 = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
    for _ in range(iters):
        fn(tensor)
    w1, c1, p1 = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
    return (w1 - w0) / iters / 1e3, (c1 - c0) / iters / 1e3, (p1 - p0) / iters / 1e3


def _worker(rank, world, port, trace_dir, args, out_q):
    os.environ.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=os.path.join(trace_dir, "bench"),
                      DFTRACER_DISABLE_IO="1")
    import dftracer  # noqa: F401  (starts tracing, hooks torch.distributed)
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    traced = dist.all_reduce
    assert getattr(traced, "_dftracer_comm", False), "dftracer did not hook torch.distributed.all_reduce"
    untraced = traced.__wrapped__

    alone = [dist.new_group([r]) for r in range(world)][rank]  # new_group: every rank makes every group
    results = {}
    sizes = dict(sorted({**SIZES, **(MORE_SIZES if args.all_sizes else {})}.items(), key=lambda kv: kv[1]))
    for label, n, group in [(k, v, None) for k, v in sizes.items()] + [(ALONE, SIZES["1 KiB"], alone)]:
        t = torch.ones(n)
        iters = args.small_iters if n < 1 << 20 else args.large_iters
        fns = {"untraced": lambda x: untraced(x, group=group), "ours": lambda x: traced(x, group=group)}
        for _ in range(2):  # warm-up: connections, allocator
            fns["untraced"](t)
            fns["ours"](t)
        rows = {"untraced": [], "ours": [], "torch.profiler": []}
        order = list(rows)
        for i in range(args.rounds):
            for mode in order[i % 3:] + order[:i % 3]:  # each mode first in turn: no position bias
                if mode == "torch.profiler":
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                        rows[mode].append(_loop(fns["untraced"], t, iters))
                else:
                    rows[mode].append(_loop(fns[mode], t, iters))
        results[label] = {m: [statistics.median(x[k] for x in v) for k in range(3)] for m, v in rows.items()}
    dist.barrier()
    dist.destroy_process_group()
    out_q.put((rank, results))


def run_two_ranks(worker, arg, puts=1):
    """Runs worker(rank, 2, port, trace_dir, arg, queue) in two spawned
    processes; (what the ranks put in the queue -- the one object when
    puts=1, else the list of the `puts` objects in the order they came --,
    whether both exited 0)."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        procs = [ctx.Process(target=worker, args=(r, 2, port, d, arg, q)) for r in range(2)]
        for p in procs:
            p.start()
        results = [q.get(timeout=1800) for _ in range(puts)]
        for p in procs:
            p.join()
    return results[0] if puts == 1 else results, all(p.exitcode == 0 for p in procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small-iters", type=int, default=2000)
    ap.add_argument("--large-iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--all-sizes", action="store_true", help="also 64 KiB, 1 MiB and 64 MiB")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    got, ok = run_two_ranks(_worker, args, puts=2)
    by_rank = dict(got)
    print(f"2-rank gloo all_reduce on CPU, us per collective (median of {args.rounds} rounds; "
          f"{os.cpu_count()} CPUs, load {load0:.1f} -> {os.getloadavg()[0]:.1f})")
    print(f"{'size':>20} {'mode':>15} {'wall us':>10} {'cpu us':>10} {'+wall us':>10} {'+cpu us':>10}"
          f" {'2-rank cpu':>11} {'+2-rank cpu':>12}")
    for label, modes in by_rank[0].items():
        base_w, base_c, _ = modes["untraced"]
        both = {m: by_rank[0][label][m][2] + by_rank[1][label][m][2] for m in modes}
        for mode, (w, c, _) in modes.items():
            print(f"{label:>20} {mode:>15} {w:10.1f} {c:10.1f} {w - base_w:10.1f} {c - base_c:10.1f}"
                  f" {both[mode]:11.1f} {both[mode] - both['untraced']:12.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
