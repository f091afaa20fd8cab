"""Eager phases: the LibTorch observer writes `args.phase` on eager events
(forward, backward, optimizer, inference: the values the capture backend
writes on compiled ones), and the analyzer's phase views follow.

The ground truth is the traced program's own regions: it wraps each phase of
an eager training loop (zero_grad, forward, loss.backward(), clip_grad_norm_,
opt.step()) and a `torch.no_grad()` evaluation forward (after the step, and
one between backward() and the clipping) in a region of its own, either a
dftracer region (`dft_fn`, which the observer does not see) or torch's
`record_function` (a RecordFunction scope the observer records, carrying no
phase of its own: a wrapper region says nothing about the work inside it).
Every op inside a region must carry that region's phase, on whatever thread
it ran. The model turns grad mode off inside its training forward (a frozen
layer under no_grad, a reentrant activation checkpoint): still forward work.
"""
import json
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import read_trace, trace_files, union_ns

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

TRAINING = """
import contextlib, os, sys, torch
from dftracer.python import dftracer, dft_fn, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
class Block(torch.nn.Module):
    # Grad mode off inside a training forward: a frozen layer under no_grad,
    # and a reentrant activation checkpoint (its segment runs under no_grad,
    # then again in backward): forward work all the same.
    def __init__(self):
        super().__init__()
        self.frozen = torch.nn.Linear(32, 32).requires_grad_(False)
        self.inp = torch.nn.Linear(32, 64)
        self.seg = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())

    def forward(self, x):
        with torch.no_grad(), torch.profiler.record_function("frozen_scope"):
            x = self.frozen(x)
        return torch.utils.checkpoint.checkpoint(self.seg, self.inp(x), use_reentrant=True)


model = torch.nn.Sequential(Block(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(16, 32), torch.randn(16, 8)


def region(name):
    # dft_fn: a dftracer region; record_function: a scope the observer records (cat torch)
    if os.environ["REGIONS"] == "dft_fn":
        return dft_fn("truth", name)
    return torch.profiler.record_function("truth." + name)


with trace_eager():
    for _ in range(3):
        with region("zero_grad"):
            opt.zero_grad(set_to_none=False)  # zero_ ops under torch's Optimizer.zero_grad scope
        with region("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with region("backward"):
            loss.backward()
        with torch.no_grad():
            with region("probe"):  # a model call between backward() and the update: an evaluation's
                model(x)
        with region("clip"):  # gradient processing, under no_grad: the update's
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with region("step"):
            opt.step()
        with torch.no_grad():
            with region("eval"):
                model(x).argmax(-1)
log.finalize()
"""

# A region's name -> the phase of every op inside it.
WANT = {"zero_grad": "optimizer", "forward": "forward", "backward": "backward", "probe": "inference",
        "clip": "optimizer", "step": "optimizer", "eval": "inference"}


def run_training(tmp_path, regions):
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), TRAINING, env={"TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1", "REGIONS": regions},
                  timeout=300)
    [path] = trace_files(str(d))
    return path, [e for e in read_trace(path) if e.get("ph") == "X"]


def truth_regions(events):
    out = []
    for e in events:
        if e.get("cat") == "truth":
            out.append((e["name"], e))
        elif e.get("cat") == "torch" and e["name"].startswith("truth."):
            out.append((e["name"][len("truth."):], e))
    return out


def inside(e, r):
    return r["ts_ns"] <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= r["ts_ns"] + r["dur_ns"]


def analyze(*args):
    p = subprocess.run([analyzer_exe(), *args, "--format", "json", "--no-progress"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("regions", ["dft_fn", "record_function"])
def test_every_eager_op_carries_its_regions_phase(tmp_path, regions):
    path, events = run_training(tmp_path, regions)
    truth = truth_regions(events)
    assert sorted(n for n, _ in truth) == sorted(list(WANT) * 3)
    ops = [e for e in events if e.get("cat") in ("aten", "autograd")]
    # The seed gradient loss.backward() makes in Python before the engine
    # starts (ones_like of the scalar loss, and what runs in it), outside any
    # node with grad mode on, is backward work like the rest.
    seeds = [e for e in ops if e["name"] == "aten::ones_like"]
    assert len(seeds) == 3
    assert all(any(n == "backward" and inside(s, r) for n, r in truth) for s in seeds), seeds
    assert all(s["args"].get("phase") == "backward" for s in seeds), seeds
    seen = {name: 0 for name in WANT}
    for name, r in truth:
        for e in ops:
            if not inside(e, r):
                continue
            seen[name] += 1
            phase = e.get("args", {}).get("phase")
            assert phase == WANT[name], f"{e['name']} (tid {e.get('tid')}) inside {name}: phase {phase!r}"
    assert all(n > 0 for n in seen.values()), seen
    # torch's own optimizer scopes are optimizer work; the nodes backward
    for e in events:
        if e["name"].startswith("Optimizer."):
            assert e["args"].get("phase") == "optimizer", e
        if e.get("cat") == "autograd":
            assert e["args"].get("phase") == "backward", e
    # the reentrant checkpoint's CheckpointFunction (a custom autograd
    # Function's apply) inside the training forward is the forward's own time
    fns = [e for e in events if e["name"] == "CheckpointFunction" and any(
        n == "forward" and inside(e, r) for n, r in truth)]
    assert len(fns) == 3 and all(e["args"].get("phase") == "forward" for e in fns), fns
    # so is a scope opened under no_grad inside it (the frozen layer's)
    frozen = [e for e in events if e["name"] == "frozen_scope" and any(
        n == "forward" and inside(e, r) for n, r in truth)]
    assert len(frozen) == 3 and all(e["args"].get("phase") == "forward" for e in frozen), frozen
    # a wrapper region the observer records says nothing about the work in it
    for name, r in truth:
        assert "phase" not in r.get("args", {}), r
    # the grad-off forward's outermost ops still say so
    evals = [r for n, r in truth if n == "eval"]
    assert any(e.get("args", {}).get("grad") == 0 for e in events for r in evals if inside(e, r))

    # Per phase, the analyzer's tables need no eager special case.
    rows = {r["phase"]: r for r in analyze("summary", path, "--by", "phase")["rows"]}
    for phase in ("forward", "backward", "optimizer", "inference"):
        assert rows[phase]["count"] == sum(1 for e in events if e.get("args", {}).get("phase") == phase), phase
    import dftracer.analyze as da  # the Python API reads the same phases
    df = da.summary(path, by="phase").set_index("phase")
    for phase in ("forward", "backward", "optimizer", "inference"):
        assert df.loc[phase, "count"] == rows[phase]["count"], phase
    cats = {r["category"]: r for r in analyze("summary", path, "--by", "category")["rows"]}
    # The forward's and the evaluation's instants are forward time: the ops
    # in those regions cover them (the regions' own time outside their ops is
    # the Python between the ops, untraced), and no forward time lies
    # outside the regions that hold forward work.
    fwd_regions = [r for n, r in truth if n in ("forward", "probe", "eval")]
    covered = union_ns([(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in ops for r in fwd_regions if inside(e, r)])
    region_ns = sum(r["dur_ns"] for r in fwd_regions)
    assert covered > 0
    assert cats["forward"]["wall_us"] >= covered / 1000 - 0.002
    assert cats["forward"]["wall_us"] <= region_ns / 1000 + 0.002

