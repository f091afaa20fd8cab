"""Cross-rank analysis end to end on generated rank files (rank_traces.py, the #16
contract): `dftracer-analyze ranks` JSON and CSV and `dftracer.analyze.ranks()` give
the same numbers, which are the generator's own (waits, last arrivals, stragglers);
`summary --by rank`; `merge` of 4 ranks with a missing and a cut-short rank; the
report's rank x step heat map renders in headless Chromium."""
import csv
import io
import json
import math
import os
import shutil
import subprocess

import pytest

import dftracer.analyze as da
from rank_traces import STEP_NS, write_job
from test_analyze_report import _analyzer, _rendered_dom

STRAGGLE_NS = 200_000_000  # rank 1 arrives 200 ms late at step 2's collectives


def _run(*args):
    p = subprocess.run([_analyzer(), *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p


def _same(a, b):
    """One cell from two outputs: numbers equal to the last digit, else equal text."""
    if isinstance(a, float) and math.isnan(a):
        a = None
    if isinstance(b, float) and math.isnan(b):
        b = None
    if a in (None, "") or b in (None, ""):
        return a in (None, "") and b in (None, "")
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).lower() == str(b).lower()


@pytest.fixture
def job(tmp_path):
    return write_job(tmp_path, world=4, steps=3, delays_ns={(2, 1): STRAGGLE_NS}, gz=True)


def test_json_csv_and_python_agree_and_match_the_generated_job(job):
    paths = list(job.paths.values())
    doc = json.loads(_run("ranks", "--format", "json", *paths).stdout)
    api = da.ranks(paths, threads=2)
    for table in ("ranks", "steps", "stragglers", "collectives", "waits"):
        rows = list(csv.reader(io.StringIO(_run("ranks", "--format", "csv", "--table", table, *paths).stdout)))
        j = doc[table]
        df = getattr(api, table)
        assert rows[0] == j["columns"] == list(df.columns), table
        assert len(rows) - 1 == len(j["rows"]) == len(df), table
        for c_row, j_row, d_row in zip(rows[1:], j["rows"], df.itertuples(index=False)):
            for c, jv, dv in zip(c_row, j_row, d_row):
                assert _same(c, jv) and _same(jv, dv), (table, c_row, j_row, tuple(d_row))

    # The numbers are the generator's: every collective's last rank and waits.
    coll = api.collectives
    waits = api.waits
    for key, arrivals in job.arrivals.items():
        if key[0] == "p2p":
            sel = coll[(coll["name"] == "send/recv") & (coll["seq"] == key[3])]
        else:
            sel = coll[(coll["name"] == key[1]) & (coll["seq"] == key[2])]
        assert len(sel) == 1, key
        row = sel.iloc[0]
        assert row["last_rank"] == job.expected_last(key), key
        assert row["step"] == job.steps_of[key]
        assert row["complete"]
        for rank, wait_ns in job.expected_waits(key).items():
            w = waits[(waits["id"] == row["id"]) & (waits["rank"] == rank)]
            assert w["wait_us"].iloc[0] == pytest.approx(wait_ns / 1e3, abs=1e-6), (key, rank)
            dur_ns = arrivals[rank][1]
            assert w["transfer_us"].iloc[0] == pytest.approx((dur_ns - wait_ns) / 1e3, abs=1e-6)

    # Step 2's straggler is rank 1; rank 0 waited 200 ms at each of its two collectives.
    st = api.stragglers.set_index("step")
    assert st.loc[2, "straggler"] == 1
    steps = api.steps
    r0 = steps[(steps["step"] == 2) & (steps["rank"] == 0)].iloc[0]
    assert r0["wait_us"] == pytest.approx(2 * STRAGGLE_NS / 1e3, rel=0.2)
    assert r0["comm_us"] == pytest.approx(r0["wait_us"] + r0["transfer_us"])
    assert bool(steps[(steps["step"] == 2) & (steps["rank"] == 1)].iloc[0]["straggler"])
    assert api.info["alignment"]["max_uncertainty_us"] == pytest.approx(2.503)
    assert api.info["missing_ranks"] == [] and api.info["incomplete_ranks"] == []


def test_summary_by_rank_cli_and_python(job):
    paths = list(job.paths.values())
    doc = json.loads(_run("summary", "--by", "rank", "--format", "json", *paths).stdout)
    df = da.summary(paths, by="rank")
    assert list(df["rank"]) == [0, 1, 2, 3]
    assert [r[0] for r in doc["ranks"]["rows"]] == [0, 1, 2, 3]
    assert df["share"].sum() == pytest.approx(1.0)
    # Self time of each rank: its three train_step regions (the collectives nest inside).
    assert list(df["self_us"]) == pytest.approx([3 * 900_000.0] * 4)
    assert list(df["complete"]) == [True] * 4
    text = _run("summary", "--by", "rank", *paths).stdout
    assert "4 ranks of world size 4" in text


def test_merge_of_four_ranks_with_a_missing_and_a_killed_rank(tmp_path):
    job = write_job(tmp_path, world=4, steps=3, missing=(3,), cut_after_step={2: 0}, same_pid=True)
    out = tmp_path / "merged.json"
    p = _run("merge", "-o", out, *job.paths.values())
    assert "missing rank(s) 3 of world size 4" in p.stderr
    assert "incomplete rank(s) 2" in p.stderr
    doc = json.loads(out.read_text())
    ranks = doc["otherData"]["ranks"]
    assert ranks["missing_ranks"] == [3] and ranks["incomplete_ranks"] == [2]
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e["name"] == "process_sort_index"}
    # Every rank had pid 4242 on its own host: three processes, named by rank.
    assert sorted(names.values()) == ["rank 0 (pid 4242)", "rank 1 (pid 4242)", "rank 2 (pid 4242)"]
    assert sorted(order.values()) == [0, 1, 2]
    by_rank = {order[pid]: pid for pid in order}
    # Clock offsets applied: all_reduce 0 arrivals 7 us apart per rank on rank 0's clock.
    ts = {e["pid"]: e["ts"] for e in doc["traceEvents"] if e.get("cat") == "comm" and e["name"] == "all_reduce"
          and e["args"]["seq"] == 0}
    assert ts[by_rank[1]] - ts[by_rank[0]] == pytest.approx(7.0, abs=1e-3)
    assert ts[by_rank[2]] - ts[by_rank[0]] == pytest.approx(14.0, abs=1e-3)
    # The Python API's merge gives the same file.
    out2 = tmp_path / "merged2.json"
    r = da.merge(list(job.paths.values()), str(out2))
    assert "missing rank(s) 3" in r["rank_note"] and "incomplete rank(s) 2" in r["rank_note"]
    assert json.loads(out2.read_text())["otherData"]["ranks"] == ranks
    # And the analysis reports the partial collectives instead of failing.
    api = da.ranks(list(job.paths.values()))
    assert api.info["missing_ranks"] == [3]
    coll = api.collectives
    assert not coll[coll["name"] != "send/recv"]["complete"].any()  # group_size 4, seen on 3
    assert coll[coll["name"] == "send/recv"]["complete"].all()       # ranks 0 and 1 are both there
    assert STEP_NS  # the generator's step length is what the steps are cut at


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_draws_the_rank_step_heat_map_and_straggler_table(job, tmp_path):
    html = tmp_path / "report.html"
    _run("report", "-o", html, *job.paths.values())
    dom = _rendered_dom(html, tmp_path)
    assert 'id="ranks-section"' in dom
    assert dom.count('class="heat-cell"') == 4 * 3  # 4 ranks x 3 steps
    assert 'data-ranks-rendered="yes"' in dom
    assert "<td>2</td><td>1</td>" in dom  # step 2: straggler rank 1
