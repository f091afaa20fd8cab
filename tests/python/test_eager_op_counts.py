"""Eager op counts against torch.profiler: a training step of a small model
with dropout, scalar arithmetic and a softmax, traced by the LibTorch
observer, and the same step profiled by torch.profiler in another process.
Every aten op is counted as torch.profiler counts it (its key_averages):
an overload redispatching to another of the same name (dropout's
``div_(Scalar)`` calling ``div_(Tensor)``, ``mul`` by a Python float) is one
op, not two nested events. (torch.profiler merges such a child only when it
is its parent's only child; this model runs no op where that differs, see
docs/torch.md.)
"""
import json
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import trace_files

pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

STEP = """
import json, os, torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 16)


def step():
    opt.zero_grad()
    y = model(x) * 0.5 + 1.0
    (y.softmax(-1) / 3.0).sum().backward()
    opt.step()


step()  # the first step allocates the gradients and warms up outside both records
if os.environ["MODE"] == "profile":
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(2):
            step()
    counts = {e.key: e.count for e in p.key_averages() if e.key.startswith("aten::")}
    json.dump(counts, open(os.environ["OUT"], "w"))
else:
    from dftracer.python import dftracer, trace_eager
    log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
    with trace_eager():
        for _ in range(2):
            step()
    log.finalize()
"""


def test_aten_op_counts_are_torch_profilers(tmp_path):
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), STEP, env={"MODE": "trace", "TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1"},
                  timeout=300)
    out = tmp_path / "profile.json"
    run_python_in(str(tmp_path), STEP, env={"MODE": "profile", "OUT": str(out)}, timeout=300)
    with open(out) as f:
        want = json.load(f)
    [path] = trace_files(str(d))
    p = subprocess.run([analyzer_exe(), "summary", path, "--format", "json", "--no-progress"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = {r["name"]: r["count"] for r in json.loads(p.stdout)["rows"] if r["name"].startswith("aten::")}
    assert want.get("aten::div_", 0) > 0 and want.get("aten::mul", 0) > 0, want
    assert got == want
