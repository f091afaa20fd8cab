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
from eager_training import eager_training_trace
from test_analyze_self_time import analyzer_exe
from trace_reader import read_trace

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)


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
    path = eager_training_trace(tmp_path, 3)
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
