"""Steps of loops that mark none (optimizer_loops.py): no region around an
iteration and no update(step=...), the plainest training loop. The
optimizer's steps end the iterations: `summary --by step` finds one step per
optimizer step taken (not per micro-batch, not per op region torch opens),
each as long as the loop's perf_counter brackets allow, the evaluation
between two steps and the setup before the loop outside them. In eager runs
the observer's phases make forward and backward time, and dft_ai's compute.forward /
compute.backward regions are forward / backward time."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402
from trace_reader import read_trace, trace_files, union_ns  # noqa: E402

# The trace's clock against perf_counter over one step: rate and the file's
# microsecond rounding.
CLOCK_SLACK_S = 100e-6


def run_loop(shape, out_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    if shape.startswith("eager") or shape == "ai":
        env["DFTRACER_TRACE_EAGER"] = "1"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "optimizer_loops.py"), shape, str(out_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(out_dir, "loop.json")) as f:
        return json.load(f)


def analyze(*args):
    out = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def step_bounds(its):
    """(lo, hi) seconds for each iteration's step. A step ends with its
    optimizer step (t_opt..t1) and begins where the one before ended, except
    the first and the one after an evaluation (a wait far longer than the
    usual one, holding the evaluation's work; a wait as long that holds only
    the usual work, the process kept off the model, is its step's): they begin with the iteration's first traced work, between
    t0 and t_fwd."""
    out = []
    for i, (t0, t_fwd, t_opt, t1, _) in enumerate(its):
        if i == 0 or its[i - 1][4]:
            start = (t0, t_fwd)
        else:
            start = (its[i - 1][2], its[i - 1][3])
        out.append((t_opt - start[1], t1 - start[0]))
    return out


@pytest.mark.parametrize("shape", ["compile", "gradacc", "eager", "eager_eval", "eager_eval_scope", "eager_eval_short",
                                   "eager_eval_zg", "eager_eval_short_zg", "eager_eval_prep", "eager_eval_short_prep",
                                   "eager_preempt", "compile_preempt", "eager_eval_every", "eager_scaler",
                                   "compile_scaler", "eager_gradacc_preempt", "eager_closure"])
def test_optimizer_steps_are_the_iterations(tmp_path, shape):
    loop = run_loop(shape, tmp_path)
    its = loop["iterations"]
    doc = analyze("summary", "--by", "step", "--format", "json", str(tmp_path))
    with_steps = [p for p in doc["processes"] if p["steps"]]
    assert len(with_steps) == 1, doc["processes"]
    assert with_steps[0]["source"] == "optimizer", with_steps[0]
    if loop["scale"] is None:
        assert with_steps[0]["region"] == "Optimizer.step#AdamW.step"
    else:  # a GradScaler's steps: its event ends each step, its optimizer's step taken or skipped
        assert with_steps[0]["region"] == "GradScaler.step#AdamW.step"
        assert loop["scale"] == 1024.0 / 4  # the two overflows halved the scale: the scaler skipped both
        events = [e for p in trace_files(str(tmp_path)) for e in read_trace(p) if e.get("ph") == "X"]
        scaler = sorted((e for e in events if e["name"] == "GradScaler.step#AdamW.step"), key=lambda e: e["ts_ns"])
        assert [e["args"]["skipped"] for e in scaler] == [int(i in (0, 3)) for i in range(len(its))]
        assert {e["args"]["opt"] for e in scaler} == {0}
        opt_steps = [e for e in events if e["name"] == "Optimizer.step#AdamW.step"]
        assert len(opt_steps) == len(its) - 2
        # each optimizer step taken inside its scaler's event
        assert all(any(s["ts_ns"] <= o["ts_ns"] and o["ts_ns"] + o["dur_ns"] <= s["ts_ns"] + s["dur_ns"]
                       for s in scaler) for o in opt_steps)
        if shape.startswith("eager"):  # the scaler's own ops, its unscale and its scale's update, are the update's
            ops = [e for e in events if e["name"] in ("aten::_amp_foreach_non_finite_check_and_unscale_",
                                                      "aten::_amp_update_scale_")]
            assert len(ops) == 2 * len(its)
            assert {e["args"].get("phase") for e in ops} == {"optimizer"}, ops
    if shape == "eager_closure":  # the closure's ops inside the optimizer's step: forward, not optimizer
        events = [e for p in trace_files(str(tmp_path)) for e in read_trace(p) if e.get("ph") == "X"]
        scopes = [e for e in events if e["name"] == "Optimizer.step#AdamW.step"]
        inside = [e for e in events if e["name"] in ("aten::linear", "aten::relu")
                  and any(s["ts_ns"] <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= s["ts_ns"] + s["dur_ns"]
                          for s in scopes)]
        assert len(inside) >= 3 * len(its), [e["name"] for e in inside]
        assert {e["args"].get("phase") for e in inside} == {"forward"}, inside[:3]
        calls = [e for e in events if e["name"] == "nn.Module: Sequential"]  # the closure's model call, each step
        assert len(calls) == len(its) and {e["args"].get("phase") for e in calls} == {"forward"}, calls
    rows = doc["steps"]
    got = [r["duration_us"] / 1e6 for r in rows]
    bounds = step_bounds(its)
    assert len(got) == len(its), (got, bounds)  # one step per optimizer step, micro-batches or not
    for i, (g, (lo, hi)) in enumerate(zip(got, bounds)):
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
        assert not rows[i]["end_estimated"]
        assert rows[i]["optimizer_us"] > 0
    if not shape.startswith("eager"):
        assert rows[0]["compile_us"] > 0.5 * rows[0]["duration_us"]  # the first step compiled
        assert all(r["compile_us"] == 0 for r in rows[1:])  # the evaluation's compile is outside
        assert all(r["forward_us"] > 0 and r["backward_us"] > 0 for r in rows)
    else:  # the eager ops' phases
        assert all(r["forward_us"] > 0 and r["backward_us"] > 0 for r in rows)


def test_an_iteration_with_nothing_traced_before_its_optimizer_step(tmp_path):
    """The model untraced (an eager model without the observer, a DDP module
    Dynamo ran eagerly): step k > 0 runs from the end of optimizer step k-1 to
    the end of its own, so each iteration's work is in its own step."""
    its = run_loop("untraced", tmp_path)["iterations"]
    doc = analyze("summary", "--by", "step", "--format", "json", str(tmp_path))
    rows = doc["steps"]
    assert [p["source"] for p in doc["processes"] if p["steps"]] == ["optimizer"]
    assert len(rows) == len(its)
    for i in range(1, len(its)):
        g = rows[i]["duration_us"] / 1e6
        lo, hi = its[i][2] - its[i - 1][3], its[i][3] - its[i - 1][2]
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"


def test_eager_backward_and_dft_ai_compute_are_their_phases(tmp_path):
    loop = run_loop("ai", tmp_path)
    doc = analyze("summary", "--by", "category", "--format", "json", str(tmp_path))
    rows = {r["category"]: r for r in doc["rows"]}
    # Each compute.forward / compute.backward region lies between the loop's
    # perf_counter brackets around it and those inside it. Forward time also
    # holds the eager forward ops outside the regions (the loss, the model's
    # setup): their instants that no region, node or optimizer work holds.
    events = [e for p in trace_files(str(tmp_path)) for e in read_trace(p) if e.get("ph") == "X"]
    span = lambda e: (e["ts_ns"], e["ts_ns"] + e["dur_ns"])  # noqa: E731
    held = [span(e) for e in events if e.get("cat") in ("compute", "autograd") or e["name"].startswith("Optimizer.")
            or e.get("args", {}).get("phase") in ("backward", "optimizer")]
    fwd_ops = [span(e) for e in events if e.get("args", {}).get("phase") in ("forward", "inference")]
    extra = {"forward": (union_ns(fwd_ops + held) - union_ns(held)) / 1e9, "backward": 0}
    assert extra["forward"] > 0
    for cat in ("forward", "backward"):
        got, outer, inner = rows[cat]["wall_us"] / 1e6, loop[f"{cat}_s"], loop[f"{cat}_inside_s"]
        assert inner - CLOCK_SLACK_S <= got <= outer + extra[cat] + CLOCK_SLACK_S, (cat, got, inner, outer, extra)
    steps = analyze("summary", "--by", "step", "--format", "json", str(tmp_path))
    assert len(steps["steps"]) == len(loop["iterations"])
    assert all(r["forward_us"] > 0 and r["backward_us"] > 0 for r in steps["steps"])


@pytest.mark.parametrize("name", ["compile-first-step-preempted", "eager-eval-short-prep-loaded"])
def test_steps_of_real_runs_on_a_loaded_machine_are_the_iterations(tmp_path, name):
    """Two real runs of optimizer_loops.py on a 2-core machine running other
    tests beside them. `compile`: the first iteration was kept off the CPU
    for 8.5 ms between its backward and its optimizer step, longer than any
    later step; the first step once stopped there and held only the
    optimizer step (its compile and forward outside every step).
    `eager_eval_short_prep`: the evaluation's three forwards took less time
    than the usual wait's slowed metric and EMA ops, so its time could not
    tell it; the step after it once held it. Its model calls do."""
    import shutil

    data = os.path.join(HERE, "..", "data", "steps")
    shutil.copy(os.path.join(data, name + ".pfw.gz"), tmp_path / "run-1.pfw.gz")
    with open(os.path.join(data, name + ".loop.json")) as f:
        its = json.load(f)["iterations"]
    rows = analyze("summary", "--by", "step", "--format", "json", str(tmp_path))["steps"]
    bounds = step_bounds(its)
    assert len(rows) == len(bounds), rows
    for i, (r, (lo, hi)) in enumerate(zip(rows, bounds)):
        g = r["duration_us"] / 1e6
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
