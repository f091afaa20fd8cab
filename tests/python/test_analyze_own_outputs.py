"""The analyzer's own outputs are not read back as traces, and `export` says
what it skipped in one line, not as a Python warning with a source line."""
import gzip
import os
import subprocess
import sys

import pytest

from analyzer_cli import analyzer

BASE = 1795280406425524


def _trace(path, bad_line=False):
    lines = ["["]
    for i in range(10):
        lines.append(f'{{"id":{i},"name":"op{i % 3}","cat":"op","pid":4242,"tid":4242,"ts":{BASE + i * 1000},'
                     f'"dur":10,"ph":"X","args":{{"step":{i // 5}}}}}')
    if bad_line:
        lines.insert(3, "{this is not json")
    with open(path, "w") as f:
        f.write(lines[0] + "\n" + ",\n".join(lines[1:]) + "\n]\n")


def _run(*args):
    # The command hands `export` to Python: this interpreter, whose dftracer is under test.
    env = dict(os.environ, DFTRACER_PYTHON=sys.executable)
    return subprocess.run([analyzer(), *args], capture_output=True, text=True, env=env, timeout=300)


def test_export_reports_skipped_input_in_one_line_without_a_warning(tmp_path):
    pytest.importorskip("pyarrow")
    trace = tmp_path / "t.pfw"
    _trace(trace, bad_line=True)
    r = _run("export", "--format", "parquet", "-o", str(tmp_path / "out"), str(trace))
    assert r.returncode == 0, r.stderr
    assert "dftracer-analyze: skipped 1 malformed or partial line" in r.stderr, r.stderr
    assert "Warning" not in r.stderr and ".py:" not in r.stderr, r.stderr  # no warnings.warn source line
    assert len(r.stderr.splitlines()) == 2, r.stderr  # the skipped line, the "wrote" line


def test_export_of_a_directory_leaves_out_the_calibration_and_merged_files(tmp_path):
    pytest.importorskip("pyarrow")
    traces = tmp_path / "traces"
    traces.mkdir()
    _trace(traces / "t.pfw")
    (traces / "dftracer-calibration.json").write_text(
        '{"dftracer_calibration":1,"peak_gflops":10,"peak_gbps":5,"threads":1,"host":"h"}\n')
    m = _run("merge", "-o", str(traces / "m.json.gz"), str(traces) + "/")
    assert m.returncode == 0, m.stderr
    with gzip.open(traces / "m.json.gz", "rt") as f:
        assert f.read(4096).startswith('{"displayTimeUnit":"ms","otherData":{"dftracer_merge":1,')
    r = _run("export", "--format", "parquet", "-o", str(tmp_path / "out"), str(traces))
    assert r.returncode == 0, r.stderr
    assert "wrote 10 events of 1 files" in r.stderr, r.stderr  # not 20 of 3: no merged copy, no calibration
    assert "skipped" not in r.stderr and "Warning" not in r.stderr, r.stderr
    assert "left out the analyzer's own outputs" in r.stderr, r.stderr
