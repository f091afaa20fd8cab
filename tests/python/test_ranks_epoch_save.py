"""The usual DDP checkpoint: after each epoch rank 0 saves and every rank
then meets in `dist.barrier()`. A real 2-rank torchrun job (gloo, eager, the
LibTorch observer on) with each iteration bracketed by perf_counter.

Before: on rank 1 the barrier, waiting for rank 0's save (11 ms against
steps of 20), began the next step, which read 31 ms and was flagged slow,
and on rank 0 the step after each save held the barrier too. The barrier
is no iteration's own: a collective the usual wait does not hold is
outside the steps, as the save is (docs/analyzer.md, "Where a step
begins"). Checked: every step of both ranks within its iteration's
brackets, and in the ranks view the waits outside every step caused by
rank 0, the one that saved.
"""
import json
import os

import pytest

pytest.importorskip("torch.distributed")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

import ranks_job  # noqa: E402
from analyzer_cli import analyzer_json  # noqa: E402
from test_step_shapes import CLOCK_SLACK_S, loop_bounds  # noqa: E402

JOB = """
import json, os, sys, time
import dftracer.python  # noqa: F401  (DFTRACER_ENABLE: traced from here; DFTRACER_TRACE_EAGER once torch is imported)
import torch, torch.distributed as dist, torch.nn as nn
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
data = [(torch.randn(64, 256), torch.randint(0, 10, (64,))) for _ in range(4)]
out = sys.argv[1]
its = []
for epoch in range(3):
    for x, y in data:
        t0 = time.perf_counter()
        opt.zero_grad()
        t0b = time.perf_counter()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        t1a = time.perf_counter()
        opt.step()
        its.append([t0, t0b, t1a, time.perf_counter(), epoch])
    if rank == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, os.path.join(out, "ckpt.pt"))
    dist.barrier()
with open(os.path.join(out, f"loop{rank}.json"), "w") as f:
    json.dump(its, f)
del ddp, opt
import gc
gc.collect()
dist.barrier()
dist.destroy_process_group()
"""


def test_the_barrier_after_rank_0s_save_is_outside_every_ranks_steps(tmp_path):
    script = tmp_path / "epoch_save.py"
    script.write_text(JOB)
    d = tmp_path / "trace"
    d.mkdir()
    proc, files = ranks_job.torchrun(str(d), 2, str(script), [str(tmp_path)], timeout=240,
                                     env={"DFTRACER_TRACE_EAGER": "1"})
    assert proc.returncode == 0, f"torchrun failed\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert len(files) == 2, files
    for rank in (0, 1):
        [path] = [f for f in files if f"-rank{rank}-" in os.path.basename(f)]
        with open(tmp_path / f"loop{rank}.json") as f:
            its = json.load(f)
        doc = analyzer_json("summary", path, "--by", "step")
        rows = doc["steps"]
        bounds = loop_bounds(its, "optimizer")
        assert len(rows) == len(bounds) == 12, (rank, [r["duration_us"] for r in rows])
        for i, (r, (lo, hi)) in enumerate(zip(rows, bounds)):
            g = r["duration_us"] / 1e6
            assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, \
                f"rank {rank} step {i}: {g * 1e3:.3f} ms ({r['comm_us']:.0f} us comm), the loop's brackets " \
                f"{lo * 1e3:.3f}..{hi * 1e3:.3f} ms"
    ranks = analyzer_json("ranks", str(d))
    cols = ranks["stragglers"]["columns"]
    outside = [dict(zip(cols, row)) for row in ranks["stragglers"]["rows"] if row[0] == -1]
    assert outside and outside[0]["straggler"] == 0 and outside[0]["caused_wait_us"] > 0, outside
