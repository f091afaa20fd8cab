"""`summary --by category` on an eager training run (the LibTorch observer,
no torch.compile): the backward is `backward`, the forward `forward`.

The observer writes each eager event's phase (docs/torch.md); the autograd
node events (cat `autograd`) hold the ops the engine runs. The ground truth
is computed from the trace itself: the union of the nodes' intervals, less
the instants of the categories that come first in the wall split (compile,
optimizer). A trace written before the observer wrote phases (the same
trace with every `phase` arg removed) still reads as it did: the nodes are
backward by their cat, the forward's ops `other`.
"""
import json
import subprocess

import pytest
from eager_training import eager_training_trace
from test_analyze_self_time import analyzer_exe
from trace_reader import read_trace, read_trace_text, union_ns

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)


def without_phases(path, out):
    """`path`'s events with no `phase` arg, as the observer wrote them before."""
    with open(out, "w") as f:
        for line in read_trace_text(path).splitlines():
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            e = json.loads(line)
            e.get("args", {}).pop("phase", None)
            f.write(json.dumps(e) + "\n")
    return out


def categories(path):
    p = subprocess.run([analyzer_exe(), "summary", path, "--by", "category", "--format", "json", "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {r["category"]: r for r in json.loads(p.stdout)["rows"]}


def test_an_eager_backward_is_backward_time(tmp_path):
    path = eager_training_trace(tmp_path, 3)
    events = [e for e in read_trace(path) if e.get("ph") == "X"]
    autograd = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in events if e.get("cat") == "autograd"]
    assert len(autograd) >= 3 * 5, "an autograd node event per node the engine ran"
    first = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in events
             if e.get("cat") == "compile" or e["name"].startswith("Optimizer.")]
    backward = [e for e in events if e.get("args", {}).get("phase") == "backward"]
    # loss.backward()'s seed gradient, made before the engine runs any node
    seed = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in backward
            if e.get("cat") != "autograd" and not any(a <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= b
                                                      for a, b in autograd)]
    assert seed, "the seed of each backward() call is backward work"
    # The autograd nodes' and seeds' instants that no compile or optimizer event holds.
    want_ns = union_ns(autograd + seed + first) - union_ns(first)
    # Without phases (traces written before them) a seed is not backward.
    want_old_ns = union_ns(autograd + first) - union_ns(first)
    forward = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in events if e.get("args", {}).get("phase") == "forward"]

    rows = categories(path)
    # the nodes and the ops they run
    assert rows["backward"]["count"] == len(backward) > len(autograd)
    assert rows["backward"]["wall_us"] == pytest.approx(want_ns / 1000, abs=0.002)
    assert rows["forward"]["wall_us"] > 0 and forward
    # the forward ops' instants that no optimizer or backward event holds
    first_bwd = first + autograd + seed
    assert rows["forward"]["wall_us"] == pytest.approx((union_ns(forward + first_bwd) - union_ns(first_bwd)) / 1000,
                                                       abs=0.002)

    old = categories(without_phases(path, str(tmp_path / "old.pfw")))
    assert old["backward"]["count"] == len(autograd)
    assert old["backward"]["wall_us"] == pytest.approx(want_old_ns / 1000, abs=0.002)
    assert old["forward"]["wall_us"] == 0  # eager ops without a phase are other
