"""The command and dftracer.analyze give the same answer, figure by figure, on
real traces: a compiled transformer encoder trained 4 steps
(test_analyze_diff_tree's runs), an eager loop with memory capture, a 2-rank
DDP job under torchrun (ranks_job.py) and DFTracer's own traces (tests/data:
pydftracer's in microseconds and in nanoseconds, a DLIO run's POSIX calls, a
preloaded CM1 run).

Each command with a Python counterpart runs with `--format json` and its rows
are compared with the function's, row by row: `summary` under every `--by`
(with `--sort total --top`, `--no-index`), `summary --by category` (the wall
split, locally and on Dask), `summary --by step`, `--efficiency`, `--by module
--tree`, `diff`, `ranks` / `--by rank`, `memory`, `--from/--to` windows, and
the `--sort`/`--top` of `diff`, `--efficiency`, `--tree` and `--by rank`.
(io and device: test_analyze_io_api.py, test_analyze_device.py; the window
forms: test_analyze_api_cli_windows.py.)
"""
import os

import pytest

from analyzer_cli import ROOT
from eager_training import eager_training_trace
from test_analyze_api_cli_windows import job  # noqa: F401  (the fixture: a 2-rank DDP job)
from test_analyze_api_cli_windows import cli_json, plain, records, run_cli, tree_rows, windows
from test_analyze_diff_tree import runs  # noqa: F401  (the fixture: two real compiled training runs)

import dftracer.analyze as da

pd = pytest.importorskip("pandas")


BYS = ["name", "cat", "pid", "tid", "module", "phase", "graph", "args.step", "module,phase",
       "category,name"]


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    pytest.importorskip("torch")
    # Steps of milliseconds: the windows cut between them.
    return eager_training_trace(tmp_path_factory.mktemp("eager"), 4, memory=True, mark_steps=True, sleep_s=0.01)


def dftracer_traces():
    data = os.path.join(ROOT, "tests", "data")
    samples = os.environ.get("DFTRACER_SAMPLES_DIR") or os.path.join(data, "dftracer-samples")
    found = [os.path.join(data, "dftracer-2.2-pydftracer.pfw.gz"), os.path.join(data, "dftracer-2.2-pydftracer-ns.pfw.gz"),
             os.path.join(samples, "test-2023.pfw.gz"), os.path.join(samples, "cm1-DEFAULT-3537780-preload.pfw.gz")]
    return [p for p in found if os.path.exists(p)]


@pytest.fixture(scope="module")
def traces(runs, eager, job):  # noqa: F811
    """{name: paths} of every trace compared."""
    out = {"compiled": [runs[0]], "eager": [eager], "ddp": job}
    out.update({os.path.basename(p): [p] for p in dftracer_traces()})
    return out


TOTALS = ("complete_events", "metadata_events", "other_events", "groups", "total_us", "traced_us", "span_us")


def check_summary(paths, by, *cli_args, **kw):
    want = cli_json("summary", *paths, "--by", by, *cli_args)
    got = da.summary(paths, by=by, **kw)
    assert records(got) == want["rows"], (paths, by, cli_args)
    for k in TOTALS:
        assert got.attrs["totals"][k] == want[k], (paths, by, k)
    return want


def test_summary_under_every_by_is_the_clis(traces):
    for name, paths in traces.items():
        rows = 0
        for by in BYS:
            rows += len(check_summary(paths, by)["rows"])
        check_summary(paths, "name", "--sort", "total", "--top", "3", sort="total", top=3)
        check_summary(paths, "cat", "--no-index", use_index=False)
        check_summary(paths, "category,name", "--top", "3", top=3)
        assert rows > len(BYS), name


def category_rows(paths, *window_args, **window):
    want = cli_json("summary", *paths, "--by", "category", *window_args)
    got = da.summary(paths, by="category", **window)
    assert records(got) == want["rows"], (paths, window)
    for k in ("span_us", "processes", "traced_us", "rule"):
        assert got.attrs[k] == want[k], (paths, k)
    return got


def test_summary_by_category_is_the_clis_wall_split(traces):
    for name, paths in traces.items():
        got = category_rows(paths)
        assert list(got.columns) == list(da.CATEGORY_WALL_COLUMNS)
        assert got["wall_us"].sum() == pytest.approx(got.attrs["span_us"], rel=1e-9), name
        # Its thread time is the self time per category of `--by category,KEY`.
        self_us = da.summary(paths, by="category,name").groupby("category")["self_us"].sum()
        for r in got.itertuples():
            assert r.thread_us == pytest.approx(self_us.get(r.category, 0), rel=1e-9, abs=1e-6), (name, r.category)
    # Both runs' processes: the split is in process-seconds, over 2 processes.
    assert category_rows(traces["ddp"]).attrs["processes"] == 2
    assert category_rows(traces["compiled"]).set_index("category").loc["compile", "wall_us"] > 0


def window_args(w):
    return [a for opt, v in zip(("--from", "--to"), w) if v is not None for a in (opt, str(v))]


def test_by_category_and_by_step_show_every_row(traces):
    paths = traces["compiled"]
    for args in (("--top", "3"), ("--sort", "total")):
        p = run_cli("summary", *paths, "--by", "category", *args, check=False)
        assert p.returncode == 2 and "--by category shows every category: no --top or --sort" in p.stderr, args
    for by in ("step", "rank"):  # views of their own, not groups with FLOPs
        p = run_cli("summary", *paths, "--efficiency", "--by", by, check=False)
        assert p.returncode == 2 and "--efficiency works only with summary" in p.stderr, (by, p.stderr)
        with pytest.raises(ValueError, match=f"not by='{by}'"):
            da.efficiency(paths, by=by)
    for kw in (dict(top=3), dict(sort="total")):
        for by in ("category", "step"):
            with pytest.raises(ValueError, match=f"shows every {by}: no top or sort"):
                da.summary(paths, by=by, **kw)


def test_summary_by_category_on_dask_is_the_local_one(traces):
    pytest.importorskip("dask.distributed")
    client = da.local_cluster(n_workers=2)
    try:
        for name in ("compiled", "ddp", "eager"):
            for w in ((None, None), windows(traces[name])[0]):
                local = da.summary(traces[name], by="category", from_ts=w[0], to_ts=w[1])
                remote = da.summary(traces[name], by="category", from_ts=w[0], to_ts=w[1], client=client)
                pd.testing.assert_frame_equal(remote, local, check_exact=False, rtol=1e-12)
                for k in ("span_us", "processes", "traced_us"):
                    assert remote.attrs[k] == pytest.approx(local.attrs[k], rel=1e-12), (name, k)
                assert remote.attrs["rule"] == local.attrs["rule"]
        # The command's --dask form is the same view (it once printed self time per category).
        paths = traces["ddp"]
        want = cli_json("summary", *paths, "--by", "category")
        got = cli_json("summary", *paths, "--by", "category", "--dask", client.scheduler.address)
        assert [r["category"] for r in got["rows"]] == [r["category"] for r in want["rows"]]
        for a, b in zip(got["rows"], want["rows"]):
            assert a == {k: v if k == "category" else pytest.approx(v, rel=1e-12) for k, v in b.items()}
        table = run_cli("summary", *paths, "--by", "category", "--dask", client.scheduler.address).stdout
        assert table.splitlines()[0].split() == ["category", "wall_ms", "wall%", "thread_ms", "count"]
        for by in ("step", "rank"):
            p = run_cli("summary", *paths, "--by", by, "--dask", client.scheduler.address, check=False)
            assert p.returncode == 2 and f"--by {by}" in p.stderr and "without --dask" in p.stderr, p.stderr
        # The tree's and diff's order and cut, on the cluster as here.
        paths = traces["compiled"]
        for sort in ("self", "count"):
            local = da.module_tree(paths, sort=sort, top=2)
            pd.testing.assert_frame_equal(da.module_tree(paths, sort=sort, top=2, client=client), local)
        a, b = traces["compiled"][0], traces["eager"][0]
        pd.testing.assert_frame_equal(da.diff(a, b, sort="total", top=5, client=client),
                                      da.diff(a, b, sort="total", top=5), check_exact=False, rtol=1e-12)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


def test_steps_efficiency_module_tree_and_memory_are_the_clis(traces):
    for name, paths in traces.items():
        want = cli_json("summary", *paths, "--by", "step")
        got = da.steps(paths)
        assert records(got) == [{c: r[c] for c in got.columns} for r in want["steps"]], name
        assert records(da.summary(paths, by="step")) == records(got), name  # `summary --by step`, as the command
        for k in ("processes", "runs", "outside", "first_step_compile_share", "nesting", "capped_regions"):
            assert got.attrs[k] == want[k], (name, k)

        for by in ("name", "module", "category"):
            want = cli_json("summary", *paths, "--efficiency", "--by", by)
            assert records(da.efficiency(paths, by=by)) == want["rows"], (name, by)
        want = cli_json("summary", *paths, "--efficiency", "--top", "2")
        assert records(da.efficiency(paths, top=2)) == want["rows"], name

        want = cli_json("summary", *paths, "--by", "module", "--tree")
        got = da.module_tree(paths)
        assert records(got) == tree_rows(want), name
        assert got.attrs["totals"]["unattributed_events"] == want["unattributed_events"], name

        want = cli_json("memory", *paths)
        got = da.memory(paths)
        assert records(got) == [{c: s[c] for c in got.columns} for s in want["series"]], name
        peaks = got.attrs["peaks"]
        assert records(peaks) == [{c: p[c] for c in peaks.columns} for p in want["peaks"]], name
        holders = [{"pid": p["pid"], "device": p["device"], "by": by, "key": r["key"], "blocks": r["blocks"],
                    "bytes": r["bytes"], "rest": r.get("rest", False)}
                   for p in want["peaks"] for by in ("op", "module", "phase", "step") for r in p["by_" + by]]
        assert records(got.attrs["holders"]) == holders, name
        assert got.attrs["block_events"] == want["block_events"], name
        for k in ("planned", "peaks_without_composition"):
            table = got.attrs[k]
            assert records(table) == [{c: r[c] for c in table.columns} for r in want.get(k, [])], (name, k)
        for k in ("out_of_order", "bad_samples"):
            assert got.attrs[k] == want[k], (name, k)
    assert len(da.memory(traces["eager"])), "the eager loop's memory capture has a counter track"


def test_diff_is_the_clis(runs, traces):  # noqa: F811
    pairs = [(runs[0], runs[1], "module"), (runs[0], runs[1], "category"), (runs[1], runs[0], "name")]
    us, ns = (traces.get(f"dftracer-2.2-pydftracer{s}.pfw.gz") for s in ("", "-ns"))
    if us and ns:  # one program traced in microseconds and in nanoseconds
        pairs.append((us[0], ns[0], "name"))
    for a, b, by, *top in pairs + [(runs[0], runs[1], "name", 4)]:
        want = cli_json("diff", a, b, "--by", by, *(["--top", str(top[0])] if top else []))
        got = da.diff(a, b, by=by, top=top[0] if top else None)
        assert records(got) == [{c: r[c] for c in [by, *da.DIFF_COLUMNS, "within_noise"]} for r in want["rows"]], by
        for side in "ab":
            assert got.attrs["totals"][f"traced_{side}_us"] == want[side]["traced_us"], by
        assert plain(got.attrs["totals"]["noise_pct"]) == want["noise_pct"], by


def test_ranks_and_summary_by_rank_are_the_clis(traces):
    for name, paths in traces.items():
        want = cli_json("summary", *paths, "--by", "rank")
        got = da.summary(paths, by="rank")
        assert [[plain(v) for v in r] for r in got.itertuples(index=False, name=None)] == want["ranks"]["rows"], name
        want = cli_json("ranks", *paths)
        got = da.ranks(paths)
        if want["ranks"] == 0:  # no rank metadata: the command's JSON is a note, not tables
            assert got.info["note"] == want["note"] and got.info["note"].startswith("no ranks: "), name
            assert got.info["world_size"] is None and len(got.ranks) == want["processes"], name
            continue
        assert "note" not in got.info, name
        for t in da.RankAnalysis.TABLES:
            table = getattr(got, t)
            assert list(table.columns) == want[t]["columns"], (name, t)
            assert [[plain(v) for v in r] for r in table.itertuples(index=False, name=None)] == want[t]["rows"], \
                (name, t)
    assert cli_json("ranks", *traces["ddp"])["ranks"]["rows"], "the DDP job's ranks are compared"


def test_windows_are_the_clis(traces):
    for name in ("compiled", "eager", "ddp"):
        paths = traces[name]
        whole = category_rows(paths).attrs["span_us"]
        for w in windows(paths)[:3]:  # cut at the steps' starts: relative, absolute, one-sided
            args = window_args(w)
            for by in ("name", "module,phase"):
                check_summary(paths, by, *args, from_ts=w[0], to_ts=w[1])
            want = cli_json("memory", *paths, *args)
            got = da.memory(paths, from_ts=w[0], to_ts=w[1])
            assert records(got) == [{c: s[c] for c in got.columns} for s in want["series"]], (name, w)
            want = cli_json("summary", *paths, "--by", "step", *args)["steps"]
            got = da.steps(paths, from_ts=w[0], to_ts=w[1])
            assert records(got) == [{c: r[c] for c in got.columns} for r in want], (name, w)
            assert category_rows(paths, *args, from_ts=w[0], to_ts=w[1]).attrs["span_us"] < whole, (name, w)


def _nan_last_desc(values):
    """True when `values` (None for a missing figure) descend, the missing ones last."""
    have = [v for v in values if v is not None]
    return values[:len(have)] == have and have == sorted(have, reverse=True)


def test_sort_and_top_of_every_view_are_the_clis(runs, traces):  # noqa: F811
    """--sort and --top where a view has an order of its own (diff, --efficiency, --tree,
    --by rank): the command orders and cuts its rows by the option, and the function's
    sort=/top= gives the same rows."""
    a, b = runs
    for sort, col in (("total", "total_delta_us"), ("count", "count_delta")):
        want = cli_json("diff", a, b, "--by", "name", "--sort", sort)["rows"]
        assert _nan_last_desc([abs(r[col]) for r in want]), sort
        got = da.diff(a, b, by="name", sort=sort)
        assert records(got) == [{c: r[c] for c in ["name", *da.DIFF_COLUMNS, "within_noise"]} for r in want], sort
        cut = cli_json("diff", a, b, "--by", "name", "--sort", sort, "--top", "3")["rows"]
        assert cut == want[:3], sort
        assert records(da.diff(a, b, by="name", sort=sort, top=3)) == records(got)[:3], sort

    for name, paths in traces.items():
        for sort in ("gflops", "flops", "count"):
            want = cli_json("summary", *paths, "--efficiency", "--sort", sort)["rows"]
            assert _nan_last_desc([r[sort] for r in want]), (name, sort)
            assert records(da.efficiency(paths, sort=sort)) == want, (name, sort)
            cut = cli_json("summary", *paths, "--efficiency", "--sort", sort, "--top", "2")["rows"]
            assert cut == want[:2] and records(da.efficiency(paths, sort=sort, top=2)) == cut, (name, sort)

        whole = cli_json("summary", *paths, "--by", "module", "--tree")
        for sort in ("self", "count", "total"):
            doc = cli_json("summary", *paths, "--by", "module", "--tree", "--sort", sort)
            key = {"self": "self_us", "count": "count", "total": "total_us"}[sort]
            for siblings in [doc["roots"]] + [n["children"] for n in _nodes(doc["roots"])]:
                assert _nan_last_desc([n[key] for n in siblings]), (name, sort)
            assert sorted(r["path"] for r in tree_rows(doc)) == sorted(r["path"] for r in tree_rows(whole))
            assert records(da.module_tree(paths, sort=sort)) == tree_rows(doc), (name, sort)
            doc = cli_json("summary", *paths, "--by", "module", "--tree", "--sort", sort, "--top", "1")
            assert len(doc["roots"]) <= 1 and all(len(n["children"]) <= 1 for n in _nodes(doc["roots"])), name
            got = da.module_tree(paths, sort=sort, top=1)
            assert records(got) == tree_rows(doc), (name, sort)
            assert got.attrs["totals"]["left_out"] == doc["left_out"], (name, sort)
            assert doc["left_out"] == 0 or len(tree_rows(doc)) < len(tree_rows(whole)), name

        rows = cli_json("summary", *paths, "--by", "rank")["ranks"]
        col = {c: i for i, c in enumerate(rows["columns"])}
        for args, kw, key in (((), {}, None), (("--top", "1"), dict(top=1), "self_us"),
                              (("--sort", "total"), dict(sort="total"), "total_us"),
                              (("--sort", "self", "--top", "2"), dict(sort="self", top=2), "self_us")):
            want = cli_json("summary", *paths, "--by", "rank", *args)["ranks"]["rows"]
            got = da.summary(paths, by="rank", **kw)
            assert [[plain(v) for v in r] for r in got.itertuples(index=False, name=None)] == want, (name, args)
            if key is None:
                assert want == rows["rows"], name  # no --top/--sort: the order read
                continue
            order = sorted(rows["rows"], key=lambda r: -r[col[key]])  # stable: ties in the order read
            assert want == order[:kw.get("top", len(order))], (name, args)
    cut = cli_json("summary", *traces["compiled"], "--by", "module", "--tree", "--top", "1")
    assert cut["left_out"] > 0, "the compiled encoder's modules have siblings to cut"
    two = cli_json("summary", *traces["ddp"], "--by", "rank", "--top", "1")["ranks"]["rows"]
    assert len(two) == 1, "the DDP job's two ranks, cut to the one with the most self time"


def _nodes(roots):
    for n in roots:
        yield n
        yield from _nodes(n["children"])
