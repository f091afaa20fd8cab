"""DFTracer's own tools (dftracer-utils, from PyPI) read our raw trace files as
they are and find what our analyzer finds; and our analyzer reads a trace
DFTracer 2.2 wrote (its numeric-"ph" line format) with the tools' counts.

The tools live in the reference venv that scripts/setup.sh creates (see
reference_tools.py); skipped with that reason when it is absent.

dftracer_validate, dftracer_event_count, dftracer_info and dftracer_stats
read gzip traces only (a plain file gets "dftracer traces must be
gzip-compressed"): a .pfw is handed to them as a gzip of its exact bytes, as
their own error message says to do; dftracer_view reads the .pfw itself.
"""
import gzip
import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest

from training_run import run_training

from reference_tools import BIN, DATA, SKIP_REASON, have_tools

pytestmark = pytest.mark.skipif(not have_tools(), reason=SKIP_REASON)


def tool(name, *args, cwd):
    proc = subprocess.run([os.path.join(BIN, name), *args, "--log-level", "error"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{name} {args}: rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def ours(path):
    """What our analyzer reads: complete events, their per-name counts and
    duration sums, per-category counts, first start, last end."""
    import dftracer.analyze as da

    df = pd.concat(list(da.events(path, raw_args=False)))
    x = df[df["ph"] == "X"]
    summary = da.summary(path)
    return {
        "count": int(summary.attrs["totals"]["complete_events"]),
        # every event but the metadata ("ph":"M") ones: complete, flow, instant
        "timed": int((df["ph"] != "M").sum()),
        "span_us": summary.attrs["totals"]["span_us"],
        "by_name": {r["name"]: (int(r["count"]), round(r["total_us"])) for _, r in summary.iterrows()},
        "by_cat": {k.lower(): int(v) for k, v in x["cat"].value_counts().items()},
        "min_ts": int(x["ts_ns"].min()) // 1000,
        "max_end": int((x["ts_ns"] + x["dur_ns"]).max()) // 1000,
        "dur_min": int(x["dur_ns"].min()) // 1000,
        "dur_max": int(x["dur_ns"].max()) // 1000,
        "dur_mean": float(x["dur_ns"].mean()) / 1000,
    }


def dftracer_22_trace(work):
    """A trace DFTracer 2.2 itself writes (numeric "ph", "type"), from the
    reference venv's pydftracer running tests/data/dftracer-2.2-pydftracer.py."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(DFTRACER_ENABLE="1", DFTRACER_INC_METADATA="1")
    subprocess.run([os.path.join(BIN, "python"), os.path.join(DATA, "dftracer-2.2-pydftracer.py"), str(work / "ref")],
                   cwd=str(work), env=env, check=True, timeout=120)
    files = [str(work / n) for n in os.listdir(work) if n.startswith("ref-") and n.endswith(".pfw.gz")]
    assert len(files) == 1, files
    return files[0]


@pytest.fixture(scope="module", params=["pfw.gz", "pfw", "dftracer-2.2"])
def traced(request, tmp_path_factory):
    """(trace path, work dir, gzip path for the gzip-only tools): our raw
    trace of a small compiled training run (.pfw.gz, .pfw), and a trace
    DFTracer 2.2 wrote (our analyzer must read it as dftracer-utils does)."""
    from conftest import run_python_in

    work = tmp_path_factory.mktemp("tools")
    compress = request.param != "pfw"
    if request.param == "dftracer-2.2":
        path = dftracer_22_trace(work)
    else:
        path = run_training(lambda code, env, timeout: run_python_in(work, code, env, timeout),
                            str(work / "train"), compress=compress)
    gz_dir = work / "gz"
    gz_dir.mkdir()
    gz = gz_dir / (os.path.basename(path) + ("" if compress else ".gz"))
    if compress:
        shutil.copyfile(path, gz)
    else:
        with open(path, "rb") as src, gzip.open(gz, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return path, str(work), str(gz)


def test_dftracer_validate_passes(traced):
    path, work, gz = traced
    out = tool("dftracer_validate", "--files", gz, cwd=work)
    m = re.search(r"Validated 1 file\(s\): (\d+) passed, (\d+) failed, (\d+) lines", out)
    assert m and m.group(1, 2) == ("1", "0"), out
    with gzip.open(gz, "rt") as f:
        assert int(m.group(3)) == sum(1 for line in f if line.strip() not in ("[", "]")), out


def test_event_count_and_info_count_what_our_analyzer_counts(traced):
    path, work, gz = traced
    want = ours(path)
    # Both count every event but metadata (the flow events too).
    out = tool("dftracer_event_count", "-d", os.path.dirname(gz), "--index-dir", work, cwd=work)
    assert int(out.strip().splitlines()[-1]) == want["timed"], out
    if "ref-" not in path:
        assert want["timed"] > want["count"]  # our run has flow events: the two counts differ
    out = tool("dftracer_info", "--files", gz, "--index-dir", work, cwd=work)
    assert re.search(r"Valid Events:\s+(\d+)", out).group(1) == str(want["timed"]), out
    assert re.search(r"Failed:\s+(\d+)", out).group(1) == "0", out


def test_stats_counts_time_span_and_durations_equal_ours(traced):
    path, work, gz = traced
    want = ours(path)
    s, = json.loads(tool("dftracer_stats", "--files", gz, "--index-dir", work, "--json", cwd=work))
    assert s["total_events"] == want["count"]
    assert {r["name"]: r["count"] for r in s["results"]} == want["by_cat"]
    tr = s["time_range"]
    assert tr["min_timestamp_us"] == want["min_ts"] and tr["max_timestamp_us"] == want["max_end"], (tr, want)
    assert tr["time_span_seconds"] == pytest.approx(want["span_us"] / 1e6, abs=1e-6)
    d = s["duration"]
    assert d["count"] == want["count"] and d["min_us"] == want["dur_min"] and d["max_us"] == want["dur_max"]
    assert d["mean_us"] == pytest.approx(want["dur_mean"], rel=1e-9)
    assert want["dur_max"] > 0  # whole microseconds: nothing read as 0


def test_view_per_name_counts_and_duration_sums_equal_ours(traced):
    path, work, gz = traced
    want = ours(path)["by_name"]
    out = tool("dftracer_view", "--files", path, "--index-dir", work, "--group-by", "name", "--agg", "count,sum:dur",
               cwd=work)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    got = {r["name"]: (r["count"], r["sum_dur"]) for r in rows}
    assert got == want
    assert sum(c for c, _ in got.values()) == ours(path)["count"]


def test_tools_read_a_trace_with_memory_capture(tmp_path):
    """A raw trace with memory capture on: its block events ("alloc"/"free",
    cat memory) and the memory track's samples carry no "id", the block
    events no "s"; DFTracer's tools validate the file and count every event
    our analyzer counts."""
    from conftest import run_python_in

    path = run_training(lambda code, env, timeout: run_python_in(tmp_path, code, env, timeout),
                        str(tmp_path / "mem"), env={"DFTRACER_TRACE_EAGER": "1", "DFTRACER_MEMORY": "1"})
    with gzip.open(path, "rt") as f:
        events = [json.loads(line) for line in f if line.startswith("{")]
    memory = [e for e in events if e.get("cat") == "memory"]
    blocks = [e for e in memory if e["ph"] == "i"]
    assert {e["name"] for e in blocks} == {"alloc", "free"}, {e["name"] for e in memory}
    assert any(e["ph"] == "C" for e in memory)
    assert all("id" not in e for e in memory) and all("s" not in e for e in blocks)
    assert all("id" in e for e in events if e["ph"] in ("X", "M"))
    gz_dir = tmp_path / "gz"
    gz_dir.mkdir()
    gz = gz_dir / os.path.basename(path)
    shutil.copyfile(path, gz)
    out = tool("dftracer_validate", "--files", str(gz), cwd=str(tmp_path))
    m = re.search(r"Validated 1 file\(s\): (\d+) passed, (\d+) failed, (\d+) lines", out)
    assert m and m.group(1, 2) == ("1", "0"), out
    assert int(m.group(3)) == len(events)
    want = ours(path)
    out = tool("dftracer_event_count", "-d", str(gz_dir), "--index-dir", str(tmp_path), cwd=str(tmp_path))
    assert int(out.strip().splitlines()[-1]) == want["timed"], out
    out = tool("dftracer_info", "--files", str(gz), "--index-dir", str(tmp_path), cwd=str(tmp_path))
    assert re.search(r"Valid Events:\s+(\d+)", out).group(1) == str(want["timed"]), out
    assert re.search(r"Failed:\s+(\d+)", out).group(1) == "0", out
