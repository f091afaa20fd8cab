"""Compile time of a plain torch.compile (a backend not ours) in a process
that never imports dftracer.python.dynamo: DFTRACER_ENABLE=1 and the
program's own loop. The compile phases and optimizer steps are recorded all
the same, so `summary --by category` gives compile its wall time (what
Dynamo's own timer measured for the frame compile, within 5 %, and at most
the first iteration) and the steps are the optimizer's."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402

STEPS = 4

LOOP = textwrap.dedent("""
    import json, os, sys, time
    import torch
    from dftracer.python import dftracer
    out = sys.argv[1]
    log = dftracer.initialize_log(os.path.join(out, "run"), None, -1)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    f = torch.compile(m, backend="aot_eager")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    last = int(sys.argv[2])  # the last batch's size: a smaller one recompiles
    its = []
    for i in range({steps}):
        x = torch.randn(last if i == {steps} - 1 else 16, 64)
        t0 = time.perf_counter()
        f(x).sum().backward()
        opt.step()
        opt.zero_grad()
        its.append([t0, time.perf_counter()])
    log.finalize()
    from torch._dynamo.utils import compilation_time_metrics
    frames = compilation_time_metrics.get("_compile.compile_inner", [])
    assert "dftracer.python.dynamo" not in sys.modules
    with open(os.path.join(out, "loop.json"), "w") as fh:
        json.dump({{"iterations": its, "frame_compile_s": sum(frames), "first_compile_s": frames[0]}}, fh)
""").format(steps=STEPS)


def analyze(*args):
    out = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("last", [16, 5])
def test_plain_torch_compile_time_and_steps_are_recorded(tmp_path, last):
    """last=5: the last batch smaller, as a DataLoader's without drop_last:
    that step recompiles and calls the frame's second graph ("0/1"), and the
    first compile must still be the first step's (with the ops traced it
    once fell outside every step: the later steps no longer all called
    "0/0")."""
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    if last != 16:  # the ops and the frames' "Torch-Compiled Region: 0/N" calls, which the steps are found on
        env["DFTRACER_TRACE_EAGER"] = "1"
    traces = tmp_path / "traces"
    traces.mkdir()
    proc = subprocess.run([sys.executable, str(script), str(traces), str(last)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(traces / "loop.json") as f:
        loop = json.load(f)
    os.remove(traces / "loop.json")
    first = loop["iterations"][0][1] - loop["iterations"][0][0]
    assert loop["frame_compile_s"] > 0

    doc = json.loads(analyze("summary", "--by", "category", "--format", "json", str(traces)))
    compile_s = {r["category"]: r for r in doc["rows"]}["compile"]["wall_us"] / 1e6
    # Our events span torch's timed phases (their timers inside ours), the
    # backward's lazy compile included, all within the first iteration;
    # Dynamo's own total for the frame compile (_compile.compile_inner) also
    # counts its bookkeeping around the phases.
    # all within the first iteration, and the last where it recompiles.
    recompiled = loop["iterations"][-1][1] - loop["iterations"][-1][0] if last != 16 else 0
    assert 0.95 * loop["frame_compile_s"] <= compile_s <= first + recompiled, (loop, compile_s, first)

    steps = json.loads(analyze("summary", "--by", "step", "--format", "json", str(traces)))
    assert [p["source"] for p in steps["processes"] if p["steps"]] == ["optimizer"]
    assert len(steps["steps"]) == STEPS
    if last == 16:
        assert steps["steps"][0]["compile_us"] / 1e6 == pytest.approx(compile_s, abs=1e-6)
    else:  # the recompile is the last step's
        assert steps["steps"][0]["compile_us"] / 1e6 >= 0.95 * loop["first_compile_s"], (steps["steps"][0], loop)
        assert steps["steps"][-1]["compile_us"] > 0, steps["steps"][-1]
    # The plain backend's graphs are not traced, and the process says so
    # (with the ops traced eagerly they are).
    assert last != 16 or "nothing of it is traced" in proc.stderr, proc.stderr[-2000:]
