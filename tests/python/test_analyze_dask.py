"""dftracer.analyze on Dask and Parquet export: a LocalCluster of 2
worker processes reads 1,000 small trace files plus one large multi-member
.pfw.gz (split into gzip member ranges, threads nesting across them) and must
give exactly the single-machine reader's numbers for every grouping; the
dask.dataframe of events equals the batches; a Parquet export read back with
pyarrow and DuckDB holds the same events."""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")
da = pytest.importorskip("dftracer.analyze")
if da._ext is None:
    pytest.skip("dftracer was built without the analyzer", allow_module_level=True)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import synthetic_traces  # noqa: E402
from dftracer.analyze import distributed  # noqa: E402

GROUPINGS = ["name", "cat", "ph", "pid", "tid", "module", "phase", "graph", "epoch", "source", "shapes",
             "dtype", "category", "args.rank", "args.step", "module,phase", "args.step,name", "args.fhash",
             "name,category"]
# Small enough that the large file is read as several member ranges.
PIECE_BYTES = 256 << 10


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask_traces")
    small = synthetic_traces.write_small_files(str(d / "small"), 1000, 40)
    big = synthetic_traces.write_multi_member_gz(str(d / "big-app-4242.pfw.gz"), 40000, threads=4,
                                                 member_lines=1500)
    yield str(d), small, big
    shutil.rmtree(str(d), ignore_errors=True)


@pytest.fixture(scope="module")
def client():
    c = da.local_cluster(n_workers=2, threads_per_worker=1)
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(distributed, "DEFAULT_PIECE_BYTES", PIECE_BYTES)


def test_the_large_file_is_read_as_member_ranges_with_threads_across_them(traces):
    _, _, big = traces
    pieces = distributed.plan_pieces(da._ext, [big], 2)
    assert len(pieces) >= 4 and all(p[0] == "range" for p in pieces), pieces
    assert pieces[0][3] == 0 and pieces[-1][4] == os.path.getsize(big)
    # The epoch region of every thread encloses events of every range: self time needs
    # the runs carried across pieces, not a per-piece answer.
    per_piece = [da._ext.combine_partials([da._ext.partial_summary_range(big, 0, p[3], p[4], "name")], "name")
                 for p in pieces]
    assert sum(r["totals"]["traced_us"] for r in per_piece) > da.summary(big).attrs["totals"]["traced_us"]


def _check_same(local, dist, by):
    if by == "category":  # the wall-time split: the processes' runs are added in another order
        pd.testing.assert_frame_equal(local, dist, check_exact=False, rtol=1e-12, obj="summary by category")
        assert local.attrs["rule"] == dist.attrs["rule"]
        for k in ("span_us", "processes", "traced_us"):
            assert local.attrs[k] == pytest.approx(dist.attrs[k], rel=1e-12), k
    else:
        keys = by.split(",")
        local = local.sort_values(keys, ignore_index=True)
        dist = dist.sort_values(keys, ignore_index=True)
        exact = [c for c in local.columns if c not in ("gflops", "gbps")]
        pd.testing.assert_frame_equal(local[exact], dist[exact], check_exact=True, obj=f"summary by {by}")
        for c in ("gflops", "gbps"):  # float sums in another order
            np.testing.assert_allclose(local[c], dist[c], rtol=1e-12, equal_nan=True, err_msg=f"{c} by {by}")
        assert local.attrs["totals"] == dist.attrs["totals"], by
    for k in ("files", "events", "input_bytes", "json_bytes", "malformed", "bad_fields", "skipped_lines"):
        assert local.attrs["stats"][k] == dist.attrs["stats"][k], (by, k)


def test_summary_on_dask_equals_the_local_reader_for_every_grouping(traces, client):
    d, small, big = traces
    paths = small + [big]
    parts = client.gather(client.map(distributed._partial, distributed.plan_pieces(da._ext, da.files(paths), 2),
                                     by="name", limits={}, pure=False))
    # Only aggregates travel: the parts are a small fraction of the input.
    assert all(isinstance(p, bytes) for p in parts)
    assert sum(map(len, parts)) < sum(os.path.getsize(p) for p in paths) / 4
    for by in GROUPINGS:
        local = da.summary(paths, by=by, threads=2)
        dist = da.summary(paths, by=by, client=client)
        assert len(local) > 0
        _check_same(local, dist, by)
        if by == "name,category":  # the module file's reads are the runtime's: named in another member range
            reads = local[local["name"] == "read"].set_index("category")["count"]
            assert reads["other"] > 0 and reads["data"] > 3 * reads["other"] * 0.9, reads
    # top and sort are applied after combining, as locally.
    a, b = da.summary(paths, top=3, sort="total"), da.summary(paths, top=3, sort="total", client=client)
    assert list(a["name"]) == list(b["name"]) and list(a["total_us"]) == list(b["total_us"])


def test_big_file_alone_and_bad_keys(traces, client):
    _, _, big = traces
    for by in ("name", "tid", "args.step,name", "name,category"):
        _check_same(da.summary(big, by=by), da.summary(big, by=by, client=client), by)
    with pytest.raises(ValueError, match="nosuchkey"):
        da.summary(big, by="nosuchkey", client=client)


def _windows(paths):
    """Windows that cut the input: relative to its start and end, mixed, and absolute."""
    span = da.summary(paths, by="cat").attrs["totals"]["span_us"]
    third = f"{int(span / 3)}us"
    first_ns = da._ext.time_range(da.files(paths))[1]
    absolute = str((first_ns + int(span * 250)) // 1000)  # a quarter in, in microseconds
    return [(f"+{third}", f"-{third}"), (f"-{third}", None), (None, f"+{int(span / 3000)}ms"), (absolute, None)]


def test_windowed_summary_on_dask_equals_the_local_reader(traces, client):
    d, small, big = traces
    paths = small[:300] + [big]  # whole files and the big one's member ranges
    everything = da.summary(paths).attrs["totals"]["complete_events"]
    for lo, hi in _windows(paths):
        for by in ("name", "tid", "args.step,name"):
            local = da.summary(paths, by=by, from_ts=lo, to_ts=hi, threads=2)
            dist = da.summary(paths, by=by, from_ts=lo, to_ts=hi, client=client)
            assert 0 < local.attrs["totals"]["complete_events"] < everything, (lo, hi)
            _check_same(local, dist, by)
    with pytest.raises(ValueError, match="parsecs"):
        da.summary(paths, from_ts="+2parsecs", client=client)
    with pytest.raises(ValueError, match="--from must be before --to"):
        da.summary(paths, from_ts="-1ms", to_ts="+1ms", client=client)


def test_diff_and_module_tree_on_dask_equal_the_local_ones(traces, client):
    d, small, big = traces
    a, b = small[:150], small[150:300] + [big]  # B has the member ranges
    for by in ("name", "module,phase", "args.step"):
        local = da.diff(a, b, by=by, threads=2)
        dist = da.diff(a, b, by=by, client=client)
        assert len(local) > 0
        pd.testing.assert_frame_equal(local, dist, check_exact=True, obj=f"diff by {by}")
        assert local.attrs["totals"] == dist.attrs["totals"]
        for side in ("stats_a", "stats_b"):
            for k in ("files", "events", "json_bytes", "skipped_lines"):
                assert local.attrs[side][k] == dist.attrs[side][k], (by, side, k)
    top = da.diff(a, b, top=2, client=client)
    assert list(top["name"]) == list(da.diff(a, b, top=2)["name"])
    with pytest.raises(ValueError, match="nosuchkey"):
        da.diff(a, b, by="nosuchkey", client=client)
    local, dist = da.module_tree(a + b), da.module_tree(a + b, client=client)
    assert len(local) > 3
    pd.testing.assert_frame_equal(local, dist, check_exact=True)
    assert local.attrs["totals"] == dist.attrs["totals"]


def test_ranks_with_a_client_reads_here_and_says_why(traces, client, capfd):
    d, small, big = traces
    local = da.ranks(small[:8])
    capfd.readouterr()
    dist = da.ranks(small[:8], client=client)
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "not on the Dask cluster" in err and "arrival times" in err, err
    pd.testing.assert_frame_equal(local.ranks, dist.ranks, check_exact=True)


def test_steps_on_dask_equal_the_local_steps(traces, client):
    d, small, big = traces
    paths = small[:200] + [big]
    local = da.steps(paths)
    dist = da.steps(paths, client=client)
    assert len(local) > 1000
    pd.testing.assert_frame_equal(local, dist, check_exact=True)
    assert local.attrs["processes"] == dist.attrs["processes"]
    assert local.attrs["first_step_compile_share"] == dist.attrs["first_step_compile_share"]
    for k, v in local.attrs["outside"].items():
        assert dist.attrs["outside"][k] == pytest.approx(v, rel=1e-12, abs=1e-9)


def _sorted_events(df):
    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object or str(df[c].dtype).startswith(("string", "category")):
            df[c] = df[c].astype(object).where(df[c].notna(), None).astype(str)
    order = ["pid", "tid", "ts_ns", "dur_ns", "name", "args"]
    return df.sort_values([c for c in order if c in df.columns], ignore_index=True, kind="stable")


def _events_frame(paths):
    frames = [da._frame_of_arrays(b) for b in da.events(paths, format="numpy", batch_size=1 << 20)]
    return pd.concat(frames, ignore_index=True)


def test_dask_dataframe_of_events_equals_the_batches(traces, client):
    d, small, big = traces
    paths = small[:100] + [big]
    ddf = da.events(paths, format="dask", client=client)
    assert ddf.npartitions > 4
    assert list(ddf.columns) == list(da.EVENT_COLUMNS)
    got = ddf.compute()
    want = _events_frame(paths)
    assert len(got) == len(want) > 40000
    g, w = _sorted_events(got), _sorted_events(want)
    for c in w.columns:
        if c in ("ts", "dur", "flops", "bytes", "alloc_bytes", "free_bytes"):
            np.testing.assert_array_equal(g[c].to_numpy(float), w[c].to_numpy(float), err_msg=c)
        elif c in ("ts_ns", "dur_ns"):
            assert g[c].astype("Int64").equals(w[c].astype("Int64")), c
        else:
            assert list(g[c]) == list(w[c]), c


def test_parquet_export_read_back_with_pyarrow_and_duckdb(traces, client, tmp_path):
    import pyarrow.dataset as pads

    d, small, big = traces
    paths = small[:100] + [big]
    out = tmp_path / "pq"
    r = da.to_parquet(paths, str(out), client=client)
    want = _events_frame(paths)
    assert r["rows"] == len(want) and r["files"] == len(paths)
    # Hive partitioned by process.
    assert sorted(os.listdir(out))[:2] == ["pid=10000", "pid=10001"]
    table = pads.dataset(str(out), format="parquet", partitioning="hive").to_table()
    got = table.to_pandas()
    assert len(got) == len(want)
    assert str(table.schema.field("ts_ns").type) == "int64" and str(table.schema.field("flops").type) == "double"
    g = got.sort_values(["pid", "tid", "ts_ns", "dur_ns", "name"], ignore_index=True, kind="stable")
    w = want.sort_values(["pid", "tid", "ts_ns", "dur_ns", "name"], ignore_index=True, kind="stable")
    for c in ("name", "cat", "ph", "module", "phase", "step", "shapes"):
        assert list(g[c].astype(object).where(g[c].notna(), None)) == \
            list(w[c].astype(object).where(w[c].notna(), None)), c
    assert list(g["pid"].astype(int)) == list(w["pid"])
    assert g["dur_ns"].astype("Int64").equals(w["dur_ns"].astype("Int64"))
    np.testing.assert_array_equal(g["flops"].to_numpy(float), w["flops"].to_numpy(float))
    # The other args as JSON: what the typed columns hold is not repeated there.
    rest = [json.loads(a) for a in g["args"].dropna().head(200)]
    assert rest and all("phase" not in a and "module" not in a for a in rest)
    assert any("rank" in a for a in rest) and any("fhash" in a for a in rest)

    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    q = con.execute(f"SELECT name, count(*), sum(dur_ns) FROM read_parquet('{out}/**/*.parquet', "
                    f"hive_partitioning=true) WHERE ph = 'X' GROUP BY name ORDER BY name").fetchall()
    w_by = w[w["ph"] == "X"].groupby("name")["dur_ns"].agg(["count", "sum"]).sort_index()
    assert [(n, c, int(s)) for n, c, s in q] == [(n, int(r["count"]), int(r["sum"])) for n, r in w_by.iterrows()]
    npid = con.execute(f"SELECT count(DISTINCT pid) FROM read_parquet('{out}/**/*.parquet', "
                       f"hive_partitioning=true)").fetchone()[0]
    assert npid == len(paths)
    # Never into a directory that holds something.
    with pytest.raises(FileExistsError, match="not an empty directory"):
        da.to_parquet(paths[:1], str(out))


@pytest.mark.parametrize("on_dask", [False, True])
def test_parquet_export_partitions_by_rank_and_duckdb_counts_each_rank(tmp_path, client, on_dask):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.dataset as pads

    # Ranks in the other order than the pids, written halfway through each file; the
    # big file's rank sits in a middle gzip member, so its other member ranges need it too.
    small = synthetic_traces.write_small_files(str(tmp_path / "job"), 6, 300, rank_of=lambda i: 5 - i)
    big = synthetic_traces.write_multi_member_gz(str(tmp_path / "job" / "big-app-777.pfw.gz"), 20000,
                                                 member_lines=1500, rank=6, pid=777)
    paths = small + [big]
    assert len(distributed.plan_pieces(da._ext, [big], 2)) >= 3
    out = tmp_path / "pq"
    r = da.to_parquet(paths, str(out), client=client if on_dask else None)
    assert r["partitioning"] == "rank"
    assert sorted(os.listdir(out)) == [f"rank={k}" for k in range(7)]
    want = {}  # events per rank, from the reader
    for rank, p in [(5 - i, f) for i, f in enumerate(small)] + [(6, big)]:
        want[rank] = len(_events_frame([p]))
    assert r["rows"] == sum(want.values())
    con = duckdb.connect()
    got = dict(con.execute(f"SELECT rank, count(*) FROM read_parquet('{out}/**/*.parquet', hive_partitioning=true) "
                           f"GROUP BY rank").fetchall())
    assert got == want
    # pid stays a column: one process per rank.
    pairs = con.execute(f"SELECT DISTINCT rank, pid FROM read_parquet('{out}/**/*.parquet', "
                        f"hive_partitioning=true) ORDER BY rank").fetchall()
    assert pairs == [(k, 10005 - k) for k in range(6)] + [(6, 777)]
    table = pads.dataset(str(out), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == r["rows"]
    # A job where one file has no rank metadata: by process, as before.
    plain = synthetic_traces.write_small_files(str(tmp_path / "plain"), 1, 50, seed=99)
    r2 = da.to_parquet(small[:2] + plain, str(tmp_path / "pq2"), client=client if on_dask else None)
    assert r2["partitioning"] == "pid"
    assert sorted(os.listdir(tmp_path / "pq2")) == ["pid=10000", "pid=10001"]


def _analyzer_bin():
    for c in (os.environ.get("DFTRACER_ANALYZE_BIN"), os.path.join(os.path.dirname(sys.executable), "dftracer-analyze"),
              shutil.which("dftracer-analyze")):
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("dftracer-analyze not found (set DFTRACER_ANALYZE_BIN)")


def test_cli_summary_dask_and_export_parquet(traces, client, tmp_path):
    d, small, big = traces
    exe = _analyzer_bin()
    env = dict(os.environ, DFTRACER_PYTHON=sys.executable)
    paths = small[:50] + [big]
    local = subprocess.run([exe, "summary", "--by", "name", "--format", "json", *paths], capture_output=True,
                           text=True, env=env)
    dist = subprocess.run([exe, "summary", "--by", "name", "--format", "json", "--dask",
                           client.scheduler.address, *paths], capture_output=True, text=True, env=env)
    assert local.returncode == 0 and dist.returncode == 0, dist.stderr
    dist_all = dist.stdout
    assert json.loads(local.stdout)["rows"] and dist.stdout == local.stdout  # the same writer, the same numbers
    # A relative window, applied by the workers: the same as the C++ command's.
    span = da.summary(paths).attrs["totals"]["span_us"]
    window = ["--from", f"-{int(span / 2)}us", "--to", f"-{int(span / 4)}us"]  # "-..." is a value, not an option
    local = subprocess.run([exe, "summary", "--format", "json", *window, *paths], capture_output=True, text=True,
                           env=env)
    dist = subprocess.run([exe, "summary", "--format", "json", "--dask", client.scheduler.address, *window, *paths],
                          capture_output=True, text=True, env=env)
    assert local.returncode == 0 and dist.returncode == 0, dist.stderr
    n = json.loads(local.stdout)["complete_events"]
    assert 0 < n < json.loads(dist_all)["complete_events"] and dist.stdout == local.stdout
    # A step range: each process's steps found on a worker, the chosen ones read.
    for by in ("tid", "category"):
        args = ["summary", "--by", by, "--format", "json", "--steps", "-2"]
        local = subprocess.run([exe, *args, *paths], capture_output=True, text=True, env=env)
        dist = subprocess.run([exe, *args, "--dask", client.scheduler.address, *paths], capture_output=True,
                              text=True, env=env)
        assert local.returncode == 0 and dist.returncode == 0, dist.stderr
        assert dist.stdout == local.stdout, by
    out = tmp_path / "cli_pq"
    r = subprocess.run([exe, "export", "--format", "parquet", "-o", str(out), *paths[:5]], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == [f"pid={10000 + i}" for i in range(5)]
    bad = subprocess.run([exe, "export", "--format", "csv", "-o", str(tmp_path / "x"), paths[0]],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "parquet" in bad.stderr and bad.stderr.count("\n") <= 2


_WRITE_INDEXED = r"""
import os, sys
import dftracer
from dftracer.python import dft_fn
for i in range(6):
    pid = os.fork()
    if pid == 0:  # each child writes (and at exit finalizes) its own .pfw.gz + .idx
        for k in range(300 + 50 * i):
            with dft_fn("load", cat="data"):
                with dft_fn("decode", cat="cpu"):
                    pass
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_workers_answer_finalized_files_from_their_write_time_indexes(tmp_path, client):
    env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_DISABLE_IO="1", DFTRACER_LOG_FILE=str(tmp_path / "t"))
    subprocess.run([sys.executable, "-c", _WRITE_INDEXED], env=env, check=True, timeout=120)
    files = sorted(str(p) for p in tmp_path.glob("t-*.pfw.gz"))
    assert len(files) == 7 and all(os.path.exists(f + ".idx") for f in files)  # 6 children + the parent
    for by in ("name", "cat", "pid", "tid", "name,cat"):
        local = da.summary(files, by=by, threads=2)
        assert local.attrs["index"], by  # the local reader answers from the indexes...
        dist = da.summary(files, by=by, client=client)
        _check_same(local, dist, by)
        # ...and so do the workers: every file from its index, nothing inflated.
        assert dist.attrs["stats"]["indexed_files"] == len(files), by
        assert dist.attrs["index"], by
        read = da.summary(files, by=by, client=client, use_index=False)
        _check_same(local, read, by)
        assert read.attrs["stats"]["indexed_files"] == 0 and not read.attrs["index"], by
    # A key the index does not hold: the workers read.
    steps = da.summary(files, by="cat,name", client=client)
    assert steps.attrs["stats"]["indexed_files"] == len(files)
    assert da.summary(files, by="args.step", client=client).attrs["stats"]["indexed_files"] == 0


def _flip_member_bytes(files, flips, seed=7):
    """Flips `flips` bytes inside the compressed data of the indexed members of
    `files` (never a gzip header or trailer), leaving every .idx as written."""
    import random

    rng = random.Random(seed)
    spans = []
    for f in files:
        with open(f + ".idx") as idx:
            for line in idx:
                if line.startswith("M "):
                    offset, size = (int(w) for w in line.split()[1:3])
                    spans.append((f, offset + 12, offset + size - 10))
    data = {f: bytearray(open(f, "rb").read()) for f in files}
    for _ in range(flips):
        f, lo, hi = rng.choice(spans)
        data[f][rng.randrange(lo, hi)] ^= 0xFF
    for f, b in data.items():
        with open(f, "wb") as out:
            out.write(b)


_WRITE_MEMBERS = r"""
import os, sys
import dftracer
from dftracer.python import dft_fn
children = []
for i in range(2):
    pid = os.fork()
    if pid == 0:  # each child writes its own .pfw.gz + .idx, and so does the parent
        children = None
        break
    children.append(pid)
for k in range(1500):
    with dft_fn("data", "load"):
        with dft_fn("cpu", "decode"):
            pass
    if k % 50 == 49:
        dftracer._core.flush()  # a gzip member every 50 loads
if children is None:
    sys.exit(0)
for pid in children:
    os.waitpid(pid, 0)
"""


def test_damaged_members_under_intact_indexes_count_the_same_on_every_path(tmp_path, client):
    # 50 flipped bytes in 3 traces whose .idx still checks out: the index
    # answered for the damaged data (events that no longer inflate, nothing
    # skipped), and Dask mixed indexed and read files. Every path now reads
    # the damaged members and counts them identically; --no-index works on
    # the Dask CLI too.
    env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_DISABLE_IO="1", DFTRACER_LOG_FILE=str(tmp_path / "t"))
    subprocess.run([sys.executable, "-c", _WRITE_MEMBERS], env=env, check=True, timeout=120)
    files = sorted(str(p) for p in tmp_path.glob("t-*.pfw.gz"))
    assert len(files) == 3
    _flip_member_bytes(files, 50)
    want = da.summary(files, threads=2, use_index=False)
    assert want.attrs["stats"]["corrupt_members"] >= 1
    for by in ("name", "tid"):
        want = da.summary(files, by=by, threads=2, use_index=False)
        for got in (da.summary(files, by=by, threads=2), da.summary(files, by=by, client=client),
                    da.summary(files, by=by, client=client, use_index=False)):
            _check_same(want, got, by)
            assert got.attrs["stats"]["corrupt_members"] == want.attrs["stats"]["corrupt_members"], by
            assert not got.attrs["index"] and got.attrs["stats"]["indexed_files"] == 0, by
    exe = _analyzer_bin()
    cli_env = dict(os.environ, DFTRACER_PYTHON=sys.executable)
    outs = [subprocess.run([exe, "summary", "--format", "json", *extra, *files], capture_output=True, text=True,
                           env=cli_env, timeout=300)
            for extra in ([], ["--no-index"], ["--dask", client.scheduler.address],
                          ["--dask", client.scheduler.address, "--no-index"])]
    for r in outs:
        assert r.returncode == 0 and "corrupt gzip member" in r.stderr, r.stderr
        assert r.stdout == outs[0].stdout
    assert json.loads(outs[0].stdout)["skipped"]["corrupt_members"] == want.attrs["stats"]["corrupt_members"]


def _helper_file(path, pid, n, start_ns):
    """A DataLoader worker's trace: a repeated region of item fetches and their
    reads, no model work (its process has no steps beside one that has some)."""
    lines = ["["]
    t = start_ns
    for _ in range(n):
        lines.append(synthetic_traces._event("read", "POSIX", pid, pid, t + 100_000, 400_000, {"ret": 4096}))
        lines.append(synthetic_traces._event("fetch_batch", "worker", pid, pid, t, 700_000, {}))
        t += 1_000_000
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n]\n")


@pytest.mark.parametrize("steps", ["1:", -1, slice(0, 2)])
def test_a_step_range_on_dask_equals_the_local_reader(traces, client, tmp_path, steps):
    # Whole small files, the big file's member ranges (a process's steps found
    # on one worker, its events read on several) and a helper process the
    # client must leave out, though its worker sees it alone.
    d, small, big = traces
    helper = str(tmp_path / "app-worker-77.pfw")
    _helper_file(helper, 77, 30, 1_700_000_000_000_000_000)
    paths = small[:120] + [big, helper]
    assert "helper" in {p["source"] for p in da.steps(paths).attrs["processes"]}
    for by in ("name", "tid", "module,phase", "category"):
        local = da.summary(paths, by=by, steps=steps, threads=2)
        dist = da.summary(paths, by=by, steps=steps, client=client)
        assert 0 < len(local), by
        pd.testing.assert_frame_equal(local, dist, check_exact=True, obj=f"summary by {by}")
        if by != "category":
            assert local.attrs["totals"] == dist.attrs["totals"], by
    assert da.summary(paths, steps=steps).attrs["totals"]["complete_events"] < \
        da.summary(paths).attrs["totals"]["complete_events"]
    local, dist = da.steps(paths, steps=steps), da.steps(paths, steps=steps, client=client)
    pd.testing.assert_frame_equal(local, dist, check_exact=True)
    assert local.attrs["processes"] == dist.attrs["processes"]
    pd.testing.assert_frame_equal(da.summary(paths, by="step", steps=steps, client=client), local, check_exact=True)
    pd.testing.assert_frame_equal(da.module_tree(paths, steps=steps), da.module_tree(paths, steps=steps, client=client),
                                  check_exact=True)
    a, b = small[:60], small[60:120] + [big]
    pd.testing.assert_frame_equal(da.diff(a, b, steps=steps), da.diff(a, b, steps=steps, client=client),
                                  check_exact=True)


def test_a_step_range_that_cannot_apply_on_dask_is_the_local_line(traces, client, tmp_path):
    d, small, big = traces
    helper = str(tmp_path / "app-worker-78.pfw")
    _helper_file(helper, 78, 30, 1_700_000_000_000_000_000)
    # The helper (30 region steps when read alone, as its worker reads it) has
    # none beside the others: "10:" picks none of their 4-5 steps.
    for paths, text in ((small[:40] + [big], "5000:"), (small[:40], "x"), (small[:5] + [helper], "10:")):
        with pytest.raises(ValueError) as local:
            da.summary(paths, steps=text)
        with pytest.raises(ValueError) as dist:
            da.summary(paths, steps=text, client=client)
        assert str(dist.value) == str(local.value), text
