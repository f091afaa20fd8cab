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
peer to wait for). Then, after the collective only, the parts: an empty
lambda (the loop's own cost), one call of a C function of ours
(_core.enabled), the tensor's `nbytes` and `dtype` read alone, one
record_ticks, and the wrapper given a stand-in whose `nbytes` and `dtype`
are plain class attributes (no torch getter). Runs on any build that has collectives._wrap, so two
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
    from dftracer import _core
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

    class Plain:  # nbytes and dtype without torch's getters
        nbytes = 1024
    Plain.dtype = torch.float32
    plain = Plain()
    name, cat = _core.intern("part"), _core.intern("comm")
    parts = {
        "empty lambda": lambda t, g: None,
        "_core.enabled()": lambda t, g: _core.enabled(),
        "t.nbytes": lambda t, g: t.nbytes,
        "t.dtype": lambda t, g: t.dtype,
        "record_ticks": lambda t, g: _core.record_ticks(name, cat, 0, 1, None),
        "wrapper(stand-in)": lambda t, g: ours(plain, group=g),
        "wrapper(t)": lambda t, g: ours(t, group=g),
    }

    results, part_results = {}, {}
    for label, n, group in [(k, v, None) for k, v in SIZES.items()] + [("1 KiB, 1-rank group", 256, alone)]:
        t = torch.ones(n)
        results[label] = time_after(lambda x, g: ours(x, group=g), t, group)
        part_results[label] = {p: time_after(work, t, group)[0] for p, work in parts.items()}
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        out_q.put((results, part_results))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    args = ap.parse_args()
    (results, part_results), ok = run_two_ranks(_worker, args.iters)
    load = os.getloadavg()[0]
    print(f"wrapper work around a no-op collective, thread CPU us per call, rank 0, median of {args.iters}; "
          f"{os.cpu_count()} CPUs, load {load:.1f}")
    print(f"{'size':>22} {'after the collective':>22} {'warm (again at once)':>22}")
    for label, (after, warm) in results.items():
        print(f"{label:>22} {after:22.1f} {warm:22.1f}")
    print("the parts, thread CPU us right after the collective:")
    labels = list(part_results)
    print(f"{'part':>22} " + " ".join(f"{x:>20}" for x in labels))
    for p in part_results[labels[0]]:
        print(f"{p:>22} " + " ".join(f"{part_results[x][p]:20.1f}" for x in labels))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
