"""`summary --by category` on an eager training run (the LibTorch observer,
no torch.compile): the backward is `backward`, not `other`.

Eager ops carry no phase; what says backward is the autograd node events
the observer writes around the ops the engine runs (cat `autograd`). The
ground truth is computed from the trace itself: the union of those events'
intervals, less the instants of the categories that come first in the wall
split (compile, optimizer).
"""
import json
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import read_trace, trace_files

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

TRAINING = """
import os, torch
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
with trace_eager():
    for _ in range(3):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
log.finalize()
"""


def union_ns(intervals):
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def test_an_eager_backward_is_backward_time(tmp_path):
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), TRAINING, env={"TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1"}, timeout=300)
    [path] = trace_files(str(d))
    events = [e for e in read_trace(path) if e.get("ph") == "X"]
    autograd = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in events if e.get("cat") == "autograd"]
    assert len(autograd) >= 3 * 5, "an autograd node event per node the engine ran"
    first = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in events
             if e.get("cat") == "compile" or e["name"].startswith("Optimizer.")]
    # The autograd nodes' instants that no compile or optimizer event holds.
    want_ns = union_ns(autograd + first) - union_ns(first)

    p = subprocess.run([analyzer_exe(), "summary", path, "--by", "category", "--format", "json", "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {r["category"]: r for r in json.loads(p.stdout)["rows"]}
    assert rows["backward"]["count"] == len(autograd)
    assert rows["backward"]["wall_us"] == pytest.approx(want_ns / 1000, abs=0.002)
    assert rows["forward"]["wall_us"] == 0  # eager ops carry no phase
