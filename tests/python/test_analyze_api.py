"""dftracer.analyze: summary() and events() on the C++ reader, checked against
an independent pure-Python parse (trace_reader) of the same files.

The traces come from the real tracer (dftracer.python.dftracer.initialize_log
and dft_fn regions with known counts, written in a child interpreter) and from
generated files with known op args and known bad lines.
"""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

from trace_reader import read_trace, trace_files

import dftracer.analyze as da  # noqa: E402  (an install without it is out of date: fail, do not skip)

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---------------------------------------------------------------------------
# Traces

TRACED = """
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "api.pfw"), None, -1)
fn = dft_fn("compute")

@fn.log
def inner(x):
    return x + 1

for epoch in range(3):
    with dft_fn("train", "outer", epoch=epoch):
        for j in range(4):
            inner(j)
for k in range(5):
    with dft_fn("io", "load", step=k):
        pass
log.finalize()
"""
COUNTS = {"inner": 12, "outer": 3, "load": 5}


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory):
    """(path, events) of a trace the real tracer wrote, events parsed by trace_reader."""
    d = tmp_path_factory.mktemp("real")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["TRACE_DIR"] = str(d)
    env["DFTRACER_ENABLE"] = "1"
    env["DFTRACER_TIME_RESOLUTION"] = "ns"  # the nanosecond tests read its fractions
    subprocess.run([sys.executable, "-c", textwrap.dedent(TRACED)], env=env, check=True, timeout=120)
    files = trace_files(str(d))
    assert len(files) == 1, files
    return files[0], read_trace(files[0])


def op_event(i, pid=100, tid=101):
    """A capture-backend style op event with deterministic content."""
    return {"id": i, "name": f"function.aten.op{i % 5}", "cat": "torch", "pid": pid, "tid": tid,
            "ts": 1.7e15 + 10.0 * i, "dur": 1.0 + (i % 7) * 0.5, "ph": "X",
            "args": {"phase": ("forward", "backward")[i % 2], "module": f"model.layer{i % 3}",
                     "graph": i % 2, "flops": 1000.0 * (i % 4), "bytes": 64.0 * (i % 6)}}


def write_trace(path, events, extra_lines=()):
    lines = ["["] + [json.dumps(e) + "," for e in events] + list(extra_lines)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return str(path)


# ---------------------------------------------------------------------------
# summary()

def test_summary_counts_and_totals_of_real_trace(real_trace):
    path, evs = real_trace
    xs = [e for e in evs if e["ph"] == "X"]
    df = da.summary(path)  # a directory, glob or list would do as well
    assert list(df.columns) == ["name", "count", "self_us", "total_us", "mean_us", "min_us", "p50_us", "p95_us", "max_us",
                                "share", "gflops", "gbps"]
    rows = df.set_index("name")
    for name, n in COUNTS.items():
        durs = [e["dur"] for e in xs if e["name"] == name]
        assert len(durs) == n
        r = rows.loc[name]
        assert r["count"] == n
        assert r["total_us"] == pytest.approx(sum(durs), rel=1e-12, abs=1e-9)
        assert r["min_us"] == min(durs) and r["max_us"] == max(durs)
        assert r["mean_us"] == pytest.approx(sum(durs) / n, rel=1e-12, abs=1e-9)
        assert min(durs) <= r["p50_us"] <= r["p95_us"] <= max(durs)
        assert np.isnan(r["gflops"]) and np.isnan(r["gbps"])
    # Every complete event is in exactly one group; rows by self time, descending.
    assert set(df["name"]) == {e["name"] for e in xs}
    assert df["count"].sum() == len(xs)
    assert df["share"].sum() == pytest.approx(1.0)
    assert list(df["self_us"]) == sorted(df["self_us"], reverse=True)
    assert (df["self_us"] <= df["total_us"]).all()
    totals = df.attrs["totals"]
    assert totals["complete_events"] == len(xs)
    assert totals["metadata_events"] == sum(e["ph"] == "M" for e in evs)
    assert totals["total_us"] == pytest.approx(sum(e["dur"] for e in xs))
    stats = df.attrs["stats"]
    assert stats["files"] == 1 and stats["events"] == len(evs) and stats["skipped_lines"] == 0
    assert stats["problems"] == ""


def test_summary_by_category_top_and_list_of_keys(real_trace):
    path, evs = real_trace
    by_cat = da.summary([path], by="cat").set_index("cat")
    assert by_cat.loc["compute", "count"] == COUNTS["inner"]
    assert by_cat.loc["train", "count"] == COUNTS["outer"]
    assert by_cat.loc["io", "count"] == COUNTS["load"]
    top = da.summary(path, by="name", top=2)
    assert len(top) == 2 and top.attrs["totals"]["groups"] > 2
    both = da.summary(path, by=["cat", "name"], threads=1)
    assert list(both.columns[:2]) == ["cat", "name"]
    assert both.set_index(["cat", "name"]).loc[("compute", "inner"), "count"] == COUNTS["inner"]


def test_summary_by_any_args_key(real_trace, tmp_path):
    """--by args.<key>: a well-known arg (step) and any other (the tracer's epoch tag,
    a made-up rank), checked against the independent parse and the command line."""
    path, evs = real_trace
    xs = [e for e in evs if e["ph"] == "X"]

    def expected(key):
        out = {}
        for e in xs:
            v = e.get("args", {}).get(key)
            k = "(none)" if v is None or v == "" else (json.dumps(v) if isinstance(v, (list, dict)) else str(v))
            out[k] = out.get(k, 0) + 1
        return out

    by_step = da.summary(path, by="args.step")
    assert list(by_step.columns[:1]) == ["args.step"]
    assert dict(zip(by_step["args.step"], by_step["count"])) == expected("step")
    assert {str(k) for k in range(5)} <= set(by_step["args.step"])
    both = da.summary(path, by=["args.epoch", "name"])
    got = {(a, b): c for a, b, c in zip(both["args.epoch"], both["name"], both["count"])}
    assert got[("0", "outer")] == 1 and got[("2", "outer")] == 1 and got[("(none)", "load")] == COUNTS["load"]

    ops = [dict(op_event(i), args=dict(op_event(i)["args"], rank=i % 3, dims=[i % 2, 4])) for i in range(30)]
    p2 = write_trace(tmp_path / "ranks.pfw", ops)
    r = da.summary(p2, by="args.rank,args.dims")
    got = {(a, b): c for a, b, c in zip(r["args.rank"], r["args.dims"], r["count"])}
    # lists as their JSON text without whitespace, however the writer spaced them
    assert got == {(str(i % 3), json.dumps([i % 2, 4], separators=(",", ":"))): 5 for i in range(6)}
    import shutil
    exe = os.environ.get("DFTRACER_ANALYZE_BIN") or shutil.which("dftracer-analyze")
    if exe:
        out = subprocess.run([exe, "summary", "--by", "args.rank", "--format", "json", p2], check=True,
                             capture_output=True, text=True).stdout
        assert {row["args.rank"]: row["count"] for row in json.loads(out)["rows"]} == {"0": 10, "1": 10, "2": 10}
    with pytest.raises(ValueError, match=r"cannot group by 'args.flops'.*args\.<key>"):
        da.summary(p2, by="args.flops")
    # events() carries the well-known args as columns.
    b = next(iter(da.events(path, format="numpy", raw_args=False, ph="X")))
    assert {"step", "epoch", "source", "shapes", "dtype"} <= set(b)
    assert sorted(v for v in b["step"] if v is not None) == [str(k) for k in range(5)]


def test_summary_op_args_throughput_and_missing_keys(tmp_path):
    evs = [op_event(i) for i in range(200)]
    evs.append({"name": "untagged", "cat": "app", "pid": 100, "tid": 101, "ts": 1.7e15, "dur": 4.0, "ph": "X"})
    path = write_trace(tmp_path / "ops.pfw", evs)
    df = da.summary(path, by="module,phase")
    rows = df.set_index(["module", "phase"])
    for (mod, phase), g in rows.iterrows():
        mine = [e for e in evs if e.get("args", {}).get("module", "(none)") == mod
                and e.get("args", {}).get("phase", "(none)") == phase]
        assert g["count"] == len(mine)
        if mod == "(none)":
            assert np.isnan(g["gflops"]) and np.isnan(g["gbps"])
            continue
        t = sum(e["dur"] for e in mine)
        # flop/us -> GFLOP/s is 1e-3, byte/us -> GB/s likewise.
        assert g["gflops"] == pytest.approx(sum(e["args"]["flops"] for e in mine) / t * 1e-3, rel=1e-12)
        assert g["gbps"] == pytest.approx(sum(e["args"]["bytes"] for e in mine) / t * 1e-3, rel=1e-12)
    assert rows.loc[("(none)", "(none)"), "count"] == 1
    assert df["count"].sum() == 201


def test_summary_matches_the_command_line(tmp_path):
    """Same numbers as `dftracer-analyze summary --format json` when the command is around."""
    import shutil
    exe = os.environ.get("DFTRACER_ANALYZE_BIN") or shutil.which("dftracer-analyze")
    if not exe:
        pytest.skip("dftracer-analyze is not on PATH (set DFTRACER_ANALYZE_BIN)")
    path = write_trace(tmp_path / "ops.pfw", [op_event(i) for i in range(300)])
    out = subprocess.run([exe, "summary", "--by", "graph", "--format", "json", path], check=True,
                         capture_output=True, text=True).stdout
    cli = {r["graph"]: r for r in json.loads(out)["rows"]}
    df = da.summary(path, by="graph")
    assert set(df["graph"]) == set(cli)
    for _, r in df.iterrows():
        c = cli[r["graph"]]
        for col in ("count", "self_us", "total_us", "share", "min_us", "p50_us", "p95_us", "max_us", "gflops", "gbps"):
            assert r[col] == pytest.approx(c[col], rel=1e-12), col


# ---------------------------------------------------------------------------
# events()

def _concat(batches):
    return pd.concat([b.astype({c: object for c in b.columns if isinstance(b[c].dtype, pd.CategoricalDtype)})
                      for b in batches], ignore_index=True)


def test_events_match_independent_parse_in_small_batches(real_trace):
    path, evs = real_trace
    it = da.events(path, batch_size=4)
    batches = list(it)
    assert all(len(b) == 4 for b in batches[:-1]) and 1 <= len(batches[-1]) <= 4
    assert list(batches[0].columns) == list(da.EVENT_COLUMNS)
    df = _concat(batches)
    assert len(df) == len(evs)
    assert it.stats["events"] == len(evs) and it.stats["skipped_lines"] == 0
    for row, e in zip(df.itertuples(index=False), evs):  # one thread: file order
        assert (row.name, row.cat, row.ph, row.pid, row.tid) == (e["name"], e["cat"], e["ph"], e["pid"], e["tid"])
        if "ts" in e:
            assert row.ts == e["ts"] and row.dur == e["dur"]
        else:
            assert np.isnan(row.ts) and np.isnan(row.dur)
        assert (json.loads(row.args) if row.args else {}) == e.get("args", {})  # "": the event has no args
    loads = df[df["name"] == "load"]
    assert sorted(json.loads(a)["step"] for a in loads["args"]) == list(range(5))


def test_events_and_summary_keep_nanoseconds(tmp_path, real_trace):
    """Regression: ts/dur were doubles of microseconds inside the reader, so at epoch
    scale every time came out in quarter microseconds and a span of a few ns was 0."""
    import decimal

    lines = ['{"id":%d,"name":"tiny","cat":"op","pid":1,"tid":2,"ts":1727387307981693.%03d,"dur":0.%03d,"ph":"X"},'
             % (i, 1 + i, 1 + i) for i in range(3)]
    path = tmp_path / "ns.pfw"
    path.write_text("[\n" + "\n".join(lines) + "\n")
    df = _concat(list(da.events(path)))
    assert df["ts_ns"].dtype == "Int64" and df["dur_ns"].dtype == "Int64"
    assert list(df["ts_ns"]) == [1727387307981693001, 1727387307981693002, 1727387307981693003]
    assert list(df["dur_ns"]) == [1, 2, 3]
    assert list(df["dur"]) == [0.001, 0.002, 0.003]  # small numbers stay exact as us doubles too
    totals = da.summary(path).attrs["totals"]
    assert totals["span_us"] == pytest.approx(0.005, abs=1e-12)  # .001 to .003 + .003
    assert totals["total_us"] == pytest.approx(0.006, abs=1e-12)
    # The real tracer's file: every ts_ns is the written decimal times 1000, exactly.
    real, _ = real_trace
    exact = []
    import gzip

    with (gzip.open if real.endswith(".gz") else open)(real, "rt") as fh:
        for line in fh:
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                e = json.loads(line, parse_float=decimal.Decimal)
                if "ts" in e:
                    exact.append(int(decimal.Decimal(e["ts"]) * 1000))
    got = [int(v) for v in _concat(list(da.events(real, raw_args=False)))["ts_ns"].dropna()]
    assert got == exact and any(v % 1000 not in (0, 250, 500, 750) for v in got)


def test_events_numpy_format_with_op_fields_and_ph_filter(tmp_path):
    evs = [op_event(i) for i in range(50)]
    meta = {"name": "process_name", "cat": "dftracer", "pid": 100, "tid": 100, "ph": "M",
            "args": {"name": "worker"}}
    path = write_trace(tmp_path / "ops.pfw", [meta] + evs)
    batches = list(da.events(path, format="numpy", ph="X", raw_args=False))
    assert len(batches) == 1
    b = batches[0]
    assert "args" not in b and set(b) == set(da.EVENT_COLUMNS) - {"args"}
    assert b["pid"].dtype == np.int64 and b["ts"].dtype == np.float64
    assert list(b["name"]) == [e["name"] for e in evs]
    assert list(b["phase"]) == [e["args"]["phase"] for e in evs]
    assert list(b["module"]) == [e["args"]["module"] for e in evs]
    assert list(b["graph"]) == [str(e["args"]["graph"]) for e in evs]  # ints kept as their text
    np.testing.assert_array_equal(b["flops"], [e["args"]["flops"] for e in evs])
    np.testing.assert_array_equal(b["bytes"], [e["args"]["bytes"] for e in evs])
    np.testing.assert_array_equal(b["dur"], [e["dur"] for e in evs])
    # Without the filter the metadata event is there, with absent fields as None / NaN.
    first = next(iter(da.events(path, format="numpy")))
    assert first["ph"][0] == "M" and first["phase"][0] is None and np.isnan(first["ts"][0])
    assert json.loads(first["args"][0]) == {"name": "worker"}


def test_events_from_several_files_on_several_threads(tmp_path):
    paths = [write_trace(tmp_path / f"p{k}.pfw", [op_event(i, pid=k) for i in range(300)]) for k in range(3)]
    one = _concat(da.events(str(tmp_path), batch_size=128, threads=1))
    many = _concat(da.events(paths, batch_size=128, threads=2))
    key = ["pid", "ts", "name"]
    a = one.sort_values(key).reset_index(drop=True)
    b = many.sort_values(key).reset_index(drop=True)
    assert len(a) == 900
    pd.testing.assert_frame_equal(a, b)


def test_events_read_ahead_is_bounded_and_close_stops_early(tmp_path):
    path = write_trace(tmp_path / "big.pfw", [op_event(i) for i in range(20000)])
    it = da.events(path, batch_size=500)
    first = next(it)
    assert len(first) == 500
    # The reader may run at most a queue (2 batches) plus the one it fills ahead:
    # it cannot have reached the end of 40 batches, whatever the timing.
    assert not it._stream.finished
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    with da.events(path, batch_size=500) as it2:
        for n, _ in enumerate(it2):
            if n == 2:
                break
    assert it2._stream is None  # closed by the with block


# ---------------------------------------------------------------------------
# Bad input

def test_missing_path_raises_file_not_found_naming_it(tmp_path):
    missing = str(tmp_path / "nope.pfw")
    with pytest.raises(FileNotFoundError, match="nope.pfw"):
        da.summary(missing)
    with pytest.raises(FileNotFoundError, match="nope.pfw"):
        da.events([missing])  # at the call, not at the first batch
    with pytest.raises(FileNotFoundError, match=r"no file matches .*\*\.pfw"):
        da.summary(str(tmp_path / "*.pfw"))
    with pytest.raises(ValueError, match="unknown group key 'colour'"):
        da.summary(missing, by="colour")
    with pytest.raises(ValueError):
        da.summary([])
    with pytest.raises(ValueError):
        da.events(missing, batch_size=0)


def test_bad_lines_are_skipped_and_counted(tmp_path):
    good = [op_event(i) for i in range(10)]
    bad = ["this is not json,", '{"name":"half","cat":"x","pid":1,', '{"name":5,"ph":"X","dur":1},',
           '{"name":"neg","ph":"X","dur":-3,"ts":1},']
    path = write_trace(tmp_path / "bad.pfw", good[:5], bad + [json.dumps(e) + "," for e in good[5:]])
    with pytest.warns(da.SkippedInputWarning, match="2 malformed or partial lines, 2 events with wrongly typed"):
        df = da.summary(path)
    st = df.attrs["stats"]
    assert (st["malformed"], st["bad_fields"], st["skipped_lines"], st["events"]) == (2, 2, 4, 10)
    assert df["count"].sum() == 10
    with pytest.warns(da.SkippedInputWarning):
        it = da.events(path)
        got = _concat(it)
    assert list(got["name"]) == [e["name"] for e in good]
    assert it.stats["skipped_lines"] == 4 and it.stats["malformed"] == 2


def test_truncated_gzip_keeps_what_came_before(real_trace, tmp_path):
    path, evs = real_trace
    raw = open(path, "rb").read()
    cut = tmp_path / "cut.pfw.gz"
    cut.write_bytes(raw[: len(raw) - 7])  # inside the last gzip member
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", da.SkippedInputWarning)
        df = da.summary(str(cut))
    st = df.attrs["stats"]
    assert st["truncated_members"] + st["corrupt_members"] >= 1
    assert 0 < df.attrs["totals"]["complete_events"] <= sum(e["ph"] == "X" for e in evs)


# ---------------------------------------------------------------------------
# DFTracer's own sample traces

def _samples_dir():
    return os.environ.get("DFTRACER_SAMPLES_DIR") or os.path.join(ROOT, "tests", "data", "dftracer-samples")


def test_summary_of_dftracer_v2_sample():
    # Expected numbers from src/analyze/read/samples_test.cc (obtained with json + gzip).
    f = os.path.join(_samples_dir(), "cm1-DEFAULT-3537780-preload.pfw.gz")
    assert os.path.exists(f), f
    df = da.summary(f, by="cat").set_index("cat")
    assert df.loc["POSIX", "count"] == 6985 and df.loc["POSIX", "total_us"] == 1351271.0
    assert df.loc["STDIO", "count"] == 1095 and df.loc["STDIO", "total_us"] == 93153.0
    assert df.loc["dftracer", "count"] == 2
    assert df.attrs["totals"]["complete_events"] == 8082
    assert df.attrs["totals"]["metadata_events"] == 709
    assert df.attrs["stats"]["problems"] == ""
    posix = sum(int(b["cat"].eq("POSIX").sum()) for b in da.events(f, ph="X", raw_args=False))
    assert posix == 6985


def test_import_needs_neither_torch_nor_pandas():
    code = ("import sys, dftracer.analyze as da; "
            "assert 'torch' not in sys.modules and 'pandas' not in sys.modules, sorted(sys.modules); "
            "print(da._ext is not None)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "True"
