"""Steps end to end: a compiled 3-step training loop traced with our
capture backend; `dftracer-analyze summary --by step` finds the 3 steps (from the
repeated top-level `train_step` region, named by the `step` arg Dynamo.update
puts on events where there is one), compile time only in step 0 and in step 2 (a new batch size
with dynamic=False forces a recompile), each step's split matching a
self-time computation done here from the events, and the CLI's JSON, CSV and
dftracer.analyze.steps() giving the same numbers."""
import csv
import io
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import dftracer.analyze as da  # noqa: E402

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_analyze_self_time import analyzer_exe  # noqa: E402
from trace_reader import complete_events_by_thread, read_trace, trace_files  # noqa: E402

LOOP = """
import torch
from dftracer.python import dftracer, dft_fn, Dynamo

log = dftracer.initialize_log({prefix!r}, None, -1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
d = Dynamo("train")
fwd = d.compile(model, dynamic=False)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, batch in enumerate((4, 4, 5)):  # step 2: a new shape, a recompile
    if {step_arg!r}:
        d.update(step=step)
    with dft_fn("train", name="train_step"):
        opt.zero_grad()
        fwd(torch.randn(batch, 8)).sum().backward()
        with dft_fn("train", name="optimizer.step"):
            opt.step()
log.finalize()
"""

CATEGORIES = ("compile", "forward", "backward", "optimizer", "comm", "data", "gc", "checkpoint", "other")


def runtime_files(events):
    """The fhashes of the runtime's files (imports, Inductor's cache: `io`'s rule) among the FH records."""
    names = [(str(e["args"]["value"]), e["args"]["name"]) for e in events if e.get("ph") == "M" and e["name"] == "FH"]
    return set(da._ext.runtime_fhashes(names))


def category(e, runtime):
    """event_category.hpp, for the reference split; `runtime`: runtime_files()."""
    name, cat, phase = e["name"], e.get("cat", ""), (e.get("args") or {}).get("phase")
    if cat == "compile":
        return "compile"
    if cat == "gc":
        return "gc"
    if cat == "checkpoint":
        return "checkpoint"
    if cat in ("POSIX", "STDIO") and str((e.get("args") or {}).get("fhash")) in runtime:
        return "other"
    if (cat in ("POSIX", "STDIO", "dataloader", "data") or name.startswith(("enumerate(DataLoader)", "DataLoader"))
            or name.split(".")[-1] in ("__getitem__", "__getitems__")):
        return "data"
    if name.startswith("Optimizer.") or "optimizer" in name.lower():
        return "optimizer"
    if phase == "backward":
        return "backward"
    if phase in ("forward", "inference"):
        return "forward"
    return "other"


def reference_split(events, steps, runtime):
    """Per step: self time (ns) by category of the events of the process inside it,
    nesting per thread from the exact times (children clipped to their parent)."""
    split = [dict.fromkeys(CATEGORIES, 0) for _ in steps]
    for evs in complete_events_by_thread(events).values():
        self_ns = {id(e): e["dur_ns"] for e in evs}
        stack = []
        for e in evs:
            ts, end = e["ts_ns"], e["ts_ns"] + e["dur_ns"]
            while stack and stack[-1]["ts_ns"] + stack[-1]["dur_ns"] <= ts:
                stack.pop()
            if stack:
                p = stack[-1]
                self_ns[id(p)] -= min(end, p["ts_ns"] + p["dur_ns"]) - ts
            stack.append(e)
        for e in evs:
            ts, end = e["ts_ns"], e["ts_ns"] + e["dur_ns"]
            for i, (s0, s1, region) in enumerate(steps):
                if s0 <= ts and end <= s1:
                    cat = "other" if e is region else category(e, runtime)
                    split[i][cat] += max(self_ns[id(e)], 0)
                    break
    return split


@pytest.fixture(params=[False, True], ids=["region", "step_arg"])
def loop_trace(request, run_python, tmp_path):
    run_python(LOOP.format(prefix=str(tmp_path / "steps"), step_arg=request.param),
               env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    files = trace_files(str(tmp_path), "steps-*.pfw*")
    assert len(files) == 1, files
    return files[0], request.param


def test_three_compiled_steps(loop_trace):
    path, step_arg = loop_trace
    exe = analyzer_exe()
    out = subprocess.run([exe, "summary", "--by", "step", "--format", "json", "--no-progress", path],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    rows = doc["steps"]
    assert len(rows) == 3, rows
    # The region bounds the steps; Dynamo.update's step arg, where given, names them.
    assert doc["processes"][0]["source"] == "region"
    assert doc["processes"][0]["region"] == "train_step"
    assert [r["label"] for r in rows] == (["0", "1", "2"] if step_arg else ["train_step"] * 3)

    # Compile in step 0 and after the forced recompile in step 2, none in step 1.
    compile_us = [r["compile_us"] for r in rows]
    assert compile_us[0] > 0 and compile_us[1] == 0 and compile_us[2] > 0, compile_us
    assert doc["first_step_compile_share"] == rows[0]["compile_share"] > 0
    for r in rows:
        assert sum(r[f"{c}_thread_us"] for c in CATEGORIES) == pytest.approx(r["traced_us"], abs=1e-6)
        # wall time: the categories and the untraced rest are the step, none more than it
        wall = sum(r[f"{c}_us"] for c in CATEGORIES) + r["untraced_us"]
        assert wall == pytest.approx(r["duration_us"], abs=0.01)
        assert all(0 <= r[f"{c}_us"] <= r["duration_us"] for c in CATEGORIES)
        assert r["forward_us"] > 0 and r["backward_us"] > 0 and r["optimizer_us"] > 0

    # A step runs from its region's start to the next one's; the last to its region's end.
    every = read_trace(path)
    events = [e for e in every if e.get("ph") == "X"]
    regions = sorted((e for e in events if e["name"] == "train_step"), key=lambda e: e["ts_ns"])
    assert len(regions) == 3
    ends = [nxt["ts_ns"] for nxt in regions[1:]] + [regions[-1]["ts_ns"] + regions[-1]["dur_ns"]]
    spans = [(e["ts_ns"], end, e) for e, end in zip(regions, ends)]
    for r, (ts, end, _) in zip(rows, spans):
        assert r["duration_us"] == pytest.approx((end - ts) / 1000)
    # The thread-time split matches the events: a reference self-time computation per step.
    want = reference_split(events, spans, runtime_files(every))
    # Exact, unless the self-time model folded a thread's backlog (the lazy
    # imports of the first compile write thousands of I/O events inside step 0,
    # past the 4096 unparented events it keeps per thread) and estimated a
    # parent's children ("nesting.approximated"): then within 1 % of the step.
    approx = doc["nesting"]["approximated"] > 0
    for r, w in zip(rows, want):
        for c in CATEGORIES:
            tol = 2 + (0.01 * r["traced_us"] if approx else 0)
            assert r[f"{c}_thread_us"] == pytest.approx(w[c] / 1000, abs=tol), (r["step"], c)
    # Steps plus outside are the summary's self time per category, exactly (one model).
    by_cat = da.summary(path, by="category").set_index("category")["thread_us"]
    for c in CATEGORIES:
        got = sum(r[f"{c}_thread_us"] for r in rows) + doc["outside"][f"{c}_us"]
        assert got == pytest.approx(by_cat.get(c, 0.0), abs=1e-3), c

    # The same numbers from the Python API and the CSV.
    df = da.steps(path)
    assert df.to_dict("records") == rows
    assert df.attrs["first_step_compile_share"] == doc["first_step_compile_share"]
    out = subprocess.run([exe, "summary", "--by", "step", "--format", "csv", "--no-progress", path],
                         capture_output=True, text=True, check=True)
    csv_rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [float(c["compile_us"]) for c in csv_rows] == compile_us
    assert [float(c["traced_us"]) for c in csv_rows] == [r["traced_us"] for r in rows]
    table = subprocess.run([exe, "summary", "--by", "step", "--no-progress", path],
                           capture_output=True, text=True, check=True).stdout
    assert "3 steps" in table and "first step: compile" in table


def test_no_steps_is_said_and_api_returns_empty(tmp_path):
    p = tmp_path / "flat.pfw"
    p.write_text('{"name":"a","cat":"app","pid":1,"tid":1,"ts":10,"dur":5,"ph":"X"}\n')
    table = subprocess.run([analyzer_exe(), "summary", "--by", "step", "--no-progress", str(p)],
                           capture_output=True, text=True, check=True).stdout
    assert "no steps found" in table
    bad = subprocess.run([analyzer_exe(), "summary", "--by", "step", "--top", "2", str(p)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--by step shows every step" in bad.stderr
    df = da.steps(str(p))
    assert df.empty and df.attrs["outside"]["traced_us"] == 5
