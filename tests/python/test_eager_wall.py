"""An eager run's forward and backward wall time (`summary --by category`)
against perf_counter brackets the traced process writes around each
`model(x)` and each `loss.backward()`.

The Python time between a forward's ATen ops (module `__call__`, hooks, the
forward's own Python) and inside `loss.backward()` (the engine's start, a
tensor hook) is in no op event: the thread's outermost module call and the
`Tensor.backward` call are one event each (docs/torch.md, "What is
recorded"), so that time is forward and backward, not untraced.
"""
import json
import os
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import trace_files

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

# Gradient accumulation, eager or torch.compile(model): each forward sleeps
# 3 ms in Python between its ops, each backward 3 ms in a tensor hook; the
# steps' optimizer and the loop's own time sleep outside both brackets.
_SCRIPT = """
import json, os, time, torch
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 8)
    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if not torch.compiler.is_compiling():
            time.sleep(0.003)  # Python logic between the ops
        return self.fc2(h)

model = Block()
call = torch.compile(model) if {compiled} else model
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
fwd = bwd = 0.0
with trace_eager():
    if {compiled}:  # compiles (again: the observer's module hooks are guarded on)
        t0 = time.perf_counter()
        loss = call(x).square().mean()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        with torch.no_grad():
            call(x)
        fwd += t1 - t0 + time.perf_counter() - t2
        bwd += t2 - t1
        opt.zero_grad()
    for step in range({steps}):
        for micro in range(2):
            t0 = time.perf_counter()
            out = call(x)
            t1 = time.perf_counter()
            out.register_hook(lambda g: time.sleep(0.003))
            loss = out.square().mean()
            t2 = time.perf_counter()
            loss.backward()
            t3 = time.perf_counter()
            fwd += t1 - t0
            bwd += t3 - t2
            time.sleep(0.002)
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            t0 = time.perf_counter()
            call(x)
            fwd += time.perf_counter() - t0
        time.sleep(0.002)
log.finalize()
json.dump({{"forward_s": fwd, "backward_s": bwd}}, open(os.path.join(os.environ["TRACE_DIR"], "truth.json"), "w"))
"""


def run(tmp_path, compiled, steps):
    from conftest import run_python_in

    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), _SCRIPT.format(compiled=bool(compiled), steps=int(steps)),
                  env={"TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1"}, timeout=300)
    [path] = trace_files(str(d))
    return path, json.load(open(d / "truth.json"))


def summary(path, by):
    p = subprocess.run([analyzer_exe(), "summary", path, "--by", by, "--format", "json", "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_forward_and_backward_wall_match_the_program_brackets(tmp_path, compiled):
    steps = 2 if compiled else 4  # compiling takes seconds
    path, truth = run(tmp_path, compiled, steps)
    rows = {r["category"]: r for r in summary(path, "category")["rows"]}
    fwd_ms = truth["forward_s"] * 1e3
    bwd_ms = truth["backward_s"] * 1e3
    # (the evaluation forwards, grad off, are forward time too: phase inference)
    got_fwd_ms = rows["forward"]["wall_us"] / 1e3
    got_bwd_ms = rows["backward"]["wall_us"] / 1e3
    if compiled:
        # the first calls compile (first in the split), inside the brackets
        compile_ms = rows["compile"]["wall_us"] / 1e3
        assert got_fwd_ms + got_bwd_ms + compile_ms == pytest.approx(fwd_ms + bwd_ms, rel=0.1), rows
        assert got_bwd_ms >= 0.9 * 2 * steps * 3, rows  # the hooks' sleeps at least
    else:
        assert got_fwd_ms == pytest.approx(fwd_ms, rel=0.1), rows
        assert got_bwd_ms == pytest.approx(bwd_ms, rel=0.1), rows
    assert got_fwd_ms <= fwd_ms * 1.02 and got_bwd_ms <= bwd_ms * 1.02, rows

    names = {r["name"]: r for r in summary(path, "name")["rows"]}
    call = names["nn.Module: Block"]
    # two training forwards and one evaluation per step (and the compiling ones)
    assert call["count"] == 3 * steps + 2 * compiled
    assert names["Tensor.backward"]["count"] == 2 * steps + compiled
    if not compiled:
        # their own time is the Python time between the ops: the sleeps at least
        assert call["self_us"] >= 3 * steps * 3000 * 0.95
        # (a tensor hook runs inside its autograd node's event: the node's time)
        assert 0 < names["Tensor.backward"]["self_us"] < 2 * steps * 3000
