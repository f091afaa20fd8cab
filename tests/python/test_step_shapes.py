"""Steps in the loop shapes users write (step_shapes.py), each compared with
the loop's own perf_counter: `summary --by step` finds one step per
iteration, each as long as the iteration (within 1 % or 1 ms), DataLoader
workers have none, and compile time never exceeds the step that compiled.
Also `ranks` on a torchrun job: the end-of-job barrier is in no step."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402
from trace_reader import read_all  # noqa: E402


def run_shape(shape, out_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1"})
    proc = subprocess.run([sys.executable, os.path.join(HERE, "step_shapes.py"), shape, str(out_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(out_dir, "loop.times")) as f:
        return [end - start for start, end in json.load(f)["steps"]]


def steps_json(path):
    out = subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_steps_match_the_loop(doc, loop_s):
    rows = doc["steps"]
    got = [r["duration_us"] / 1e6 for r in rows]
    assert len(got) == len(loop_s), (got, loop_s)
    for i, (g, want) in enumerate(zip(got, loop_s)):
        if rows[i]["end_estimated"]:
            # Marks without a region: nothing in the trace ends the last
            # iteration; its end is the others' usual shape (their top-level
            # events and untraced tail), so it is compared more loosely.
            assert i == len(rows) - 1
            assert abs(g - want) <= max(0.1 * want, 0.002), f"last step {g:.6f} s, the loop measured {want:.6f} s"
            continue
        assert abs(g - want) <= max(0.01 * want, 0.001), f"step {i}: {g:.6f} s, the loop measured {want:.6f} s"
    for r in rows:
        parts = sum(r[f"{c}_us"] for c in ("compile", "forward", "backward", "optimizer", "comm", "data", "other"))
        assert parts + r["untraced_us"] == pytest.approx(r["duration_us"], abs=0.01)
        assert r["compile_us"] <= r["duration_us"]
    assert rows[0]["compile_us"] > 0.5 * rows[0]["duration_us"]  # the first step compiled
    assert all(r["compile_us"] == 0 for r in rows[1:])


@pytest.mark.parametrize("shape,source", [("epoch_regions", "region"), ("compile_update", "marks"),
                                          ("dynamo_forward", "marks"), ("dataloader", "region")])
def test_steps_are_the_loop_iterations(tmp_path, shape, source):
    loop = run_shape(shape, tmp_path)
    doc = steps_json(tmp_path)
    with_steps = [p for p in doc["processes"] if p["steps"]]
    assert len(with_steps) == 1, doc["processes"]
    assert with_steps[0]["source"] == source
    assert_steps_match_the_loop(doc, loop)
    if shape in ("compile_update", "dynamo_forward"):
        # the backward is in the steps, not only the forward calls
        assert all(r["backward_us"] > 0 for r in doc["steps"])
        # one step mark per change of the value (update(step=) twice in a row: one mark),
        # and the eager optimizer's steps are events of their own
        events = [e for evs in read_all(str(tmp_path)).values() for e in evs]
        marks = [e for e in events if e.get("ph") == "i" and e["name"] == "step" and e.get("cat") == "dftracer"]
        assert [m["args"]["step"] for m in marks] == list(range(len(loop)))
        opt = [e for e in events if e.get("ph") == "X" and e["name"] == "Optimizer.step#SGD.step"]
        assert len(opt) == len(loop)
        assert all(r["optimizer_us"] > 0 for r in doc["steps"])
    if shape == "dataloader":
        helpers = [p for p in doc["processes"] if p["source"] == "helper"]
        assert len(helpers) >= 2 and all(p["steps"] == 0 for p in helpers)
        assert with_steps[0]["region"] == "step"


def test_the_end_of_job_barrier_is_in_no_step(tmp_path):
    import ranks_job

    proc, files = ranks_job.run_job(str(tmp_path), 2, steps=4, compile=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([analyzer(), "ranks", "--format", "json"] + files, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)

    def table(name):
        t = doc[name]
        return [dict(zip(t["columns"], row)) for row in t["rows"]]

    barrier = [c for c in table("collectives") if c["name"] == "barrier"]
    assert barrier and all(c["step"] == -1 for c in barrier), barrier
    for rank in (0, 1):
        with open(tmp_path / f"ddp-rank{rank}.json") as f:
            times = json.load(f)["step_times"]
        # iterations: start to the next start; the last to its end
        loop = [b[0] - a[0] for a, b in zip(times, times[1:])] + [times[-1][1] - times[-1][0]]
        rows = [r for r in table("steps") if r["rank"] == rank and r["step"] >= 0]
        got = [r["duration_us"] / 1e6 for r in sorted(rows, key=lambda r: r["step"])]
        assert len(got) == len(loop)
        for g, want in zip(got, loop):
            assert abs(g - want) <= max(0.01 * want, 0.001), (rank, got, loop)
