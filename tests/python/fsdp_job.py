"""A small FSDP training job for the many-ranks tests, run under
torchrun with gloo on CPU, traced from the environment (DFTRACER_ENABLE=1).

As a script (one rank of the job):
    torchrun --nproc_per_node=2 fsdp_job.py --steps 3 [--fsdp1]
FSDP2 (`fully_shard`, the default) shards each Linear layer as its own
group, then the root; --fsdp1 wraps the same model in
FullyShardedDataParallel (device_id=cpu: without it FSDP1 refuses a
machine with no accelerator; one flat parameter). Each step is a
`train_step` region (dft_fn, cat "train") and sets Dynamo.update(step=i).
Each rank also writes <trace dir>/fsdp-rank<R>.json: the bytes of this
rank's shard of each group and of the whole group unsharded (from FSDP's
own parameters), for the tests to compare with the all-gathers and
reduce-scatters in the trace.

From a test: run_job(trace_dir, nproc, ...) returns (CompletedProcess,
[trace files]).
"""
import argparse
import json
import os

import ranks_job


def _groups_fsdp2(model):
    """[(sharded bytes on this rank, unsharded bytes)] per FSDP2 group, in
    the order of the model's layers (a group = one Linear layer's params)."""
    out = []
    for m in model:
        params = list(m.parameters())
        if params:
            out.append((sum(p.to_local().numel() * p.element_size() for p in params),
                        sum(p.numel() * p.element_size() for p in params)))
    return out


def _groups_fsdp1(fsdp):
    flat = [m._handle.flat_param for m in type(fsdp).fsdp_modules(fsdp) if m._handle is not None]
    # FSDP1's flat parameter is padded so that it divides by the world size:
    # the all-gather moves this rank's (padded) shard, the reduce-scatter
    # world size such shards.
    ws = fsdp.world_size
    return [(p.numel() * p.element_size(), ws * p.numel() * p.element_size()) for p in flat]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--fsdp1", action="store_true")
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist
    from dftracer.python import dft_fn, dynamo

    dist.init_process_group("gloo")
    _train(a, torch, dist, dft_fn, dynamo)
    ranks_job.end_job(dist)  # the model and FSDP's state are gone by now (see end_job)


def _train(a, torch, dist, dft_fn, dynamo):
    rank = dist.get_rank()
    model = ranks_job._model(torch)
    if a.fsdp1:
        from torch.distributed.fsdp import FullyShardedDataParallel

        wrapped = FullyShardedDataParallel(model, device_id=torch.device("cpu"))
        groups = _groups_fsdp1(wrapped)
    else:
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        wrapped = fully_shard(model)
        groups = _groups_fsdp2(model)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.01)
    x, y = torch.randn(16, 64), torch.randn(16, 4)
    for step in range(a.steps):
        dynamo.update(step=step)
        with dft_fn("train", "train_step", step=step):
            loss = torch.nn.functional.mse_loss(wrapped(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    out = os.path.dirname(os.environ.get("DFTRACER_LOG_FILE", "./x")) or "."
    with open(os.path.join(out, f"fsdp-rank{rank}.json"), "w") as f:
        json.dump({"groups": groups}, f)


def run_job(trace_dir, nproc=2, steps=3, fsdp1=False, timeout=120):
    args = ["--steps", str(steps)] + (["--fsdp1"] if fsdp1 else [])
    return ranks_job.torchrun(trace_dir, nproc, __file__, args, timeout=timeout)


if __name__ == "__main__":
    main()
