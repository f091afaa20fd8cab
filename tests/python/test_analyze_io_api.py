"""`dftracer.analyze.io()`: the I/O view of `dftracer-analyze io` as pandas
DataFrames, from the same C++ (issue #14). A real traced program (FUNCTION
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
    assert py["by_file"].empty and list(py["by_file"].columns) == ["file", *da.IO_COLUMNS]
    assert py["bandwidth"].empty
