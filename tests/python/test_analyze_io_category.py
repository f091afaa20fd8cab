"""I/O on the runtime's own files is not data loading. A traced program that
imports modules (before its loop, and lazily inside a step) and reads one data
file per step, with every path traced: `summary --by category`, the steps'
split and a summary grouped by category count as `data` exactly the I/O calls
on the files `io` calls data files, and the imports' calls as `other`."""
import os

import pytest
from analyzer_cli import analyzer_json
from trace_reader import read_trace, trace_files

da = pytest.importorskip("dftracer.analyze")
if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

IO_CATS = ("POSIX", "STDIO")

PROGRAM = """
import os
from dftracer.python import dftracer, dft_fn

log = dftracer.initialize_log(os.path.join({traces!r}, "run.pfw"), "all", -1)
import xml.dom.minidom, email.mime.text, http.cookiejar, decimal  # noqa: F401  (not imported yet: imports)
for step in range(4):
    with dft_fn("train", name="train_step"):
        with open(os.path.join({data!r}, "shard%d.bin" % step), "rb") as f:
            f.read()
        if step == 2:
            import sqlite3  # noqa: F401  (a lazy import inside a step)
        sum(range(200000))
log.finalize()
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    from conftest import run_python_in

    root = tmp_path_factory.mktemp("io_category")
    data, traces = root / "data", root / "traces"
    data.mkdir()
    traces.mkdir()
    for i in range(4):
        (data / f"shard{i}.bin").write_bytes(os.urandom(256 << 10))
    run_python_in(str(root), PROGRAM.format(traces=str(traces), data=str(data)))
    files = trace_files(str(traces))
    assert len(files) == 1, files
    events = read_trace(files[0])
    kind = {path: row["kind"] for path, row in analyzer_json("io", files[0])["by_file"].items()}
    names = {e["args"]["value"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "FH"}
    io = [e for e in events if e.get("ph") == "X" and e.get("cat") in IO_CATS]
    for e in io:
        fhash = (e.get("args") or {}).get("fhash")
        e["path"] = names.get(fhash, f"fhash:{fhash}" if fhash is not None else "(no fhash)")
    return files[0], io, kind, str(data)


def test_the_runtimes_io_is_other_and_the_data_files_io_is_data(traced):
    path, io, kind, data = traced
    data_io = [e for e in io if kind.get(e["path"], "data") == "data"]
    runtime_io = [e for e in io if kind.get(e["path"], "data") == "runtime"]
    # The program's reads of its shards are data; the imports' files are the runtime's.
    assert {os.path.join(data, f"shard{i}.bin") for i in range(4)} <= {e["path"] for e in data_io}
    assert any(e["path"].endswith((".py", ".pyc")) for e in runtime_io)
    assert not any(e["path"].endswith((".py", ".pyc", ".so")) for e in data_io)

    rows = {r["category"]: r for r in analyzer_json("summary", "--by", "category", path)["rows"]}
    assert rows["data"]["count"] == len(data_io)
    assert rows["data"]["thread_us"] == pytest.approx(sum(e["dur_ns"] for e in data_io) / 1e3, rel=1e-9)
    assert rows["other"]["count"] >= len(runtime_io)
    assert rows["other"]["thread_us"] >= sum(e["dur_ns"] for e in runtime_io) / 1e3 * (1 - 1e-9)

    # A summary grouped by category beside another key finds the files' kinds itself (its own scan).
    s = da.summary(path, by="name,category")
    got = s[s["category"] == "data"]
    assert int(got["count"].sum()) == len(data_io)
    assert got["self_us"].sum() == pytest.approx(sum(e["dur_ns"] for e in data_io) / 1e3, rel=1e-9)


def test_each_steps_data_is_its_data_files_io_and_a_lazy_import_is_other(traced):
    path, io, kind, data = traced
    doc = analyzer_json("summary", "--by", "step", path)
    steps = doc["steps"]
    assert len(steps) == 4, [(r["label"], r["duration_us"]) for r in steps]
    for r in steps:
        lo, hi = r["start_us"] * 1000, (r["start_us"] + r["duration_us"]) * 1000
        inside = [e for e in io if lo <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= hi]
        data_ns = sum(e["dur_ns"] for e in inside if kind.get(e["path"], "data") == "data")
        runtime_ns = sum(e["dur_ns"] for e in inside if kind.get(e["path"], "data") == "runtime")
        assert r["data_thread_us"] == pytest.approx(data_ns / 1e3, abs=1), r
        if r["step"] == 2:  # sqlite3's import: many calls on the runtime's files, in other
            assert runtime_ns > 0, "no import I/O inside step 2"
            assert r["other_thread_us"] >= runtime_ns / 1e3 - 1, r
