"""Python's garbage collections as events (docs/python.md, "Garbage
collections"): each collection while tracing is on is one complete event,
cat gc, on the thread that ran it, with what it collected; none after
finalize or with DFTRACER_TRACE_GC=0. The analyzer reads them as their own
category: the steps' and the run's gc wall and thread time, the report's line.
"""
import json
import os
import subprocess

from test_analyze_self_time import analyzer_exe
from trace_reader import complete_events, read_all

# gc.disable() first: only the script's own collections run, so each has a
# known generation and result. Reference cycles of lists, found only by the
# collector; one collection on a second thread; one after finalize.
_SCRIPT = r"""
import gc
gc.disable()
import json, os, threading, time
from dftracer.python import dftracer
out_dir = os.environ["TRACE_DIR"]
log = dftracer.initialize_log(os.path.join(out_dir, "run"), None, -1)

def cycles(n):
    for _ in range(n):
        a = []
        a.append([a])

out = {"collect": []}
for i, gen in enumerate([2, 0, 2, 1, 2]):
    cycles(1000 * (i + 1))
    t0 = time.perf_counter_ns()
    n = gc.collect(gen)
    out["collect"].append([gen, n, time.perf_counter_ns() - t0])

def worker():
    out["thread"] = threading.get_native_id()
    cycles(500)
    out["thread_n"] = gc.collect()

th = threading.Thread(target=worker)
th.start()
th.join()
out["main"] = threading.get_native_id()
log.finalize()
cycles(100)
out["after"] = gc.collect()  # tracing is off: no event, nothing breaks
with open(os.path.join(out_dir, "out.json"), "w") as f:
    json.dump(out, f)
"""


def _run(run_python, trace_dir, script, env=None):
    run_python(script, env={"TRACE_DIR": trace_dir, **(env or {})})
    with open(os.path.join(trace_dir, "out.json")) as f:
        out = json.load(f)
    events = [e for evs in read_all(trace_dir).values() for e in evs]
    return out, events


def test_each_collection_is_an_event_of_its_thread_with_what_it_collected(run_python, trace_dir):
    out, events = _run(run_python, trace_dir, _SCRIPT)
    gcs = complete_events(events, cat="gc")
    main = sorted((e for e in gcs if e["tid"] == out["main"]), key=lambda e: e["ts_ns"])
    assert [e["name"] for e in main] == ["gc.gen2", "gc.gen0", "gc.gen2", "gc.gen1", "gc.gen2"]
    for e, (gen, n, bracket_ns) in zip(main, out["collect"]):
        a = e["args"]
        assert a["generation"] == gen
        # gc.collect() returns what the collection found unreachable: collected + uncollectable
        assert a["collected"] + a["uncollectable"] == n, (e, n)
        assert n >= 2 * 1000  # at least the cycles made for it
        assert 0 <= e["dur"] <= bracket_ns / 1000 + 1, (e, bracket_ns)  # whole microseconds, inside the call
    other = [e for e in gcs if e["tid"] == out["thread"]]
    assert len(other) == 1 and other[0]["name"] == "gc.gen2"
    assert other[0]["args"]["collected"] + other[0]["args"]["uncollectable"] == out["thread_n"]
    assert out["after"] >= 200
    assert len(gcs) == 6  # nothing of the collection after finalize


def test_DFTRACER_TRACE_GC_0_records_none(run_python, trace_dir):
    out, events = _run(run_python, trace_dir, _SCRIPT, env={"DFTRACER_TRACE_GC": "0"})
    assert len(out["collect"]) == 5
    assert complete_events(events, cat="gc") == []
    assert any(e.get("name") == "start" for e in events)  # the trace itself is there


# Five iterations bounded by a region; iteration 2 collects a heap of 400k
# tracked objects (a full collection of tens of milliseconds).
_LOOP = r"""
import gc
gc.disable()
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run"), None, -1)
keep = [[i] for i in range(400_000)]
for i in range(5):
    with dft_fn("app", name="train_step"):
        with dft_fn("app", name="work"):
            sum(x[0] for x in keep[:20_000])
        if i == 2:
            gc.collect()
log.finalize()
"""


def test_the_analyzer_reads_collections_as_gc_time_of_their_step(run_python, trace_dir):
    run_python(_LOOP, env={"TRACE_DIR": trace_dir})
    events = [e for evs in read_all(trace_dir).values() for e in evs]
    (full,) = complete_events(events, cat="gc")
    exe = analyzer_exe()
    doc = json.loads(subprocess.run([exe, "summary", trace_dir, "--by", "step", "--format", "json"],
                                    check=True, capture_output=True, text=True).stdout)
    steps = doc["steps"]
    (run,) = doc["runs"]
    assert run["gc_collections"] == 1 and run["gc_longest_us"] == full["dur"]
    assert len(steps) == 5
    for i, s in enumerate(steps):
        want = full["dur"] if i == 2 else 0
        assert s["gc_us"] == want and s["gc_thread_us"] == want, (i, s)
        parts = sum(s[f"{c}_us"] for c in ("compile", "forward", "backward", "optimizer", "comm", "data", "gc",
                                            "other"))
        assert abs(parts + s["untraced_us"] - s["duration_us"]) < 0.01
    wall = json.loads(subprocess.run([exe, "summary", trace_dir, "--by", "category", "--format", "json"],
                                     check=True, capture_output=True, text=True).stdout)
    (row,) = [r for r in wall["rows"] if r["category"] == "gc"]
    assert row["wall_us"] == full["dur"] and row["count"] == 1
    assert "compile > gc > checkpoint > optimizer" in wall["rule"]
    report = subprocess.run([exe, "report", trace_dir, "-o", os.path.join(trace_dir, "r.html")],
                            check=True, capture_output=True, text=True).stdout
    assert (f"Python garbage collection: 1 collection in the run, the longest {full['dur'] / 1000:.3f} ms"
            in report), report
    assert "the whole trace holds 1 (1 full)" in report, report
