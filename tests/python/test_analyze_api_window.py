"""dftracer.analyze's time windows give what the CLI's --from/--to give:
memory(from_ts=, to_ts=) against `dftracer-analyze memory --from --to
--format json` on a real GPT-2 training trace with allocation capture."""
import json
import subprocess

import pytest

from analyzer_cli import analyzer
from test_analyze_respaced import gpt2_trace  # noqa: F401  (the fixture)


def cli_memory(trace, window):
    args = [analyzer(), "memory", trace, "--format", "json", "--no-progress"]
    if window[0] is not None:
        args += ["--from", str(window[0])]
    if window[1] is not None:
        args += ["--to", str(window[1])]
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True, timeout=300).stdout)


def trace_span_us(trace):
    """From the first event's start to the last one's end, in microseconds."""
    first, last = None, None
    with open(trace) as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            e = json.loads(line)
            if "ts" not in e:
                continue
            ts = float(e["ts"])
            first = ts if first is None else min(first, ts)
            last = max(last or ts, ts + float(e.get("dur", 0)))
    return last - first


def rows(df):
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in df.to_dict("records")]


def test_memory_window_is_the_clis(gpt2_trace):  # noqa: F811
    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    whole = cli_memory(gpt2_trace, (None, None))
    peak_ts = whole["peaks"][0]["peak_ts_us"]
    # Relative bounds as fractions of the trace's span: a quiet machine runs
    # the three steps in under 3 s, a loaded one in far more.
    span_ms = int(trace_span_us(gpt2_trace) / 1000)
    windows = [(f"+{span_ms * 6 // 10}ms", f"-{span_ms // 10}ms"), (f"+{span_ms // 3}ms", None), (None, f"-{span_ms // 3}ms"),
               (repr(peak_ts), None),                  # from the peak on: it is in
               (None, repr(peak_ts)),                  # up to it: it is not
               (peak_ts - 200000, peak_ts + 1)]        # numbers, as the API also takes them
    answers = set()
    for w in windows:
        want = cli_memory(gpt2_trace, w)
        df = da.memory(gpt2_trace, from_ts=w[0], to_ts=w[1])
        assert rows(df) == want["series"], w
        peaks = rows(df.attrs["peaks"])
        assert peaks == [{k: p[k] for k in peaks[0]} for p in want["peaks"]] if peaks else not want["peaks"], w
        assert rows(df.attrs["peaks_without_composition"]) == want.get("peaks_without_composition", []), w
        holders = [(h["by"], h["key"], h["bytes"]) for h in rows(df.attrs["holders"])]
        assert holders == [(by, r["key"], r["bytes"]) for p in want["peaks"]
                           for by in ("op", "module", "phase", "step") for r in p["by_" + by]], w
        assert df.attrs["block_events"] == want["block_events"], w
        answers.add(json.dumps([want["series"], want["peaks"]], sort_keys=True))
    assert len(answers) > 2  # the windows cut the track differently
    assert da.memory(gpt2_trace, from_ts=None, to_ts=None).attrs["block_events"] == whole["block_events"]
    with pytest.raises(TypeError):
        da.memory(gpt2_trace, from_ts=[1])


def cli_json(command, trace, window):
    args = [analyzer(), command, trace, "--format", "json", "--no-progress", "--from", window[0], "--to", window[1]]
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True, timeout=300).stdout)


def test_io_and_device_windows_are_the_clis():
    import os

    import pandas as pd

    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    posix = os.path.join(data, "dftracer-samples", "test-2023.pfw.gz")  # DFTracer's POSIX calls of a DLIO run
    kineto = os.path.join(data, "kineto", "alexnet_trace.json.gz")     # a GPU job's kernels
    for window in (("+200ms", "-500ms"), ("+1s", "-1ms")):
        want = cli_json("io", posix, window)
        got = da.io(posix, from_ts=window[0], to_ts=window[1])
        assert got["total"] == want["total"] and got["by_kind"] == want["by_kind"], window
        assert got["total"] != da.io(posix)["total"], window  # the window cut something
        assert sorted(got["by_call"]["call"]) == sorted(want["by_call"]), window
    for window in (("+100ms", "-100ms"), ("+10s", "-1s")):
        want = cli_json("device", kineto, window)
        got = da.device(kineto, from_ts=window[0], to_ts=window[1])
        for t in ("op", "kernel", "module", "phase", "category", "stream", "step"):
            pd.testing.assert_frame_equal(got[t], pd.DataFrame(want[t]), obj=f"{t} {window}")
        assert got["totals"]["device_events"] == want["device_events"] != da.device(kineto)["totals"]["device_events"]


def test_merge_epoch_ts_and_window_are_the_clis(tmp_path):
    import os

    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    trace = os.path.join(data, "dftracer-samples", "cm1-DEFAULT-3537780-preload.pfw.gz")
    outputs = set()
    for i, (epoch, window) in enumerate([(True, (None, None)), (False, ("+10s", "-60s")), (True, ("+1s", "-100s"))]):
        cli_out, api_out = str(tmp_path / f"cli{i}.json"), str(tmp_path / f"api{i}.json")
        args = [analyzer(), "merge", trace, "-o", cli_out, "--threads", "1", "--no-progress"]
        args += ["--epoch-ts"] if epoch else []
        args += ["--from", window[0], "--to", window[1]] if window[0] else []
        subprocess.run(args, capture_output=True, check=True, timeout=300)
        r = da.merge(trace, api_out, threads=1, epoch_ts=epoch, from_ts=window[0], to_ts=window[1])
        with open(cli_out, "rb") as a, open(api_out, "rb") as b:
            cli_bytes = a.read()
            assert cli_bytes == b.read(), (epoch, window)
        assert r["events_written"] == len(json.loads(cli_bytes)["traceEvents"])
        outputs.add(cli_bytes)
    assert len(outputs) == 3


def test_a_window_reads_the_events_own_ts_whatever_the_key_order(tmp_path):
    # A writer that sorts keys puts args before ts: an args.ts is not the
    # event's time, in the CLI's window and in the API's.
    trace = tmp_path / "sorted.pfw"
    trace.write_text("[\n"
                     '{"args":{"ts":5000},"cat":"op","dur":10,"name":"a","ph":"X","pid":1,"tid":1,"ts":1000}\n'
                     '{"args":{"ts":10},"cat":"op","dur":10,"name":"b","ph":"X","pid":1,"tid":1,"ts":6000}\n')
    out = subprocess.run([analyzer(), "summary", str(trace), "--from", "0", "--to", "2000", "--format", "json"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert [r["name"] for r in json.loads(out)["rows"]] == ["a"]
    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    df = da.summary(str(trace), from_ts=4000, to_ts=7000)
    assert list(df.index if "name" not in df.columns else df["name"]) == ["b"]


def test_merge_epoch_ts_takes_a_yes_or_no_only(tmp_path):
    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    trace = tmp_path / "t.pfw"
    trace.write_text('[\n{"name":"a","ph":"X","pid":1,"tid":1,"ts":1000,"dur":1}\n')
    with pytest.raises(TypeError, match="epoch_ts must be True or False"):
        da.merge(str(trace), str(tmp_path / "m.json"), epoch_ts="no")
    da.merge(str(trace), str(tmp_path / "m.json"), epoch_ts=True)
    assert json.loads((tmp_path / "m.json").read_text())["traceEvents"]
