"""With tracing off every API is a no-op that records nothing and creates no
file; DFTRACER_ENABLE=0 is a kill switch that also ignores initialize_log."""
import os

from trace_reader import trace_files

USE_EVERYTHING = """
import os, asyncio
from dftracer.python import dftracer, dft_fn
import dftracer._core as core
fn = dft_fn("off")

@fn.log
def f(x):
    return x * 2

@fn.log
def gen():
    yield 1
    yield 2

@fn.log
async def coro():
    return 3

with dft_fn("off", "block") as r:
    r.update(args={"a": 1})
assert f(2) == 4 and list(gen()) == [1, 2] and asyncio.run(coro()) == 3
assert list(fn.iter(range(3))) == [0, 1, 2]
log = dftracer.get_instance()
log.log_event("n", "c", log.get_time(), 1, {"a": 1})
log.log_metadata_event("k", "v")
fn.log_metadata("k2", "v2")
log.finalize()
log.finalize()
"""


def assert_no_files(*dirs):
    for d in dirs:
        found = [p for p in trace_files(d)] + [p for p in os.listdir(d) if ".pfw" in p]
        assert not found, found


def test_disabled_records_nothing_and_creates_no_file(run_python, trace_dir, tmp_path):
    run_python(USE_EVERYTHING + """
assert not core.enabled() and core.trace_path() is None
assert core.stats()["events_recorded"] == 0
assert core.stats()["events_after_finalize"] == 0  # never traced: nothing was finalized
""", env={"DFTRACER_LOG_FILE": os.path.join(trace_dir, "x")})
    assert_no_files(trace_dir, str(tmp_path))


def test_enable_zero_is_a_kill_switch(run_python, trace_dir, tmp_path):
    run_python("""
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "k.pfw"), None, -1)
def plain():
    return 1
assert dft_fn("c").log(plain) is plain        # unwrapped: zero cost
""" + USE_EVERYTHING + """
assert not core.enabled()
""", env={"DFTRACER_ENABLE": "0", "TRACE_DIR": trace_dir})
    assert_no_files(trace_dir, str(tmp_path))


def test_enable_false_per_object(run_python, trace_dir):
    run_python("""
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "e.pfw"), None, -1)
quiet = dft_fn("q", enable=False)
def plain():
    return 1
assert quiet.log(plain) is plain
with dft_fn("q", "silent", enable=False):
    pass
log.finalize()
""", env={"TRACE_DIR": trace_dir})
    from trace_reader import read_trace
    events = read_trace(trace_files(trace_dir)[0])
    assert not [e for e in events if e.get("cat") == "q"]


def test_kill_switch_is_the_cores_and_python_agrees(run_python, trace_dir, tmp_path):
    """The core enforces DFTRACER_ENABLE=0 for every entry point (here the
    raw `_core.init` that bypasses initialize_log), and env.py reads the
    variable through the core, so spellings the two used to parse
    differently (blanks, case) mean the same on both sides."""
    for value, setting in ((" Off ", False), ("NO", False), ("\ttrue ", True), ("maybe", None)):
        proc = run_python("""
import os, sys
import dftracer._core as core
from dftracer.python import env
print(repr((core.env_enable(), env.DFTRACER_ENABLE, env.TRACING_FORBIDDEN)))
if env.TRACING_FORBIDDEN:
    assert core.init(os.path.join(os.environ["TRACE_DIR"], "raw"), None, -1) == 1
    assert not core.enabled() and core.trace_path() is None
""", env={"DFTRACER_ENABLE": value, "TRACE_DIR": trace_dir, "DFTRACER_LOG_FILE": os.path.join(trace_dir, "env")})
        got = eval(proc.stdout.strip().splitlines()[-1])
        assert got == (setting, setting is True, setting is False), (value, got)
    # " Off " and "NO" started nothing; "\ttrue " traced from the environment on import.
    names = os.listdir(trace_dir)
    assert not [n for n in names if n.startswith("raw")], names
