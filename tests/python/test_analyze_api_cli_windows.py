"""Every dftracer.analyze function that reads events takes the CLI's time
window (from_ts/to_ts: `--from/--to`) and gives the CLI's answer for it, on
traces the real tracer wrote: a compiled 2-layer transformer encoder trained
4 steps at two widths (test_analyze_diff_tree's runs: modules, FLOPs, steps)
and a 2-rank DDP job under torchrun (ranks_job.py: collectives, a straggler).

efficiency, module_tree, diff, steps, ranks, summary(by="rank"), report,
events and to_parquet are compared with `summary --efficiency`, `summary --by
module --tree`, `diff`, `summary --by step`, `ranks`, `summary --by rank`,
`report` and `merge` / `export` with the same window, locally and, where the
function has a Dask path, on a LocalCluster. A reversed or empty window and a
bad unit are one-line ValueErrors, the CLI's own message.
"""
import collections
import json
import os
import subprocess
import sys

import pytest

from analyzer_cli import analyzer
from test_analyze_diff_tree import runs  # noqa: F401  (the fixture: two real training runs)

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The trace files of a 2-rank DDP job, 4 steps, rank 1 late in step 2."""
    import ranks_job

    d = tmp_path_factory.mktemp("ddp")
    proc, files = ranks_job.run_job(str(d), 2, steps=4, sleep_rank=1, sleep_step=2, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(files) == 2, files
    return files


def run_cli(*args, window=(None, None), check=True):
    cmd = [analyzer(), *args, "--no-progress"]
    for opt, v in zip(("--from", "--to"), window):
        if v is not None:
            cmd += [opt, str(v)]
    env = dict(os.environ, DFTRACER_PYTHON=sys.executable)  # export runs in this interpreter's package
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if check:
        assert p.returncode == 0, (cmd, p.stderr)
    return p


def cli_json(*args, window=(None, None)):
    return json.loads(run_cli(*args, "--format", "json", window=window).stdout)


def plain(v):
    """A DataFrame cell as the JSON has it (NaN / None as null, numpy scalars as Python's)."""
    if hasattr(v, "item"):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def records(df):
    return [{k: plain(v) for k, v in r.items()} for r in df.to_dict("records")]


def us_text(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def time_range_ns(paths):
    """(first ts, last ts + dur) of the complete events, in ns."""
    first, last = None, None
    for b in da.events(paths, format="numpy", ph="X", raw_args=False):
        lo, hi = int(b["ts_ns"].min()), int((b["ts_ns"] + b["dur_ns"]).max())
        first, last = min(first or lo, lo), max(last or hi, hi)
    return first, last


def windows(paths):
    """Windows that cut the run at its steps' starts (found without a window), in every form the
    CLI takes: relative to the trace start and end, one-sided, absolute as an exact decimal str,
    an int and a float."""
    first, last = time_range_ns(paths)
    starts = sorted(da.steps(paths)["start_us"].astype(int).unique())
    assert len(starts) >= 4, starts
    s1, s2, s3 = (int(s) * 1000 for s in starts[1:4])
    return [(f"+{(s1 - first) // 1_000_000 + 1}ms", f"-{(last - s3) // 1_000_000 + 1}ms"),
            (us_text(s1 + 123), us_text(s3)), (s2 // 1000, None), (None, float(s3 // 1000)),
            (f"+{(s2 - first) // 1000}us", None)]


def tree_rows(doc):
    flat = []

    def walk(node):
        flat.append({c: node[c] for c in da.MODULE_TREE_COLUMNS})
        for c in node["children"]:
            walk(c)

    for r in doc["roots"]:
        walk(r)
    return flat


def test_efficiency_module_tree_and_steps_windows_are_the_clis(runs):  # noqa: F811
    trace = runs[0]
    answers = collections.defaultdict(set)
    for w in windows(trace):
        want = cli_json("summary", trace, "--efficiency", "--by", "module", window=w)
        got = da.efficiency(trace, by="module", from_ts=w[0], to_ts=w[1])
        assert records(got) == want["rows"], w
        assert got.attrs["stats"]["events"] < da.efficiency(trace, by="module").attrs["stats"]["events"], w
        answers["efficiency"].add(json.dumps(want["rows"]))

        want = cli_json("summary", trace, "--by", "module", "--tree", window=w)
        got = da.module_tree(trace, from_ts=w[0], to_ts=w[1])
        assert records(got) == tree_rows(want), w
        assert got.attrs["totals"]["unattributed_events"] == want["unattributed_events"], w
        answers["module_tree"].add(json.dumps(want["roots"]))

        want = cli_json("summary", trace, "--by", "step", window=w)
        got = da.steps(trace, from_ts=w[0], to_ts=w[1])
        assert records(got) == [{c: r[c] for c in got.columns} for r in want["steps"]], w
        assert got.attrs["processes"] == want["processes"], w
        answers["steps"].add(json.dumps(want["steps"]))
    for name, seen in answers.items():
        assert len(seen) > 2, name  # the windows cut the trace differently


def diff_rows(doc, by):
    return [{c: r[c] for c in [by, *da.DIFF_COLUMNS, "within_noise"]} for r in doc["rows"]]


def spread(doc):
    return {k: doc[k] for k in ("steps", "step_outliers", "step_median_us", "step_spread_pct")}


def diff_windows(runs):  # noqa: F811
    """Relative bounds that fall inside both runs: each run's own start and end."""
    head = min(int(windows(r)[0][0][1:-2]) for r in runs)
    tail = min(int(windows(r)[0][1][1:-2]) for r in runs)
    return (f"+{head}ms", None), (None, f"-{tail}ms")


def test_diff_window_is_each_runs_own_as_the_clis(runs):  # noqa: F811
    narrow, wide = runs
    seen = set()
    for w in diff_windows(runs):
        want = cli_json("diff", narrow, wide, "--by", "module", window=w)
        got = da.diff(narrow, wide, by="module", from_ts=w[0], to_ts=w[1])
        assert records(got) == diff_rows(want, "module"), w
        assert got.attrs["totals"]["traced_a_us"] == want["a"]["traced_us"], w
        assert got.attrs["totals"]["traced_b_us"] == want["b"]["traced_us"], w
        # The noise estimate: each run's steps in the window, as the command.
        assert plain(got.attrs["totals"]["noise_pct"]) == want["noise_pct"], w
        assert got.attrs["totals"]["spread_a"] == spread(want["a"]), w
        assert got.attrs["totals"]["spread_b"] == spread(want["b"]), w
        seen.add(json.dumps(want["rows"]))
    assert len(seen) == 2


def test_ranks_and_summary_by_rank_windows_are_the_clis(job):
    seen = set()
    for w in windows(job):
        want = cli_json("ranks", *job, window=w)
        got = da.ranks(job, from_ts=w[0], to_ts=w[1])
        for t in da.RankAnalysis.TABLES:
            table = getattr(got, t)
            assert list(table.columns) == want[t]["columns"], (t, w)
            assert [[plain(v) for v in r] for r in table.itertuples(index=False, name=None)] == want[t]["rows"], (t, w)
        assert got.info["events"] == want["events"], w
        want = cli_json("summary", "--by", "rank", *job, window=w)
        got = da.summary(job, by="rank", from_ts=w[0], to_ts=w[1])
        assert [[plain(v) for v in r] for r in got.itertuples(index=False, name=None)] == want["ranks"]["rows"], w
        seen.add(json.dumps(want["ranks"]["rows"]))
    assert len(seen) > 2  # the windows cut the job differently


def event_counts(names, phs):
    return collections.Counter((n, p) for n, p in zip(names, phs) if p != "M")


def merged_counts(path):
    with open(path) as f:
        return event_counts(*zip(*((e["name"], e["ph"]) for e in json.load(f)["traceEvents"])))


def parquet_counts(out_dir):
    import pyarrow.dataset as pads

    t = pads.dataset(out_dir, format="parquet", partitioning="hive").to_table(columns=["name", "ph"])
    return event_counts(t.column("name").to_pylist(), t.column("ph").to_pylist())


def test_events_and_to_parquet_windows_are_what_merge_and_export_keep(job, tmp_path):
    pytest.importorskip("pyarrow")
    seen = set()
    for i, w in enumerate(windows(job)):
        out = str(tmp_path / f"merged{i}.json")
        run_cli("merge", *job, "-o", out, "--epoch-ts", window=w)
        want = merged_counts(out)
        got = collections.Counter()
        for b in da.events(job, from_ts=w[0], to_ts=w[1], raw_args=False, batch_size=500):
            got += event_counts(b["name"].astype(str), b["ph"].astype(str))
        assert got == want, w
        api_dir, cli_dir = str(tmp_path / f"api{i}"), str(tmp_path / f"cli{i}")
        r = da.to_parquet(job, api_dir, from_ts=w[0], to_ts=w[1])
        assert parquet_counts(api_dir) == want, w
        assert r["partitioning"] == "rank"
        run_cli("export", "--format", "parquet", "-o", cli_dir, *job, window=w)
        assert parquet_counts(cli_dir) == want, w
        seen.add(sum(want.values()))
    assert len(seen) > 2  # the windows cut the job differently


def test_report_window_is_the_clis(runs, tmp_path):  # noqa: F811
    trace = runs[0]
    pages = set()
    # Steps 1-2 and step 2 on: windows 0 and 1 differ only by a millisecond
    # at each end, which on a fast machine may hold no event.
    for i, w in enumerate(windows(trace)[0:3:2]):
        cli_out, api_out = str(tmp_path / f"cli{i}.html"), str(tmp_path / f"api{i}.html")
        answer = run_cli("report", trace, "-o", cli_out, window=w).stdout
        r = da.report(trace, api_out, from_ts=w[0], to_ts=w[1])
        assert r["answer"] == answer, w
        with open(cli_out, "rb") as a, open(api_out, "rb") as b:
            page = a.read()
            assert page == b.read(), w
        pages.add(page)
        assert r["events"] == r["stats"]["events"] > 0
    assert len(pages) == 2
    cli_out, api_out = str(tmp_path / "top.html"), str(tmp_path / "top-api.html")
    assert da.report(trace, api_out, top=3)["answer"] == run_cli("report", trace, "-o", cli_out, "--top", "3").stdout
    with pytest.raises(ValueError, match="top must be a positive number"):
        da.report(trace, str(tmp_path / "x.html"), top=0)


def test_dask_windows_equal_the_local_ones(runs, job, tmp_path):  # noqa: F811
    pytest.importorskip("dask.distributed")
    pytest.importorskip("pyarrow")
    narrow, wide = runs
    client = da.local_cluster(n_workers=2)
    try:
        for i, w in enumerate(windows(narrow)[:2]):
            kw = dict(from_ts=w[0], to_ts=w[1])
            pd.testing.assert_frame_equal(da.module_tree(narrow, client=client, **kw), da.module_tree(narrow, **kw))
            remote = da.steps(narrow, client=client, **kw)
            pd.testing.assert_frame_equal(remote, da.steps(narrow, **kw))
            assert len(remote)
        for w in diff_windows(runs):
            kw = dict(from_ts=w[0], to_ts=w[1])
            remote, local = da.diff(narrow, wide, by="module", client=client, **kw), da.diff(narrow, wide, by="module", **kw)
            pd.testing.assert_frame_equal(remote, local)
            for side in ("spread_a", "spread_b"):
                assert remote.attrs["totals"][side] == pytest.approx(local.attrs["totals"][side], rel=1e-12, nan_ok=True)
        for i, w in enumerate(windows(job)[:3]):
            kw = dict(from_ts=w[0], to_ts=w[1])
            local = collections.Counter()
            for b in da.events(job, raw_args=False, **kw):
                local += event_counts(b["name"].astype(str), b["ph"].astype(str))
            ddf = da.events(job, format="dask", client=client, raw_args=False, **kw).compute()
            assert event_counts(ddf["name"], ddf["ph"]) == local, w
            ddf = da.events(job, format="dask", raw_args=False, **kw).compute()  # dask's default scheduler
            assert event_counts(ddf["name"], ddf["ph"]) == local, w
            out = str(tmp_path / f"dask{i}")
            da.to_parquet(job, out, client=client, **kw)
            assert parquet_counts(out) == local, w
        with pytest.raises(ValueError, match="--from must be before --to"):
            da.module_tree(narrow, client=client, from_ts="+2s", to_ts="+1s")
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


def cli_error(*args, window):
    p = run_cli(*args, window=window, check=False)
    assert p.returncode == 2, p.stderr
    return p.stderr.splitlines()[0].removeprefix("dftracer-analyze: ")


@pytest.mark.parametrize("window", [("+2s", "+1s"), ("-1s", "-2s"), ("1795834286807487", "1795834286807486"),
                                    ("+1xs", None), (None, "soon")])
def test_a_bad_window_is_the_clis_one_line_error(runs, tmp_path, window):  # noqa: F811
    trace = runs[0]
    calls = {
        ("summary", "--efficiency"): lambda **w: da.efficiency(trace, **w),
        ("summary", "--by", "module", "--tree"): lambda **w: da.module_tree(trace, **w),
        ("summary", "--by", "step"): lambda **w: da.steps(trace, **w),
        ("diff", trace): lambda **w: da.diff(trace, trace, **w),
        ("ranks",): lambda **w: da.ranks(trace, **w),
        ("summary", "--by", "rank"): lambda **w: da.summary(trace, by="rank", **w),
        ("report", "-o", str(tmp_path / "r.html")): lambda **w: da.report(trace, str(tmp_path / "r.html"), **w),
        ("merge", "--epoch-ts", "-o", str(tmp_path / "m.json")): lambda **w: list(da.events(trace, **w)),
        ("export", "--format", "parquet", "-o", str(tmp_path / "e")):
            lambda **w: da.to_parquet(trace, str(tmp_path / "p"), **w),
    }
    for args, call in calls.items():
        want = cli_error(*args, trace, window=window)
        with pytest.raises(ValueError) as e:
            call(from_ts=window[0], to_ts=window[1])
        msg = str(e.value)
        # The CLI's line; where it refuses a reversed window before reading, its line is the
        # start of this one, which goes on to say where the bounds fall in the trace.
        assert "\n" not in msg and msg and (want.endswith(msg) or msg.startswith(want + ": ")), (args, want, msg)
    assert not os.path.exists(tmp_path / "p") and not os.path.exists(tmp_path / "r.html")
    for call in calls.values():
        with pytest.raises(TypeError, match="from_ts must be"):
            call(from_ts=[1])
