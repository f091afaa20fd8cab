"""Steps of loops whose optimizer steps are not one per iteration
(optimizer_cycle_loops.py): two optimizers per iteration (a GAN), a
GradScaler skipping the optimizer step of some iterations, and a region
around the optimizer step alone. `summary --by step` finds one step per
iteration in each: the GAN's cycle ends with its last optimizer (the hooks'
args.opt), a `train_step` region holding both optimizer steps, or none in a
skipped iteration, is the step, and an `update` region is not."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402

# The trace's clock against perf_counter over one step: rate and the file's
# microsecond rounding.
CLOCK_SLACK_S = 100e-6


@pytest.mark.parametrize("shape,source,region", [
    ("gan", "optimizer", "Optimizer.step#Adam.step"),
    ("gan_eager", "optimizer", "Optimizer.step#Adam.step"),
    ("gan_region", "region", "train_step"),
    ("skip_region", "region", "train_step"),
    ("update", "optimizer", "Optimizer.step#Adam.step"),
])
def test_one_step_per_iteration(tmp_path, shape, source, region):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    if shape == "gan_eager":
        env["DFTRACER_TRACE_EAGER"] = "1"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "optimizer_cycle_loops.py"), shape, str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "loop.json") as f:
        its = json.load(f)["iterations"]
    out = subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    with_steps = [p for p in doc["processes"] if p["steps"]]
    assert len(with_steps) == 1, doc["processes"]
    assert (with_steps[0]["source"], with_steps[0]["region"]) == (source, region)
    assert len(doc["steps"]) == len(its)
    if source == "region":  # each step holds its iteration's region, up to the next one's start
        for row, (_, t0b, t1a, _) in zip(doc["steps"], its):
            assert row["duration_us"] / 1e6 >= (t1a - t0b) - CLOCK_SLACK_S
