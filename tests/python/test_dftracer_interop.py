"""Files DFTracer 2.2 itself writes, in the modes our analyzer used to misread,
and our Python API in DFTracer's time metrics, side by side with pydftracer.

Every DFTracer file here is written during the test by pydftracer 2.0.6 on
dftracer 2.2.0 from the reference venv (reference_tools.py; scripts/setup.sh
creates it), running tests/data/dftracer-2.2-pydftracer.py (2 "epoch" events
of 3 "step" events each, plus DFTracer's own "start" and "end"):
  - DFTRACER_TIME_METRIC=NS: integer nanoseconds, the file's metadata line
    {"name":"CM",...,"args":{"name":"time_metric","value":"NS"}} says so;
  - DFTRACER_ENABLE_AGGREGATION=1: "ph":3 rows, each standing for
    args.dft_cnt events of one interval, with args.dur (one event) or
    args.dur_sum/dur_min/dur_max.
"""
import collections
import gzip
import json
import os
import subprocess
import sys

import pytest

from analyzer_cli import analyzer
from reference_tools import GEN, MODES, SKIP_REASON, clean_env, dftracer_trace, have_python, run_pydftracer

pytestmark = pytest.mark.skipif(not have_python(), reason=SKIP_REASON)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    work = tmp_path_factory.mktemp("dftracer22")
    return {m: dftracer_trace(work, m) for m in MODES}


def raw_lines(path):
    with gzip.open(path, "rt") as f:
        return [json.loads(line.rstrip().rstrip(",")) for line in f if line.strip() not in ("", "[", "]")]


def file_truth(path):
    """Per name: (events, summed duration in ns), read straight off the file
    with the unit its time_metric line names; and the complete events'
    (ts, dur) in ns."""
    lines = raw_lines(path)
    metric, = {e["args"]["value"] for e in lines if e.get("ph") == 4 and e["args"].get("name") == "time_metric"}
    per_ns = {"NS": 1, "US": 1000}[metric]
    by_name = collections.defaultdict(lambda: [0, 0])
    spans = []
    for e in lines:
        if e["ph"] == 1:
            by_name[e["name"]][0] += 1
            by_name[e["name"]][1] += e["dur"] * per_ns
            spans.append((e["ts"] * per_ns, e["dur"] * per_ns))
        elif e["ph"] == 3:
            a = e["args"]
            by_name[e["name"]][0] += a["dft_cnt"]
            by_name[e["name"]][1] += a.get("dur_sum", a.get("dur", 0)) * per_ns
    return {k: tuple(v) for k, v in by_name.items()}, sorted(spans), metric


def events(path):
    import dftracer.analyze as da
    import pandas as pd

    return pd.concat(list(da.events(path, raw_args=False)))


def summary_json(path, *extra):
    proc = subprocess.run([analyzer(), "summary", "--format", "json", *extra, path], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def by_name(summary):
    return {r["name"]: (r["count"], round(r["total_us"] * 1000)) for r in summary["rows"]}


def test_nanosecond_trace_reads_with_the_files_time_metric(traces):
    path = traces["ns"]
    truth, spans, metric = file_truth(path)
    assert metric == "NS" and truth["step"][0] == 6 and truth["epoch"][0] == 2
    # The same events in microseconds would not tell ns from us: the stamps are ns since the epoch.
    assert spans[0][0] > 10 ** 18
    s = summary_json(path)
    assert by_name(s) == truth
    assert s["skipped"]["bad_fields"] == 0 and s["skipped"]["malformed"] == 0
    x = events(path)
    x = x[x["ph"] == "X"]
    assert sorted(zip(x["ts_ns"].astype(int), x["dur_ns"].astype(int))) == spans


def test_aggregated_rows_count_in_the_summary(traces):
    for mode in ("aggregated", "aggregated-ns"):
        path = traces[mode]
        truth, _, _ = file_truth(path)
        rows = [e for e in raw_lines(path) if e["ph"] == 3]
        assert rows and any(e["args"]["dft_cnt"] > 1 for e in rows), mode  # "dur_sum" rows too
        assert truth["step"][0] == 6 and truth["epoch"][0] == 2, mode
        s = summary_json(path)
        assert by_name(s) == truth, mode
        assert s["complete_events"] == sum(n for n, _ in truth.values()), mode
        step = next(r for r in s["rows"] if r["name"] == "step")
        mins = [e["args"].get("dur_min", e["args"].get("dur")) for e in rows if e["name"] == "step"]
        scale = 1e-3 if mode.endswith("ns") else 1
        assert step["min_us"] == pytest.approx(min(mins) * scale), mode


def test_merge_writes_every_event_summary_reads_in_chrome_form(traces, tmp_path):
    for mode, path in traces.items():
        out = tmp_path / f"{mode}.json"
        proc = subprocess.run([analyzer(), "merge", "-o", str(out), path], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, (mode, proc.stderr)
        doc = json.loads(out.read_text())
        evs = doc["traceEvents"]
        assert {e["ph"] for e in evs} <= {"X", "i", "M", "C"}, mode
        lines = raw_lines(path)
        assert sum(e["ph"] != "M" for e in evs) == sum(e["ph"] != 4 for e in lines), mode
        # Read back (by name: its ts_base_us added back), the merged file summarizes as the trace does.
        assert by_name(summary_json(str(out))) == by_name(summary_json(path)), mode
        base = doc["otherData"]["ts_base_us"]
        assert base > 0, mode  # rebased: small numbers, sub-microsecond precision kept
        if mode == "ns":
            _, spans, _ = file_truth(path)
            got = sorted((round(e["ts"] * 1000) + base * 1000, round(e["dur"] * 1000)) for e in evs if e["ph"] == "X")
            assert got == spans


# pydftracer's documented recipe for an integration with its own epoch clock:
# scale a time by get_time_scale() and log it. Under NS both tracers must take
# nanoseconds and record the same event. It runs at the end of the generator
# script: pydftracer 2.0.6 writes no file at all for some short programs, and
# for that one it always does.
RECIPE_END = r'''
from dftracer.python import get_time_scale
scale = get_time_scale()
before = time.time_ns()
now = log.get_time()
after = time.time_ns()
start = int((before - 5_000_000) * scale / 1e9)
log.log_event("recipe", "APP", start, int(0.0025 * scale))
print(scale, now, before, after, start)
'''


def recipe_script():
    with open(GEN) as f:
        gen = f.read()
    assert gen.count("\nlog.finalize()") == 1
    return gen.replace("\nlog.finalize()", RECIPE_END + "log.finalize()")


@pytest.mark.parametrize("metric", ["NS", "US"])
def test_time_metric_api_takes_what_pydftracer_takes(tmp_path, metric):
    script = tmp_path / "recipe.py"
    script.write_text(recipe_script())
    env = clean_env(DFTRACER_ENABLE="1", DFTRACER_TIME_METRIC=metric)
    results = {}
    for who, python in (("pydftracer", None), ("ours", sys.executable)):
        d = tmp_path / who
        d.mkdir()
        if python is None:
            out = run_pydftracer(str(script), str(d / "t"), cwd=d, env=env).stdout
        else:
            proc = subprocess.run([python, str(script), str(d / "t")], cwd=str(d), env=env, capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            out = proc.stdout
        scale, now, before, after, start = out.split()
        scale, now, before, after, start = float(scale), int(now), int(before), int(after), int(start)
        per_ns = round(1e9 / scale)
        assert scale == {"NS": 1e9, "US": 1e6}[metric], who
        assert before // per_ns - 1 <= now <= after // per_ns + 1, (who, now, before, after)  # get_time()'s unit
        files = [str(d / n) for n in os.listdir(d) if n.endswith((".pfw.gz", ".pfw"))]
        assert len(files) == 1, (who, files)
        df = events(files[0])
        ev = df[df["name"] == "recipe"]
        assert len(ev) == 1, who
        assert int(ev["ts_ns"].iloc[0]) == start * per_ns, who  # the start it was given, in get_time()'s unit
        results[who] = (int(ev["dur_ns"].iloc[0]), scale)
    assert results["ours"] == results["pydftracer"] == (2_500_000, {"NS": 1e9, "US": 1e6}[metric])


IO_SCRIPT = r'''
import sys
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(logfile=sys.argv[1], data_dir=None, process_id=-1)
with dft_fn("APP", name="work"):
    with open(sys.argv[1] + ".data", "w") as f:
        f.write("x" * 100)
    with open(sys.argv[1] + ".data") as f:
        f.read()
log.finalize()
'''


def test_init_preload_without_the_preload_library_traces_no_io(tmp_path):
    """DFTRACER_INIT=PRELOAD means DFTracer's preload library traces the I/O:
    without it in LD_PRELOAD, pydftracer traces none (it writes no file at
    all) and neither do we; our file keeps the program's own event, and one
    warning says why the I/O is missing. FUNCTION traces it in-process."""
    script = tmp_path / "io.py"
    script.write_text(IO_SCRIPT)
    ran = {}
    for init in ("PRELOAD", "FUNCTION"):
        env = clean_env(DFTRACER_ENABLE="1", DFTRACER_DATA_DIR="all", DFTRACER_INIT=init)
        env.pop("LD_PRELOAD", None)
        d = tmp_path / init
        d.mkdir()
        proc = subprocess.run([sys.executable, str(script), str(d / "t")], cwd=str(d), env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        files = [str(d / n) for n in os.listdir(d) if n.endswith(".pfw.gz")]
        assert len(files) == 1, files
        names = collections.Counter(events(files[0])["cat"])
        ran[init] = (names, proc.stderr)
        ref = tmp_path / ("ref-" + init)
        ref.mkdir()
        run_pydftracer(str(script), str(ref / "t"), cwd=ref, env=env)
        ref_files = [str(ref / n) for n in os.listdir(ref) if n.endswith(".pfw.gz")]
        ref_io = sum(e.get("cat") == "POSIX" for f in ref_files for e in raw_lines(f))
        assert (ref_io > 0) == (init == "FUNCTION"), (init, ref_files)
    names, stderr = ran["PRELOAD"]
    assert names["POSIX"] == 0 and names["APP"] == 1, names
    warnings = [line for line in stderr.splitlines() if "DFTRACER_INIT=PRELOAD" in line]
    assert len(warnings) == 1 and "LD_PRELOAD" in warnings[0], stderr
    names, stderr = ran["FUNCTION"]
    assert names["POSIX"] > 0 and names["APP"] == 1 and "DFTRACER_INIT" not in stderr, (names, stderr)
