"""`dftracer.analyze.io()`: the I/O view of `dftracer-analyze io` as pandas
DataFrames, from the same C++. A real traced program (FUNCTION
mode) writes and reads files; the Python result and the command's JSON must
hold the same numbers, and the bytes must be the files' sizes."""
import json
import os
import subprocess

import pytest

from analyzer_cli import analyzer

pd = pytest.importorskip("pandas")
da = pytest.importorskip("dftracer.analyze")

IO_PROGRAM = """
import os
import dftracer  # FUNCTION mode: patches this process's I/O calls
os.makedirs("data", exist_ok=True)
with open("data/big.bin", "wb") as f:
    f.write(b"b" * 300000)
with open("data/small.bin", "wb") as f:
    for _ in range(10):
        f.write(b"s" * 100)
        f.flush()
with open("data/big.bin", "rb", buffering=0) as f:
    while f.read(65536):
        pass
fd = os.open("data/small.bin", os.O_RDONLY)
while os.read(fd, 100):
    pass
os.close(fd)
"""


@pytest.fixture
def io_trace(run_python, trace_dir, tmp_path):
    env = {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "io"),
           "DFTRACER_DATA_DIR": str(tmp_path / "data")}
    run_python(IO_PROGRAM, env=env)
    return trace_dir, tmp_path / "data"


def cli_json(trace_dir, *options):
    out = subprocess.run([analyzer(), "io", "--format", "json", *options, trace_dir], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def as_table(df, key):
    return {row[key]: {c: row[c] for c in da.IO_COLUMNS} for row in df.to_dict("records")}


def assert_same(py, doc):
    assert py["total"] == doc["total"]
    assert py["by_kind"] == doc["by_kind"]
    assert dict(zip(py["by_file"]["file"], py["by_file"]["kind"])) == {k: v.pop("kind") for k, v in doc["by_file"].items()}
    assert py["small_bytes"] == doc["small_bytes"]
    for table, key in (("by_file", "file"), ("by_call", "call"), ("by_process", "pid")):
        assert as_table(py[table], key) == doc[table], table
        assert list(py[table]["time_us"]) == sorted(py[table]["time_us"], reverse=True), "longest first"
    bins = doc["bandwidth"]["bins"]
    assert py["bin_s"] == doc["bandwidth"]["bin_s"]
    assert py["bandwidth"][["t_s", "read_bytes", "write_bytes"]].to_dict("records") == bins


def test_io_matches_the_command_and_the_files(io_trace):
    trace_dir, data = io_trace
    py = da.io(trace_dir)
    assert_same(py, cli_json(trace_dir))
    files = as_table(py["by_file"], "file")
    big, small = str(data / "big.bin"), str(data / "small.bin")
    assert files[big]["write_bytes"] == 300000 and files[big]["read_bytes"] == 300000
    assert files[small]["write_bytes"] == 1000 and files[small]["read_bytes"] == 1000
    assert files[small]["small_writes"] == 10 and files[small]["small_reads"] >= 10
    assert py["total"]["read_bytes"] == py["bandwidth"]["read_bytes"].sum() == 301000
    assert (py["bandwidth"]["read_mib_s"] * 1024 * 1024 * py["bin_s"]).round().sum() == 301000
    assert py["stats"]["files"] == 1
    assert len(py["by_process"]) == 1, "one process did all the I/O"


def test_io_options_match_the_command(io_trace):
    trace_dir, _ = io_trace
    py = da.io(trace_dir, small_bytes=200000, bin_ms=5, threads=1)
    doc = cli_json(trace_dir, "--small-bytes", "200000", "--bin-ms", "5")
    assert_same(py, doc)
    assert py["small_bytes"] == 200000 and py["bin_s"] == 0.005
    assert py["total"]["small_reads"] > da.io(trace_dir)["total"]["small_reads"]


def test_io_bad_options_say_which(io_trace):
    trace_dir, _ = io_trace
    with pytest.raises(ValueError, match="small_bytes"):
        da.io(trace_dir, small_bytes=-1)
    with pytest.raises(ValueError, match="bin_ms"):
        da.io(trace_dir, bin_ms=0)
    with pytest.raises(TypeError, match="bin_ms"):
        da.io(trace_dir, bin_ms=1.5)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        da.io(os.path.join(trace_dir, "nowhere"))


def test_io_of_a_trace_without_io_is_empty(tmp_path):
    p = tmp_path / "t.pfw"
    p.write_text('[\n{"id":0,"name":"op","cat":"cpu_op","pid":1,"tid":1,"ts":10,"dur":5,"ph":"X"}\n')
    py = da.io(str(p))
    assert py["total"]["ops"] == 0
    assert py["by_file"].empty and list(py["by_file"].columns) == ["file", *da.IO_COLUMNS, "kind"]
    assert py["bandwidth"].empty


def test_the_dataset_file_leads_the_imports(tmp_path):
    """A trace whose imports made many more calls and took longer than the dataset's
    reads: `io`'s table names the dataset first and sums the imports in one line;
    `io --format json` and dftracer.analyze.io() give each file its kind."""
    site = "/opt/py/lib/python3.11/site-packages/torch"
    names = {"00000000000000aa": "/data/train.bin", "00000000000000bb": site + "/_compile.py",
             "00000000000000cc": site + "/__pycache__/_compile.cpython-311.pyc"}
    evs = [{"name": "FH", "cat": "dftracer", "pid": 1, "tid": 1, "ph": "M", "args": {"name": p, "value": h}}
           for h, p in names.items()]
    ts = 1.7e15
    for i in range(300):
        ts += 100
        evs.append({"name": "stat64" if i % 2 else "read", "cat": "POSIX", "pid": 1, "tid": 1, "ts": ts, "dur": 40,
                    "ph": "X", "args": {"fhash": "00000000000000bb" if i % 3 else "00000000000000cc", "ret": 10}})
    for i in range(5):
        ts += 100
        evs.append({"name": "read", "cat": "POSIX", "pid": 1, "tid": 1, "ts": ts, "dur": 50, "ph": "X",
                    "args": {"fhash": "00000000000000aa", "size": 1 << 20, "ret": 1 << 20}})
    trace = tmp_path / "run.pfw"
    trace.write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in evs))
    out = subprocess.run([analyzer(), "io", str(trace)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    header = next(i for i, l in enumerate(lines) if l.strip().startswith("file "))
    assert lines[header + 1].split()[0] == "/data/train.bin", out
    assert "_compile" not in out, out
    assert "Python imports and libraries (runtime I/O): 300 calls, 12000.0 us over 2 files" in out, out
    doc = cli_json(str(trace))
    assert doc["by_file"]["/data/train.bin"]["kind"] == "data"
    assert {doc["by_file"][p]["kind"] for p in names.values() if p != "/data/train.bin"} == {"runtime"}
    py = da.io(str(trace))
    kinds = dict(zip(py["by_file"]["file"], py["by_file"]["kind"]))
    assert kinds["/data/train.bin"] == "data" and kinds[site + "/_compile.py"] == "runtime"
    assert py["by_kind"]["runtime"]["ops"] == 300 and py["by_kind"]["data"]["ops"] == 5
