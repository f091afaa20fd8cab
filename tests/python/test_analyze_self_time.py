"""Self time (duration minus the events nested inside, per thread) through every
output: dftracer.analyze.summary and `dftracer-analyze summary --format json/csv`
give the same numbers, and they match an independent nesting computed here in
Python from the exact nanosecond times events() reads.

Traces: one the real tracer writes (nested dft_fn regions on two threads, in a
child interpreter) and a hand-made one with known nesting.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest
from trace_reader import trace_files

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

TRACED = """
import os, threading, time
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "nest.pfw"), None, -1)

def busy(s):
    t = time.perf_counter() + s
    while time.perf_counter() < t:
        pass

def work(tag):
    for step in range(3):
        with dft_fn("train", "train_step", step=step):
            busy(0.001)
            with dft_fn("train", "forward"):
                for _ in range(3):
                    with dft_fn("op", "matmul"):
                        busy(0.0005)
            with dft_fn("train", "optimizer"):
                busy(0.0005)

t = threading.Thread(target=work, args=("bg",))
t.start()
work("main")
t.join()
log.finalize()
"""


@pytest.fixture
def nested_trace(run_python, trace_dir):
    run_python(TRACED, env={"TRACE_DIR": trace_dir})
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return files[0]


def reference_self_times(path):
    """Independent nesting: per (pid, tid), sort by start (outer first) and give
    each event's time to the innermost event enclosing it."""
    by_thread = defaultdict(list)
    for batch in da.events(path, ph="X", raw_args=False):
        for name, pid, tid, ts, dur in zip(batch["name"].astype(str), batch["pid"], batch["tid"],
                                           batch["ts_ns"], batch["dur_ns"]):
            by_thread[(pid, tid)].append((int(ts), int(ts) + int(dur), name))
    self_ns, traced = defaultdict(int), {}
    for key, evs in by_thread.items():
        evs.sort(key=lambda e: (e[0], -e[1]))
        stack, total = [], 0
        for ts, end, name in evs:
            while stack and stack[-1][1] <= ts:
                stack.pop()
            self_ns[name] += end - ts
            if stack:
                self_ns[stack[-1][2]] -= end - ts  # a direct child of the innermost open event
            else:
                total += end - ts
            stack.append((ts, end, name))
        traced[key] = total
    return self_ns, traced


def analyzer_exe():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    here = os.path.join(os.path.dirname(sys.executable), "dftracer-analyze")  # this install's own
    for c in (os.environ.get("DFTRACER_ANALYZE_BIN"), here, shutil.which("dftracer-analyze"),
              os.path.join(root, "build", "src", "analyze", "dftracer-analyze")):
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("dftracer-analyze not found (set DFTRACER_ANALYZE_BIN)")


def test_self_time_of_real_nested_regions(nested_trace):
    want, traced = reference_self_times(nested_trace)
    df = da.summary(nested_trace).set_index("name")
    assert {"train_step", "forward", "matmul", "optimizer"} <= set(df.index)
    for name, ns in want.items():
        assert df.loc[name, "self_us"] == pytest.approx(ns / 1000, abs=1e-6), name
    # Regions with children have less self than total time; leaves have all of it.
    assert df.loc["train_step", "self_us"] < df.loc["train_step", "total_us"]
    assert df.loc["forward", "self_us"] < df.loc["forward", "total_us"]
    assert df.loc["matmul", "self_us"] == pytest.approx(df.loc["matmul", "total_us"], abs=1e-6)
    # Shares of self time add up to 1; the traced time is each thread's time inside a region.
    assert df["share"].sum() == pytest.approx(1.0)
    assert df.attrs["totals"]["traced_us"] == pytest.approx(sum(traced.values()) / 1000, abs=1e-6)
    traced_by_tid = {tid: ns for (pid, tid), ns in traced.items()}
    by_thread = da.summary(nested_trace, by="tid")
    assert len(by_thread) == len(traced_by_tid) == 2
    for _, r in by_thread.iterrows():
        assert r["self_us"] == pytest.approx(traced_by_tid[int(r["tid"])] / 1000, abs=1e-6)
    # Sorted by self time, or by total time when asked.
    assert list(df["self_us"]) == sorted(df["self_us"], reverse=True)
    by_total = da.summary(nested_trace, sort="total")
    assert by_total["name"].iloc[0] == "train_step"
    assert list(by_total["total_us"]) == sorted(by_total["total_us"], reverse=True)
    with pytest.raises(ValueError, match="sort"):
        da.summary(nested_trace, sort="count")


def x(i, name, ts_us, dur_us, tid=1, pid=1):
    return json.dumps({"id": i, "name": name, "cat": "t", "pid": pid, "tid": tid, "ts": ts_us, "dur": dur_us,
                       "ph": "X"})


def test_cli_json_csv_and_python_agree(tmp_path):
    # step [0,100) > fwd [10,60) > {mm [10,30), mm [35,40)}; opt [70,90); tid 2: a lone mm.
    # Written as they end, with an event cut by a crash (its step never ended) on tid 3.
    lines = [x(1, "mm", 10, 20), x(2, "mm", 35, 5), x(3, "fwd", 10, 50), x(4, "opt", 70, 20), x(5, "step", 0, 100),
             x(6, "mm", 5, 7, tid=2), x(7, "mm", 200, 3, tid=3)]
    path = tmp_path / "t.pfw"
    path.write_text("[\n" + ",\n".join(lines) + ",\n")
    want = {"step": 30.0, "fwd": 25.0, "mm": 35.0, "opt": 20.0}
    df = da.summary(str(path)).set_index("name")
    assert df["self_us"].to_dict() == pytest.approx(want)
    assert df.loc["step", "total_us"] == 100.0
    assert df.attrs["totals"]["traced_us"] == pytest.approx(110.0)
    exe = analyzer_exe()
    js = json.loads(subprocess.run([exe, "summary", "--format", "json", str(path)], check=True, capture_output=True,
                                   text=True).stdout)
    assert js["sort"] == "self" and js["traced_us"] == pytest.approx(110.0)
    assert [r["name"] for r in js["rows"]] == list(df.index)
    for r in js["rows"]:
        for col in ("count", "self_us", "total_us", "share"):
            assert r[col] == pytest.approx(df.loc[r["name"], col], rel=1e-12), (r["name"], col)
    out = subprocess.run([exe, "summary", "--format", "csv", "--sort", "total", str(path)], check=True,
                         capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["name"] for r in rows] == ["step", "fwd", "mm", "opt"]
    for r in rows:
        assert float(r["self_us"]) == pytest.approx(want[r["name"]])
        assert float(r["share"]) == pytest.approx(df.loc[r["name"], "share"], rel=1e-12)


def test_compile_versus_run_by_category(tmp_path):
    # A step with compile work (a recompile inside Dynamo tracing), forward and
    # backward ops, an optimizer step and a read; written as they end.
    def ev(i, name, cat, ts, dur, **args):
        return dict(json.loads(x(i, name, ts, dur)), cat=cat, args=args)
    evs = [ev(1, "recompile", "compile", 50, 100, reason="shape"), ev(2, "dynamo.trace", "compile", 0, 300),
           ev(3, "function.mm", "op", 300, 100, phase="forward"),
           ev(4, "function.mm_backward", "op", 400, 200, phase="backward"),
           ev(5, "Optimizer.step#SGD.step", "torch", 600, 100), ev(6, "read", "POSIX", 700, 100),
           ev(8, "gc.gen2", "gc", 850, 50, generation=2), ev(9, "torch.save", "checkpoint", 900, 40),
           ev(7, "train_step", "region", 0, 1000, step=0)]
    path = tmp_path / "c.pfw"
    path.write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in evs))
    # One thread: each category's wall time is its self time (the thread time beside it).
    df = da.summary(str(path), by="category").set_index("category")
    want = {"compile": 300, "forward": 100, "backward": 200, "optimizer": 100, "comm": 0, "data": 100, "gc": 50,
            "checkpoint": 40, "other": 110}
    assert df["thread_us"].to_dict() == pytest.approx(dict(want, untraced=0))
    assert df["wall_us"].to_dict() == pytest.approx(dict(want, untraced=0))
    assert df["count"].to_dict() == {"compile": 2, "forward": 1, "backward": 1, "optimizer": 1, "comm": 0, "data": 1,
                                     "gc": 1, "checkpoint": 1, "other": 1, "untraced": 0}
    assert df["wall_share"].sum() == pytest.approx(1.0)
    assert df.loc["compile", "wall_share"] == pytest.approx(0.3)
    assert df.attrs["span_us"] == df.attrs["traced_us"] == 1000
