"""Why a traced collective costs more CPU on two ranks than alone: the same
few microseconds of Python cost several times more right after a collective
that waited for its peer than when run warm.

    python bench/comm/bench_comm_after.py [--iters 40]

Two gloo ranks on CPU (torch.multiprocessing, 127.0.0.1). For each size,
rank 0 runs `all_reduce` untraced, then times (thread CPU time) the
per-call work of the dftracer wrapper -- the wrapper of all_reduce
(collectives._wrap) around a stand-in collective that does nothing, so
describe, call and record -- right after the collective returns, and the
same work again at once (warm); It prints both in microseconds per
call, the median over the iterations, and the same for a 1-rank group (no
peer to wait for). Runs on any build that has collectives._wrap, so two
builds compare side by side.
"""
import argparse
import os
import statistics
import sys
import time

from bench_comm import run_two_ranks

SIZES = {"1 KiB": 256, "16 MiB": 4 * 1024 * 1024}


def _worker(rank, world, port, trace_dir, iters, out_q):
    os.environ.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=os.path.join(trace_dir, "bench"),
                      DFTRACER_DISABLE_IO="1")
    import dftracer  # noqa: F401  (starts tracing, hooks torch.distributed)
    import torch
    import torch.distributed as dist
    from dftracer.python import collectives

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    untraced = dist.all_reduce.__wrapped__
    alone = [dist.new_group([r]) for r in range(world)][rank]
    clock = time.thread_time_ns

    def nothing(tensor, op=None, group=None, async_op=False):  # all_reduce's signature, no work
        return None

    try:
        ours = collectives._wrap("all_reduce", nothing, dist, dist.distributed_c10d)
    except TypeError:  # a build whose _wrap has no c10d parameter
        ours = collectives._wrap("all_reduce", nothing, dist)

    def time_after(work, t, group):
        for _ in range(3):
            untraced(t, group=group)
            work(t, group)
        after, warm = [], []
        for _ in range(iters):
            untraced(t, group=group)
            c0 = clock()
            work(t, group)
            c1 = clock()
            work(t, group)
            c2 = clock()
            after.append((c1 - c0) / 1e3)
            warm.append((c2 - c1) / 1e3)
        return statistics.median(after), statistics.median(warm)

    results = {}
    for label, n, group in [(k, v, None) for k, v in SIZES.items()] + [("1 KiB, 1-rank group", 256, alone)]:
        t = torch.ones(n)
        results[label] = time_after(lambda x, g: ours(x, group=g), t, group)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        out_q.put(results)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    args = ap.parse_args()
    results, ok = run_two_ranks(_worker, args.iters)
    load = os.getloadavg()[0]
    print(f"wrapper work around a no-op collective, thread CPU us per call, rank 0, median of {args.iters}; "
          f"{os.cpu_count()} CPUs, load {load:.1f}")
    print(f"{'size':>22} {'after the collective':>22} {'warm (again at once)':>22}")
    for label, (after, warm) in results.items():
        print(f"{label:>22} {after:22.1f} {warm:22.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
