"""A small DDP training job for the many-ranks tests, run under
torchrun with gloo on CPU, traced from the environment (DFTRACER_ENABLE=1).

As a script (one rank of the job):
    torchrun --nproc_per_node=2 ranks_job.py --steps 3 [--compile]
        [--sleep-rank 1 --sleep-step 2 --sleep-s 0.2]   (a straggler)
        [--kill-rank 2 --kill-step 2]                    (SIGKILL mid-run)
        [--raise-rank 1 --raise-step 2]                  (an exception mid-step)
Each step is a `train_step` region (dft_fn, cat "train") on the main thread
and Dynamo.update(step=i): the steps model finds the steps either way. Each
rank also writes <trace dir>/ddp-rank<R>.json: DDP's own bucket sizes (its
logging data) and the model's parameter bytes, for the tests to compare
with the trace.

From a test: run_job(trace_dir, nproc, ...) runs torchrun and returns
(CompletedProcess, [trace files]); the straggler run for the analysis side:
run_job(trace_dir, 2, compile=True, sleep_rank=1, sleep_step=2).
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time

BUCKET_CAP_MB = 0.02  # ~20 KiB: the model's 4 layers give several buckets


def _model(torch):
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(64, 4))


def end_job(dist):
    """Ends a rank's job: the caller has let go of its model, wrapper and
    optimizer (they lived in a function that returned), the collector frees
    their cycles, and only then barrier and destroy_process_group. Why: while
    FSDP's or DDP's objects still hold the process group, destroy does not
    destroy it, and gloo's worker thread frees the barrier's work (whose
    thread-local state holds a Python object) while the interpreter is
    finalizing: torch 2.13 then aborts ("terminate called without an active
    exception", SIGABRT; 5 of 30 runs of a plain FSDP2 job without dftracer,
    0 of 40 ended this way; pytorch/pytorch#190489)."""
    import gc

    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--sleep-rank", type=int, default=-1)
    ap.add_argument("--sleep-step", type=int, default=-1)
    ap.add_argument("--sleep-s", type=float, default=0.2)
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--kill-step", type=int, default=-1)
    ap.add_argument("--raise-rank", type=int, default=-1)
    ap.add_argument("--raise-step", type=int, default=-1)
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist
    from dftracer.python import dft_fn, dynamo, dftracer_dynamo_backend
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    _train(a, torch, dist, dft_fn, dynamo, dftracer_dynamo_backend, DDP)
    end_job(dist)


def _train(a, torch, dist, dft_fn, dynamo, dftracer_dynamo_backend, DDP):
    rank = dist.get_rank()
    model = _model(torch)
    # The capture backend compiles the module DDP wraps, without Dynamo's
    # DDPOptimizer (it refuses buckets smaller than DDP's 1 MiB first one,
    # and this small model needs small buckets to have several).
    torch._dynamo.config.optimize_ddp = False
    inner = torch.compile(model, backend=dftracer_dynamo_backend) if a.compile else model
    ddp = DDP(inner, bucket_cap_mb=BUCKET_CAP_MB)
    step_fn = ddp
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(16, 64), torch.randn(16, 4)
    # each iteration's perf_counter brackets, for the step tests: its step begins
    # between t0 and t0b, its region ends between t1a and t1: [t0, t0b, t1a, t1]
    step_times = []
    for step in range(a.steps):
        t0 = time.perf_counter()
        dynamo.update(step=step)
        with dft_fn("train", "train_step", step=step):
            t0b = time.perf_counter()
            if rank == a.sleep_rank and step == a.sleep_step:
                time.sleep(a.sleep_s)
            if rank == a.kill_rank and step == a.kill_step:
                time.sleep(0.3)  # let the writer flush this rank's events so far
                os.kill(os.getpid(), signal.SIGKILL)
            loss = torch.nn.functional.mse_loss(step_fn(x), y)
            opt.zero_grad()
            if rank == a.raise_rank and step == a.raise_step:  # after the forward, before backward's all_reduces
                raise RuntimeError(f"rank {rank} fails in step {step}")
            loss.backward()
            opt.step()
            t1a = time.perf_counter()
        step_times.append([t0, t0b, t1a, time.perf_counter()])
    out = os.path.dirname(os.environ.get("DFTRACER_LOG_FILE", "./x")) or "."
    info = ddp._get_ddp_logging_data()
    with open(os.path.join(out, f"ddp-rank{rank}.json"), "w") as f:
        json.dump({"bucket_sizes": [int(b) for b in str(info.get("bucket_sizes", "")).split(", ") if b],
                   "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
                   "step_times": step_times}, f)


def run_job(trace_dir, nproc, steps=3, compile=False, sleep_rank=-1, sleep_step=-1, sleep_s=0.2,
            kill_rank=-1, kill_step=-1, raise_rank=-1, raise_step=-1, timeout=120, env=None):
    """Runs this job under torchrun (gloo, CPU) with tracing to `trace_dir`;
    returns (CompletedProcess, sorted trace files)."""
    args = ["--steps", str(steps), "--sleep-rank", str(sleep_rank), "--sleep-step", str(sleep_step),
            "--sleep-s", str(sleep_s), "--kill-rank", str(kill_rank), "--kill-step", str(kill_step),
            "--raise-rank", str(raise_rank), "--raise-step", str(raise_step)]
    if compile:
        args.append("--compile")
    return torchrun(trace_dir, nproc, __file__, args, timeout=timeout, env=env)


def torchrun(trace_dir, nproc, script, args, timeout=120, env=None):
    """Runs `script` with `args` under torchrun on `nproc` CPU ranks, traced
    from the environment into `trace_dir` (files job-*.pfw[.gz]); returns
    (CompletedProcess, sorted trace files). Shared by the DDP and FSDP jobs."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    full.update({"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "job"),
                 "DFTRACER_FLUSH_INTERVAL_MS": "20", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    full.update(env or {})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--standalone", "--monitor_interval", "0.1", os.path.abspath(script)] + list(args)
    proc = subprocess.run(cmd, cwd=trace_dir, env=full, capture_output=True, text=True, timeout=timeout)
    files = sorted(p for p in glob.glob(os.path.join(trace_dir, "job-*")) if p.endswith((".pfw", ".pfw.gz")))
    return proc, files


if __name__ == "__main__":
    main()
