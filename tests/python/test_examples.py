"""The example the demo runs (`scripts/demo.sh`, README's main job), end to
end: examples/python/transformer.py traced with DFTRACER_ENABLE=1, its batches
read from sample files by two DataLoader worker processes. The run leaves one
trace file per process: the main one with the steps, the ops of every graph
and the data waits; each worker's with its own reads. `dftracer-analyze
report` over the three answers with the steps and an I/O line.
"""
import json
import os
import subprocess
import sys

from analyzer_cli import analyzer
from conftest import _clean_env
from trace_reader import read_trace

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_transformer_example_traces_compute_and_the_workers_reads(tmp_path):
    data, traces = tmp_path / "data", tmp_path / "traces"
    traces.mkdir()
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(traces / "transformer"))
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples/python/transformer.py"), "--layers", "1",
                          "--steps", "2", "--batch", "4", "--data-dir", str(data), "--times", str(tmp_path / "loop")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    files = sorted(traces.glob("transformer-*.pfw.gz"))
    assert len(files) == 3, files  # the main process and two workers
    by_pid = {}
    for f in files:
        evs = read_trace(str(f))
        start = [e for e in evs if e["name"] == "start"]
        by_pid[start[0]["pid"]] = (start[0]["args"].get("ppid"), evs)
    main_pid = next(p for p, (ppid, _) in by_pid.items() if ppid not in by_pid)
    main = by_pid[main_pid][1]
    workers = {p: evs for p, (ppid, evs) in by_pid.items() if p != main_pid}
    assert all(by_pid[p][0] == main_pid for p in workers)

    names = [e["name"] for e in main if e.get("ph") == "X"]
    assert names.count("train_step") == 2
    assert names.count("DataLoader.next") == 3  # two steps and the inference batch
    phases = {e.get("args", {}).get("phase") for e in main if e.get("cat") == "dynamo"}
    assert {"forward", "backward", "inference"} <= phases

    # The 12 samples (4 x (2 steps + 1)) are written by the main process and
    # each opened for reading by exactly one worker; only the data dir is traced
    # (the script sets DFTRACER_DATA_DIR to it).
    fh = {}
    for _, evs in by_pid.values():
        fh.update({e["args"]["value"]: e["args"]["name"] for e in evs if e["name"] == "FH"})
    samples = sorted(str(p) for p in data.glob("sample*.npy"))
    assert len(samples) == 12
    assert set(fh.values()) <= set(samples) | {str(data)}, set(fh.values()) - set(samples)
    written = {fh[e["args"]["fhash"]] for e in main if e.get("cat") == "POSIX" and e["name"] == "write"}
    assert written == set(samples)
    opened = [fh[e["args"]["fhash"]] for evs in workers.values() for e in evs
              if e.get("cat") == "POSIX" and e["name"] in ("open", "open64")]
    assert sorted(opened) == samples
    for evs in workers.values():
        reads = [e for e in evs if e.get("cat") in ("POSIX", "STDIO") and e["name"] in ("read", "fread")]
        assert reads and all(fh[e["args"]["fhash"]] in samples and e["args"]["ret"] > 0 for e in reads)
        assert not [e for e in evs if e.get("cat") == "dynamo"], "a worker runs no graph"

    report = subprocess.run([analyzer(), "report", "-o", str(tmp_path / "r.html")] + [str(f) for f in files],
                            capture_output=True, text=True, check=True).stdout
    lines = report.splitlines()
    io = [l for l in lines if l.startswith("I/O: ")]
    assert io and " POSIX/STDIO calls, " in io[0] and "most data I/O time: " + str(data) in io[0], report
    steps = [l for l in lines if l.startswith("Steps: ")]
    assert steps and steps[0].startswith("Steps: 2; "), report  # the main process's; workers have none
    steps_doc = json.loads(subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json"] +
                                          [str(f) for f in files], capture_output=True, text=True, check=True).stdout)
    assert_steps_are_the_loops(steps_doc, tmp_path / "loop")
    assert lines[0].startswith("Hottest ops by self time: function."), report


def assert_steps_are_the_loops(doc, times_file):
    """Each step as long as the loop's iteration (start to the next start; the
    last to its end) within 1 % or 1 ms, an estimated last end within 10 % or 2 ms;
    compile at most the step that compiled."""
    with open(times_file) as f:
        spans = json.load(f)["steps"]
    loop = [b[0] - a[0] for a, b in zip(spans, spans[1:])] + [spans[-1][1] - spans[-1][0]]
    rows = doc["steps"]
    assert len(rows) == len(loop), (rows, loop)
    for i, (r, want) in enumerate(zip(rows, loop)):
        got = r["duration_us"] / 1e6
        assert r["compile_us"] <= r["duration_us"]
        if r["end_estimated"]:  # the last step of marks: the others' shape, compared more loosely
            assert abs(got - want) <= max(0.1 * want, 0.002), (i, got, want)
        else:
            assert abs(got - want) <= max(0.01 * want, 0.001), (i, got, want)
    assert rows[0]["compile_us"] > 0.5 * rows[0]["duration_us"]


def test_llama_example_steps_compile_and_answer(tmp_path):
    """A Llama from LlamaConfig (random weights) trained with the capture backend
    and dynamo.update(step=...) only: one step per iteration on the loop's clock,
    compile inside the first step, and a report that leads with the model's ops."""
    traces = tmp_path / "traces"
    traces.mkdir()
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(traces / "llama"), DFTRACER_DISABLE_IO="1")
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples/python/llama.py"), "--layers", "1",
                          "--steps", "5", "--times", str(tmp_path / "loop")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    files = [str(f) for f in sorted(traces.glob("llama-*.pfw.gz"))]
    doc = json.loads(subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json"] + files,
                                    capture_output=True, text=True, check=True).stdout)
    assert doc["processes"][0]["source"] == "marks"
    assert_steps_are_the_loops(doc, tmp_path / "loop")
    assert all(r["optimizer_us"] > 0 and r["backward_us"] > 0 for r in doc["steps"])
    report = subprocess.run([analyzer(), "report", "-o", str(tmp_path / "r.html")] + files,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert report[0].startswith("Hottest ops by self time: function."), report
    assert report[1].startswith("Top modules by self time: ") and "layers.0" in report[1], report
    compile_line = next(l for l in report if l.startswith("Compile vs run (wall time): compile "))
    assert float(compile_line.split("compile ")[1].split("%")[0]) <= 100
