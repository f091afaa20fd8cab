"""Every dftracer.analyze function the CLI's `--steps RANGE` applies to takes
the same range (steps=: a str as --steps takes it, an int, or a slice) and
gives the CLI's answer for it, on traces the real tracer wrote: a compiled
2-layer transformer encoder trained 4 steps at two widths (test_analyze_diff_tree's
runs). summary (name, module, category, step), efficiency, module_tree, diff,
memory, io, merge and report are compared with the command's JSON (or its
page and its merged file) for `--steps 1:` and one other range. A bad range,
a range that picks no step and by="rank" are one-line ValueErrors (on a
Dask client too: test_analyze_dask.py).
"""
import json

import pytest

from test_analyze_api_cli_windows import cli_json, plain, records, run_cli, tree_rows
from test_analyze_diff_tree import runs  # noqa: F401  (the fixture: two real training runs)

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

pd = pytest.importorskip("pandas")

RANGES = [("1:", "1:"), (slice(1, 3), "1:3"), (-1, "-1")]  # (steps=, the --steps text)


def summary_rows(doc, by):
    cols = [by, "count", "self_us", "total_us"]
    return [{c: r[c] for c in cols} for r in doc["rows"]]


def test_summary_efficiency_and_tree_of_a_range_are_the_clis(runs):  # noqa: F811
    trace = runs[0]
    whole = da.summary(trace)
    answers = set()
    for arg, text in RANGES:
        for by in ("name", "module"):
            want = cli_json("summary", trace, "--by", by, "--steps", text)
            got = da.summary(trace, by=by, steps=arg)
            assert records(got[[by, "count", "self_us", "total_us"]]) == summary_rows(want, by), (arg, by)
            assert got.attrs["totals"]["traced_us"] == want["traced_us"], (arg, by)
            answers.add(json.dumps(want["rows"]))
        assert da.summary(trace, steps=arg).attrs["totals"]["traced_us"] < whole.attrs["totals"]["traced_us"], arg

        want = cli_json("summary", trace, "--by", "category", "--steps", text)
        got = da.summary(trace, by="category", steps=arg)
        assert records(got) == want["rows"], arg

        want = cli_json("summary", trace, "--by", "step", "--steps", text)
        got = da.steps(trace, steps=arg)
        assert records(got) == [{c: r[c] for c in got.columns} for r in want["steps"]], arg
        assert records(da.summary(trace, by="step", steps=arg)) == records(got), arg

        want = cli_json("summary", trace, "--efficiency", "--by", "module", "--steps", text)
        assert records(da.efficiency(trace, by="module", steps=arg)) == want["rows"], arg

        want = cli_json("summary", trace, "--by", "module", "--tree", "--steps", text)
        assert records(da.module_tree(trace, steps=arg)) == tree_rows(want), arg
    assert len(answers) >= 4  # the ranges cut the trace differently
    # The steady state is the first step left out: no compile in it.
    cats = da.summary(trace, by="category", steps="1:").set_index("category")
    assert cats.loc["compile", "wall_us"] == 0
    assert da.summary(trace, by="category").set_index("category").loc["compile", "wall_us"] > 0


def test_diff_memory_io_merge_and_report_of_a_range_are_the_clis(runs, tmp_path):  # noqa: F811
    narrow, wide = runs
    want = cli_json("diff", narrow, wide, "--by", "module", "--steps", "1:")
    got = da.diff(narrow, wide, by="module", steps="1:")
    assert records(got[["module", *da.DIFF_COLUMNS]]) == [{c: r[c] for c in ["module", *da.DIFF_COLUMNS]}
                                                         for r in want["rows"]]
    assert got.attrs["totals"]["traced_a_us"] == want["a"]["traced_us"]
    assert plain(got.attrs["totals"]["noise_pct"]) == want["noise_pct"]

    want = cli_json("memory", narrow, "--steps", "1:")
    got = da.memory(narrow, steps="1:")
    assert records(got) == [{c: r[c] for c in got.columns} for r in want["series"]]
    assert got.attrs["stats"]["events"] < da.memory(narrow).attrs["stats"]["events"]

    want = cli_json("io", narrow, "--steps", "1:")
    assert da.io(narrow, steps="1:")["total"] == want["total"]

    cli_out, api_out = str(tmp_path / "cli.json"), str(tmp_path / "api.json")
    run_cli("merge", narrow, "-o", cli_out, "--steps", "1:")
    r = da.merge(narrow, api_out, steps="1:")
    with open(cli_out, "rb") as a, open(api_out, "rb") as b:
        assert a.read() == b.read()
    assert 0 < r["events_written"] < da.merge(narrow, str(tmp_path / "all.json"))["events_written"]

    cli_out, api_out = str(tmp_path / "cli.html"), str(tmp_path / "api.html")
    answer = run_cli("report", narrow, "-o", cli_out, "--steps", "1:").stdout
    assert da.report(narrow, api_out, steps="1:")["answer"] == answer
    with open(cli_out, "rb") as a, open(api_out, "rb") as b:
        assert a.read() == b.read()


def test_a_range_that_cannot_apply_is_the_clis_one_line_error(runs):  # noqa: F811
    trace = runs[0]
    for arg, text in (("x", "x"), ("1:2:3", "1:2:3"), ("99", "99")):
        p = run_cli("summary", trace, "--steps", text, check=False)
        assert p.returncode == 2, p.stderr
        line = p.stderr.splitlines()[0].removeprefix("dftracer-analyze: ")
        with pytest.raises(ValueError) as e:
            da.summary(trace, steps=arg)
        assert str(e.value) == line, (str(e.value), p.stderr)
    with pytest.raises(ValueError, match="by='rank' does not take a step range"):
        da.summary(trace, by="rank", steps="1:")
    with pytest.raises(TypeError, match="steps must be a range of steps"):
        da.summary(trace, steps=slice(0, 4, 2))
