"""Eager loops (the LibTorch observer on) with work around their optimizer
steps that is the loop's own, each iteration bracketed by perf_counter; the
steps must lie within the brackets.

- `running`: the loss added to a running one after each optimizer step
  (`running += loss.detach()`), with parameter copies made right before the
  loop (an EMA's `p.detach().clone()`, a counter's `add_`). Every later step
  opens with the previous iteration's tail, which the first iteration has
  not: looking for its ops, the first step began in the set-up, which runs
  the same ops (a DDP wrapper's construction did on a 2-rank job).
- `lognorm`: every 5 steps, the batch accuracy and the weight and gradient
  norms logged under no_grad and printed. Many grad-off ops and no model
  call: the loop's own logging, not an evaluation (they were cut out of
  their steps).
"""
import json

import pytest

pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

from conftest import run_python_in  # noqa: E402
from test_step_shapes import CLOCK_SLACK_S, steps_json  # noqa: E402

LOOP = """
import json, os, sys, time, torch
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
shape = sys.argv[1]
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
nn = torch.nn
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = [(torch.randn(64, 128), torch.randint(0, 10, (64,))) for _ in range(4)]
its = []
with trace_eager():
    shadow = [p.detach().clone() for p in model.parameters()]
    running = torch.zeros(())
    running.add_(1.0)
    for step in range(1, 31):
        x, y = data[step % 4]
        t0 = time.perf_counter()
        opt.zero_grad()
        t0b = time.perf_counter()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        t1a = time.perf_counter()
        opt.step()
        t1 = time.perf_counter()
        if shape == "running":
            running += loss.detach()
        elif step % 5 == 0:
            with torch.no_grad():
                acc = (out.argmax(-1) == y).float().mean()
                wn = torch.stack([p.norm() for p in model.parameters()]).norm()
                gn = torch.stack([p.grad.norm() for p in model.parameters()]).norm()
            print(f"step {step} acc {acc.item():.3f} |w| {wn.item():.2f} |g| {gn.item():.3f}", flush=True)
        its.append([t0, t0b, t1a, t1, 0])
log.finalize()
with open(os.path.join(os.path.dirname(os.environ["TRACE_DIR"]), "loop.json"), "w") as f:
    json.dump(its, f)
"""


def step_bounds(its):
    """(lo, hi) seconds for each step of an optimizer-ended loop without
    evaluations: step k > 0 runs from optimizer step k-1's end (inside
    [t1a, t1] of iteration k-1) to its own, so the work after an optimizer
    step (a running loss, logging) is the next step's; the first begins at
    its zero_grad, inside [t0, t0b]."""
    out = [(its[0][2] - its[0][1], its[0][3] - its[0][0])]
    for prev, cur in zip(its, its[1:]):
        out.append((cur[2] - prev[3], cur[3] - prev[2]))
    return out


@pytest.mark.parametrize("shape", ["running", "lognorm"])
def test_the_loops_own_work_around_its_optimizer_steps_stays_in_them(tmp_path, shape):
    d = tmp_path / "trace"
    d.mkdir()
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    run_python_in(str(tmp_path), f"import runpy, sys; sys.argv = ['loop.py', {shape!r}]; "
                  f"runpy.run_path({str(script)!r}, run_name='__main__')", env={"TRACE_DIR": str(d)}, timeout=300)
    with open(tmp_path / "loop.json") as f:
        its = json.load(f)
    rows = steps_json(d)["steps"]
    bounds = step_bounds(its)
    assert len(rows) == len(bounds) == 30, [r["duration_us"] for r in rows]
    for i, (r, (lo, hi)) in enumerate(zip(rows, bounds)):
        g = r["duration_us"] / 1e6
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, \
            f"step {i}: {g * 1e3:.3f} ms, the loop's brackets {lo * 1e3:.3f}..{hi * 1e3:.3f} ms"
    # no evaluation, no checkpoint: nothing between two steps is outside them
    # (the brackets, an optimizer step wide, are too loose to show it)
    for prev, cur in zip(rows, rows[1:]):
        assert abs(cur["start_us"] - (prev["start_us"] + prev["duration_us"])) <= 1, (prev, cur)
