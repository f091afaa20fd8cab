"""Options a command would not use are refused, never dropped: `dftracer-analyze`
exits 2 with one line naming the option, on real traces (tests/data: pydftracer's
trace, HTA's Kineto GPU traces), and options that now apply where they used to
be ignored (device --format csv --top) cut the rows as the table does.
(--sort/--top of diff, --efficiency, --tree and --by rank, with their Python
equivalents: test_analyze_parity.py.)"""
import csv
import io
import os
import subprocess
import sys

import pytest

from analyzer_cli import ROOT, analyzer

TRACE = os.path.join(ROOT, "tests", "data", "dftracer-2.2-pydftracer.pfw.gz")
KINETO = os.path.join(ROOT, "tests", "data", "kineto", "nccl_data.json.gz")


def run(*args):
    env = dict(os.environ, DFTRACER_PYTHON=sys.executable)  # export and --dask run in this interpreter's package
    return subprocess.run([analyzer(), *args, "--no-progress"], capture_output=True, text=True, timeout=300, env=env)


# (arguments, the refusal's words); TRACE or KINETO is the input.
REFUSED = [
    (("merge", TRACE, "-o", "OUT.json", "--format", "csv"), "--format: merge writes the format -o names"),
    (("report", TRACE, "-o", "OUT.html", "--format", "json"), "--format: report writes one HTML page"),
    (("report", TRACE, "-o", "OUT.html", "--sort", "total"), "--sort works only with summary and diff, not report"),
    (("report", TRACE, "-o", "OUT.html", "--by", "cat"), "--by works only with summary, diff and device, not report"),
    (("io", TRACE, "--by", "name"), "--by works only with summary, diff and device, not io"),
    (("io", TRACE, "--sort", "total"), "--sort works only with summary and diff, not io"),
    (("io", TRACE, "--format", "json", "--top", "3"), "--top: io --format json holds every file, call and process"),
    (("memory", TRACE, "--top", "3"), "--top: memory has no rows to cut"),
    (("merge", TRACE, "-o", "OUT.json", "--top", "3"), "--top: merge has no rows to cut"),
    (("ranks", TRACE, "--format", "json", "--top", "3"), "--top cuts the collectives of the ranks text; --format json"),
    (("ranks", TRACE, "--table", "waits"), "--table picks the one table of ranks --format csv"),
    (("summary", TRACE, "--table", "steps"), "--table picks the one table of ranks --format csv"),
    (("summary", TRACE, "--calibration", "cal.json"), "--calibration works only with summary --efficiency and report"),
    (("summary", TRACE, "--small-bytes", "10"), "--small-bytes works only with io"),
    (("summary", TRACE, "--bin-ms", "10"), "--bin-ms works only with io"),
    (("summary", TRACE, "--epoch-ts"), "--epoch-ts works only with merge"),
    (("memory", TRACE, "--no-index"), "--no-index works only with summary"),
    (("calibrate", "--from", "+1s"), "--from: calibrate reads no trace"),
    (("calibrate", "--format", "json"), "--format: calibrate writes its peaks as JSON"),
    (("device", KINETO, "--sort", "total"), "--sort works only with summary and diff, not device"),
    (("device", KINETO, "--format", "json", "--top", "3"), "--top: device --format json writes every table whole"),
    (("device", KINETO, "--format", "json", "--by", "kernel"), "--by: device --format json writes every table whole"),
    (("device", KINETO, "--by", "step", "--top", "2"), "device --by step shows every step: no --top"),
    (("summary", TRACE, "--efficiency", "--sort", "total"), "--sort: efficiency rows sort by self, count, flops"),
    (("summary", TRACE, "--by", "module", "--tree", "--sort", "p50"),
     "--sort: the tree's siblings are ordered by total, self or count, not 'p50'"),
    (("diff", TRACE, TRACE, "--sort", "p50"), "--sort: diff sorts by the |delta| of self, total or count"),
    (("summary", TRACE, "--by", "rank", "--sort", "count"), "--sort: --by rank sorts by self or total, not 'count'"),
    (("export", TRACE, "--format", "parquet", "-o", "OUT.pq", "--by", "name"), "--by: export writes every event"),
    (("export", TRACE, "--format", "parquet", "-o", "OUT.pq", "--top", "3"), "--top: export writes every event"),
    (("summary", TRACE, "--dask", "tcp://127.0.0.1:1", "--workers", "4"), "--workers sizes the cluster of --dask local"),
]


@pytest.mark.parametrize("args,words", REFUSED,
                         ids=[" ".join(x for x in a if x not in (TRACE, KINETO)) for a, _ in REFUSED])
def test_an_option_the_command_would_ignore_is_refused(tmp_path, args, words):
    args = [str(tmp_path / a) if a.startswith("OUT.") else a for a in args]
    p = run(*args)
    assert p.returncode == 2, (args, p.returncode, p.stdout[-500:], p.stderr)
    first = p.stderr.splitlines()[0]
    assert first.startswith("dftracer-analyze: ") and words in first, (args, p.stderr)
    assert p.stdout == "" and not any(os.path.exists(a) for a in args if a.startswith(str(tmp_path))), args


def test_device_csv_keeps_the_top_rows():
    """`device --format csv --top N`: the first N rows of the whole CSV, as the table cuts."""
    def rows(*extra):
        p = run("device", KINETO, "--by", "kernel", "--format", "csv", *extra)
        assert p.returncode == 0, p.stderr
        return list(csv.reader(io.StringIO(p.stdout)))

    whole = rows()
    assert len(whole) > 4
    assert rows("--top", "3") == whole[:4]  # the header and three rows
    assert rows("--top", "0") == whole


def test_options_that_apply_still_run():
    """The options each command does use pass the check (a guard against refusing too much)."""
    for args in (("summary", TRACE, "--by", "cat", "--sort", "total", "--top", "2", "--no-index"),
                 ("io", TRACE, "--top", "3", "--small-bytes", "100", "--bin-ms", "10"),
                 ("ranks", TRACE, "--format", "csv", "--table", "ranks"),
                 ("device", KINETO, "--by", "kernel", "--top", "2"),
                 ("memory", TRACE, "--format", "json")):
        p = run(*args)
        assert p.returncode == 0, (args, p.stderr)
