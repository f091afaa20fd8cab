"""Steps of inference loops that mark none (inference_loops.py): no region,
no update(step=...), no optimizer; one forward per batch under no_grad or
inference_mode, compiled (Inductor under the LibTorch observer, the capture
backend, with a graph break) or eager under the observer, with and without a
DataLoader. `summary --by step` finds one step per iteration (source
`inference`), each as long as the loop's perf_counter brackets allow; the
first
call's compile is in the first step; the last step ends with the last
iteration's last call."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_step_shapes import CLOCK_SLACK_S, loop_bounds, steps_json  # noqa: E402
from trace_reader import read_all  # noqa: E402


def run_loop(shape, out_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    if not shape.startswith("capture"):
        env["DFTRACER_TRACE_EAGER"] = "1"  # the observer: eager ops, torch's scope around an Inductor call
    proc = subprocess.run([sys.executable, os.path.join(HERE, "inference_loops.py"), shape, str(out_dir)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(out_dir, "loop.times")) as f:
        return json.load(f)["iterations"]


@pytest.mark.parametrize("shape", ["compile-nograd", "capture-nograd", "capture-infmode-break", "capture-nograd-loader",
                                   "eager-nograd", "eager-infmode", "eager-nograd-loader", "eager-infmode-loader",
                                   "compile-nograd-multi", "capture-nograd-multi", "eager-nograd-multi", "eager-infmode-multi",
                                   "eager-nograd-multi-tight", "eager-infmode-multi-tight",
                                   "compile-nograd-recompile", "capture-nograd-recompile",
                                   "compile-nograd-midrecompile", "capture-nograd-midrecompile",
                                   "eager-infmode-gpt2", "eager-nograd-loader-gpt2"])
def test_inference_steps_are_the_loop_iterations(tmp_path, shape):
    its = run_loop(shape, tmp_path)
    doc = steps_json(tmp_path)
    with_steps = [p for p in doc["processes"] if p["steps"]]
    assert len(with_steps) == 1, doc["processes"]
    assert with_steps[0]["source"] == "inference", with_steps[0]
    rows = doc["steps"]
    got = [r["duration_us"] / 1e6 for r in rows]
    bounds = loop_bounds(its, "inference")
    assert len(got) == len(bounds), (got, bounds)
    # The iteration whose call recompiles: the last one, or the fourth of 8.
    again = len(its) - 1 if shape.endswith("-recompile") else 3 if shape.endswith("-midrecompile") else None
    if not shape.startswith("eager") and len(its) > 1:
        # The first call's step begins at Dynamo's first traced event: the frame's entry before it
        # (a few ms on the first call, nothing traced) is outside; and its end, next to a wait
        # the long-gap rule may or may not call far beyond, may reach the next iteration's start.
        (t0, t0b, t1a, t1, _), nxt = its[0], its[1]
        bounds[0] = (0.97 * (t1a - t0b), max(bounds[0][1], nxt[1] - t0))
        if again:  # the same for the recompiling call
            t0, t0b, t1a, t1, _ = its[again]
            bounds[again] = (0.97 * (t1a - t0b), bounds[again][1])
            if again + 1 < len(its):
                # Mid-loop, it reaches the next iteration's start (the recompile is no
                # wait, nor is the untraced work after it), whatever the brackets' gaps.
                bounds[again] = (0.97 * (its[again + 1][0] - t0), its[again + 1][1] - t0)
            # The recompile is no wait: the step before reaches its start.
            bounds[again - 1] = (t0 - its[again - 1][1], t1 - its[again - 1][0])
    for i, (g, (lo, hi)) in enumerate(zip(got, bounds)):
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
        assert not rows[i]["end_estimated"]
    if not shape.startswith("eager"):
        assert rows[0]["compile_us"] > 0.5 * rows[0]["duration_us"]  # the first call compiled
        # ... all of its compile: from Dynamo's first trace (of a frame it compiles to no graph, before the model's)
        events = [e for evs in read_all(str(tmp_path)).values() for e in evs]
        first_compile = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") == "compile")
        assert rows[0]["start_us"] <= first_compile, (rows[0], first_compile)
        for i, r in enumerate(rows[1:], 1):
            if i == again:
                assert r["compile_us"] > 0.5 * r["duration_us"], (i, r)
            else:
                assert r["compile_us"] == 0, (i, r)


def test_an_op_and_the_one_op_it_runs_with_the_same_span_are_one_work(tmp_path):
    """In whole microseconds an op and the one op it runs can share their span
    (relu and clamp_min, in two of six iterations of this real trace): the one
    written later holds the other, so each iteration stays one step."""
    import shutil

    data = os.path.join(os.path.dirname(__file__), "..", "data", "steps")
    shutil.copy(os.path.join(data, "eager-infmode-equal-spans.pfw.gz"), tmp_path / "run-1.pfw.gz")
    with open(os.path.join(data, "eager-infmode-equal-spans.times")) as f:
        starts = [it[0] for it in json.load(f)["iterations"]]
    doc = steps_json(tmp_path)
    rows = doc["steps"]
    assert len(rows) == len(starts) == 6, rows
    spacing = [b - a for a, b in zip(starts, starts[1:])]
    for r, want in zip(rows, spacing):  # each step lasts until the next one starts
        assert r["duration_us"] / 1e6 == pytest.approx(want, rel=0.05), (r, want)


@pytest.mark.parametrize("name", ["eager-infmode-multi-tight-zero-length-read", "eager-infmode-multi-tight-preempted"])
def test_a_tight_loop_of_three_calls_an_iteration_keeps_one_step_per_iteration(tmp_path, name):
    """Two real runs of the `eager-infmode-multi-tight` shape, on a 2-core
    machine busy with other tests, where only the grad-on result read sets
    the iterations apart: in one, an iteration's read is all zero-length ops
    (sub-microsecond); in the other, the 113 us after the first iteration
    and a call preempted for 4 ms lie nine calls apart. The step finder once
    found 18 steps (one per call) in the first and one step in the second."""
    import shutil

    data = os.path.join(os.path.dirname(__file__), "..", "data", "steps")
    shutil.copy(os.path.join(data, name + ".pfw.gz"), tmp_path / "run-1.pfw.gz")
    with open(os.path.join(data, name + ".times")) as f:
        its = json.load(f)["iterations"]
    rows = steps_json(tmp_path)["steps"]
    bounds = loop_bounds(its, "inference")
    assert len(rows) == len(bounds) == 6, rows
    for i, (r, (lo, hi)) in enumerate(zip(rows, bounds)):
        g = r["duration_us"] / 1e6
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
