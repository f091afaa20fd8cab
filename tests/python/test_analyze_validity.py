"""One validity rule for every command: a line is an
event only when it is a valid JSON object, whichever command reads it.

simdjson On-Demand does not validate the fields it skips, so `summary`,
`report` and `events()` used to keep lines that `merge` (which validates
whole) rejected: `"id":-`, `NaN`, `01`, `tru`. Each such line is now dropped
and counted as malformed by all of them alike.
"""
import json
import os
import re
import subprocess
import sys

import pytest

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

GOOD = '{"id":%d,"name":"op","cat":"c","pid":1,"tid":1,"ts":%d,"dur":5,"ph":"X","args":{"step":1}}'

# Each one is invalid JSON in a field the readers do not look at (so only a
# whole-line validation can see it), in a known field's value, or in args.
# Some take the hand-written fast path's fallback, some fail in it first.
BAD = {
    "id_minus": '{"id":-,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X"}',
    "nan": '{"id":1,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X","x":NaN}',
    "leading_zero": '{"id":01,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X"}',
    "tru": '{"id":1,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X","ok":tru}',
    "nan_in_args": '{"id":1,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X","args":{"v":NaN}}',
    "tru_in_args_escaped_name": '{"id":1,"name":"o\\u0070","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,'
                                '"ph":"X","args":{"ok":tru}}',
    # Item 19: args nested past simdjson's depth limit were counted by summary
    # and dropped by merge; now every command drops (and counts) them.
    "args_nested_5000_deep": '{"id":1,"name":"op","cat":"c","pid":1,"tid":1,"ts":100,"dur":5,"ph":"X","args":'
                             + '{"x":' * 5000 + '1' + '}' * 5000 + '}',
    "leading_zero_v1_quoted": '{"id":"1","name":"op","cat":"c","pid":"1","tid":"1","ts":"100","dur":"5",'
                              '"ph":"X","z":00}',
}


def _analyze_exe():
    here = os.path.join(os.path.dirname(sys.executable), "dftracer-analyze")
    return here if os.path.exists(here) else "dftracer-analyze"


def _trace(tmp_path, bad_line):
    lines = ["["] + [GOOD % (i, 1000 + 10 * i) for i in range(3)] + [bad_line, "]"]
    path = tmp_path / "t.pfw"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_command_drops_the_same_invalid_line(tmp_path, case):
    path = _trace(tmp_path, BAD[case])
    exe = _analyze_exe()

    # CLI summary (JSON): three events, one malformed line.
    out = subprocess.run([exe, "summary", path, "--format", "json"], capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    assert sum(r["count"] for r in s["rows"]) == 3, (case, s)
    assert s["skipped"]["malformed"] == 1, (case, s)

    # CLI report: the page's data counts three events.
    html = tmp_path / "r.html"
    subprocess.run([exe, "report", path, "-o", str(html)], capture_output=True, text=True, check=True)
    assert re.search(r'"events":3\b', html.read_text()), case

    # CLI merge: three events in the strict JSON output.
    merged = tmp_path / "m.json"
    subprocess.run([exe, "merge", path, "-o", str(merged)], capture_output=True, text=True, check=True)
    events = [e for e in json.loads(merged.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert len(events) == 3, case

    # Python: events() and summary() agree.
    batches = da.events(path)
    with pytest.warns(da.SkippedInputWarning):
        frames = list(batches)
    assert sum(int((f["ph"] == "X").sum()) for f in frames) == 3, case
    assert batches.stats["malformed"] == 1, (case, batches.stats)
    with pytest.warns(da.SkippedInputWarning):
        summ = da.summary(path)
    assert int(summ["count"].sum()) == 3, case
    assert summ.attrs["stats"]["malformed"] == 1, (case, summ.attrs)
