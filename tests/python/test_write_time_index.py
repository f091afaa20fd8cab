"""The write-time index from Python: a trace written by the package (pydftracer's
API, a real .pfw.gz and its .idx) summarised with dftracer.analyze.summary from the
index and by reading, equal; a time window (from_ts/to_ts) equal to filtering the
events by hand; a damaged index ignored with one warning line."""
import json
import os
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from trace_reader import read_trace, trace_files

import dftracer.analyze as da  # noqa: E402

BASE_US = 1_700_000_000_000_000

SCRIPT = f"""
import threading
from dftracer.python import dftracer, dft_fn

log = dftracer.initialize_log("{{prefix}}", None, 1)
py = dft_fn("py")

@py.log
def real_clock_region():
    pass

def work(k):
    for s in range(60):
        t0 = {BASE_US} + s * 1000 + k * 100
        for i in range(4):
            log.log_event(f"op{{i}}", "compute", t0 + 10 + i * 20, 15.5 + i)
        log.log_event("step", "loop", t0, 900)
        real_clock_region()

ts = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
[t.start() for t in ts]
work(0)
[t.join() for t in ts]
log.finalize()
"""


@pytest.fixture
def indexed_trace(run_python, trace_dir):
    run_python(SCRIPT.replace("{prefix}", os.path.join(trace_dir, "t")),
               env={"DFTRACER_TRACE_COMPRESSION": "1"})
    files = trace_files(trace_dir)
    assert len(files) == 1 and files[0].endswith(".pfw.gz"), files
    assert os.path.exists(files[0] + ".idx")
    return files[0]


def _frame_equal(a, b):
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=True)
    assert a.attrs["totals"] == b.attrs["totals"]


@pytest.mark.parametrize("by", ["name", "cat", "pid", "tid", ["name", "tid"]])
def test_summary_from_index_equals_full_read(indexed_trace, by):
    fast = da.summary(indexed_trace, by=by)
    full = da.summary(indexed_trace, by=by, use_index=False)
    assert fast.attrs["index"] is True
    assert full.attrs["index"] is False
    _frame_equal(fast, full)


def test_time_window_equals_filtering_the_events(indexed_trace):
    lo, hi = BASE_US + 20_000, BASE_US + 40_000  # steps 20..39 of every thread
    s = da.summary(indexed_trace, from_ts=lo, to_ts=hi, use_index=True)
    assert s.attrs["index"] is False  # a window reads, skipping members outside it
    events = [e for e in read_trace(indexed_trace) if e.get("ph") == "X" and lo <= float(e["ts"]) < hi]
    assert int(s["count"].sum()) == len(events) == 3 * 20 * 5
    want = pd.Series([e["name"] for e in events]).value_counts().sort_index()
    got = s.set_index("name")["count"].sort_index()
    assert dict(got) == dict(want)
    # Exact decimal text bounds work the same as numbers.
    s2 = da.summary(indexed_trace, from_ts=str(lo), to_ts=f"{hi}.000")
    _frame_equal(s, s2)
    with pytest.raises(ValueError):
        da.summary(indexed_trace, from_ts=hi, to_ts=lo)
    with pytest.raises(TypeError):
        da.summary(indexed_trace, from_ts=[1])


def test_damaged_index_is_ignored_with_one_warning(indexed_trace, capfd):
    full = da.summary(indexed_trace, use_index=False)
    with open(indexed_trace + ".idx", "r+b") as f:
        text = f.read()
        at = text.index(b"\nC ") + 3
        f.seek(at)
        f.write(b"9" if text[at:at + 1] != b"9" else b"8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = da.summary(indexed_trace)
    assert s.attrs["index"] is False
    _frame_equal(s, full)
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "1 mismatched .idx sidecar" in said[0], said
    assert ".idx" not in capfd.readouterr().err  # one warning, not a second line on stderr


def test_cli_says_whether_the_index_was_used(indexed_trace):
    # This interpreter's own install first: another install's command on PATH is older.
    exe = os.environ.get("DFTRACER_ANALYZE_BIN") or os.path.join(os.path.dirname(sys.executable), "dftracer-analyze")
    if not os.access(exe, os.X_OK):
        pytest.skip("dftracer-analyze not installed beside this interpreter (set DFTRACER_ANALYZE_BIN)")
    out = lambda *a: json.loads(subprocess.run([exe, "summary", "--format", "json", *a, indexed_trace],
                                               check=True, capture_output=True, text=True).stdout)
    fast, full = out(), out("--no-index")
    assert fast["index"] is True and full["index"] is False
    assert fast["rows"] == full["rows"]


def test_relative_windows_count_from_the_trace_start_and_end(indexed_trace):
    events = [e for e in read_trace(indexed_trace) if e.get("ph") == "X"]
    start = min(float(e["ts"]) for e in events)
    end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in events)
    assert start == BASE_US  # thread 0's first step
    # "+20ms" to "+40ms" is steps 20..39: the absolute window of the test above.
    rel = da.summary(indexed_trace, from_ts="+20ms", to_ts="+40ms")
    _frame_equal(rel, da.summary(indexed_trace, from_ts=BASE_US + 20_000, to_ts=BASE_US + 40_000))
    assert int(rel["count"].sum()) == 3 * 20 * 5
    # "-1s": from one second before the last end (the real-clock regions, written now).
    last = da.summary(indexed_trace, from_ts="-1s")
    want = [e for e in events if float(e["ts"]) >= end - 1e6]
    assert 0 < int(last["count"].sum()) == len(want) < len(events)
    # Mixed with an absolute bound; the same through the index or by reading.
    mixed = da.summary(indexed_trace, from_ts=BASE_US + 10_000, to_ts="+30ms", use_index=False)
    assert int(mixed["count"].sum()) == 3 * 20 * 5
    with pytest.raises(ValueError, match=r"'\+2 s'.*\+1\.5s"):
        da.summary(indexed_trace, from_ts="+2 s")
    with pytest.raises(ValueError, match="--from must be before --to"):
        da.summary(indexed_trace, from_ts="+30ms", to_ts="+20ms")


def test_cli_relative_window(indexed_trace):
    exe = os.environ.get("DFTRACER_ANALYZE_BIN") or os.path.join(os.path.dirname(sys.executable), "dftracer-analyze")
    if not os.access(exe, os.X_OK):
        pytest.skip("dftracer-analyze not installed beside this interpreter (set DFTRACER_ANALYZE_BIN)")
    run = lambda *a: subprocess.run([exe, "summary", "--format", "json", *a, indexed_trace], capture_output=True,
                                    text=True)
    rel, absolute = run("--from", "+20ms", "--to", "+40ms"), run("--from", str(BASE_US + 20_000), "--to",
                                                                  str(BASE_US + 40_000))
    assert rel.returncode == 0 and absolute.returncode == 0, rel.stderr
    assert json.loads(rel.stdout)["rows"] == json.loads(absolute.stdout)["rows"]
    assert json.loads(rel.stdout)["complete_events"] == 3 * 20 * 5
    tail = run("--from", "-1s")  # a leading '-' is a value here, not an option
    assert tail.returncode == 0 and 0 < json.loads(tail.stdout)["complete_events"] < 3 * 60 * 5
    for bad in (["--from", "+2parsecs"], ["--from", "+30ms", "--to", "+20ms"], ["--from", "-1s", "--to", "-2s"]):
        r = run(*bad)
        assert r.returncode == 2 and r.stderr.count("\n") <= 2 and r.stdout == "", (bad, r.stderr)
        assert "--from" in r.stderr, r.stderr


def test_compiled_training_trace_with_flops_answers_from_the_index(run_python, trace_dir):
    """A real compiled run (its ops carry args.flops / args.bytes) written as .pfw.gz:
    the writer sums them into the index, so summaries answer from it, identical to a read."""
    pytest.importorskip("torch")
    from test_analyze_efficiency import MATMUL_HEAVY

    run_python(MATMUL_HEAVY.replace("range(4)", "range(2)"),
               env={"TRACE_DIR": trace_dir, "DFTRACER_TRACE_COMPRESSION": "1"}, timeout=300)
    files = trace_files(trace_dir)
    assert len(files) == 1 and files[0].endswith(".pfw.gz"), files
    assert any("flops" in e.get("args", {}) for e in read_trace(files[0]) if e.get("ph") == "X")
    for by in ("name", "cat", ["name", "tid"]):
        fast = da.summary(files[0], by=by)
        full = da.summary(files[0], by=by, use_index=False)
        assert fast.attrs["index"] is True and full.attrs["index"] is False, by
        _frame_equal(fast, full)
        assert fast["gflops"].notna().any() and fast["gbps"].notna().any(), by
