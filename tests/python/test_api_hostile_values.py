"""Hostile values through the pydftracer API: each one
gets a clear one-line error or is written whole and escaped -- never a C++
message, silent truncation, garbage in the file or a key written twice.

Each test runs in a fresh interpreter and reads the trace file back.
"""
import os

from test_api_events import run_traced as run_traced_events
from trace_reader import read_finalized, read_trace_text, trace_files

EXPECT = """
def expect(exc, fn, text):
    try:
        fn()
    except exc as e:
        assert "dftracer" in str(e) and text in str(e) and "\\n" not in str(e), str(e)
    else:
        raise SystemExit(f"no {exc.__name__} for {text}")
"""


def run_traced(run_python, trace_dir, body, env=None):
    """test_api_events' runner (initialize_log, the body, finalize) with
    `expect` defined; also returns the file's text, checked as a finalized trace."""
    path, events, proc = run_traced_events(run_python, trace_dir, EXPECT + body, env)
    text = read_trace_text(path)
    read_finalized(path)
    return text, events, proc


def test_metadata_keeps_nul_and_long_values_whole_and_replaces_lone_surrogates(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, r"""
log.log_metadata_event("k\x00ey", "va\x00lue")
log.log_metadata_event("surrogate", "a\udcffb")
log.log_metadata_event("long", "x" * 5000)
""")
    meta = {e["args"]["name"]: e["args"] for e in events if e.get("ph") == "M" and e["name"] == "CM"}
    assert meta["k\x00ey"]["name"] == "k\x00ey" and meta["k\x00ey"]["value"] == "va\x00lue"
    assert meta["surrogate"]["value"] == "a?b"
    assert meta["long"]["value"] == "x" * 5000


def test_float_and_int_times_out_of_range_raise_the_same_error(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
t = log.get_time()
for bad in (1e300, 2.0**64, 2**64, 18446744073709552):
    expect(ValueError, lambda: log.log_event("n", "c", bad, 1), "start_time out of range")
    expect(ValueError, lambda: log.log_event("n", "c", t, bad), "duration out of range")
for bad in (-1, -0.5, float("inf"), float("nan")):
    expect(ValueError, lambda: log.log_event("n", "c", t, bad), "duration out of range")
expect(ValueError, lambda: log.log_event("n", "c", 18446744073709551, 1.0), "start_time + duration out of range")
log.log_event("edge", "c", 18446744073709550, 0.5)
log.log_event("ok", "c", t, 2.25)
""", env={"DFTRACER_TIME_RESOLUTION": "ns"})  # the fractions given are kept
    assert not [e for e in events if e.get("name") == "n"]
    edge, = [e for e in events if e.get("name") == "edge"]
    assert edge["ts"] == 18446744073709550 and edge["dur"] == 0.5
    ok, = [e for e in events if e.get("name") == "ok"]
    assert ok["dur"] == 2.25


def test_a_user_hhash_arg_is_kept_as_user_hhash(run_python, trace_dir):
    text, events, _ = run_traced(run_python, trace_dir, """
log.log_event("mine", "c", log.get_time(), 1, {"hhash": "user value", "x": 1})
""", env={"DFTRACER_INC_METADATA": "1"})  # ours in every event's args
    host, = [e["args"]["value"] for e in events if e.get("name") == "HH"]
    mine, = [e for e in events if e.get("name") == "mine"]
    assert mine["args"]["hhash"] == host
    assert mine["args"]["user_hhash"] == "user value" and mine["args"]["x"] == 1
    line, = [ln for ln in text.splitlines() if '"name":"mine"' in ln]
    assert line.count('"hhash":') == 1, line


def test_a_bad_setting_warns_once_per_process(run_python, trace_dir):
    # The package reads the settings at import and initialize_log reads them
    # again: each bad value used to be reported twice.
    # Read at import (init_from_env) and again by initialize_log, with
    # DFTRACER_ENABLE=1 (moved from the import's file) and with it unset
    # (only the opt-in initialize_log(enable=True) starts tracing).
    for enable in (None, "1"):
        env = {"DFTRACER_BUFFER_SIZE": "lots", "DFTRACER_ENABLE": enable}
        body = "" if enable else "log.finalize()\nlog = dftracer.initialize_log(os.path.join(os.environ['TRACE_DIR'], 't'), None, -1, enable=True)\n"
        _, _, proc = run_traced(run_python, trace_dir, body, env=env)
        assert proc.stderr.count("DFTRACER_BUFFER_SIZE='lots' is not valid") == 1, proc.stderr
        for f in trace_files(trace_dir):
            os.unlink(f)
            if os.path.exists(f + ".idx"):
                os.unlink(f + ".idx")
