"""With tracing off every API is a no-op that records nothing and creates no
file. As under pydftracer, initialize_log() traces only with DFTRACER_ENABLE
exactly 1; initialize_log(..., enable=True) opts in without the environment,
and DFTRACER_ENABLE set to anything but 1 is a kill switch even for that."""
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
""", env={"DFTRACER_LOG_FILE": os.path.join(trace_dir, "x"), "DFTRACER_ENABLE": None})
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
    """The core enforces DFTRACER_ENABLE for every entry point (here the raw
    `_core.init`, also with opt_in, bypassing initialize_log), and env.py
    reads the variable through the core: only exactly "1" enables."""
    for value, setting in ((" Off ", False), ("NO", False), ("\ttrue ", False), ("true", False), ("2", False),
                           (" 1", False), ("1", True), (None, None)):
        proc = run_python("""
import os, sys
import dftracer._core as core
from dftracer.python import env
print(repr((core.env_enable(), env.DFTRACER_ENABLE, env.TRACING_FORBIDDEN)))
if env.TRACING_FORBIDDEN:
    assert core.init(os.path.join(os.environ["TRACE_DIR"], "raw"), None, -1, opt_in=True) == 1
    assert not core.enabled() and core.trace_path() is None
""", env={"DFTRACER_ENABLE": value, "TRACE_DIR": trace_dir, "DFTRACER_LOG_FILE": os.path.join(trace_dir, "env")})
        got = eval(proc.stdout.strip().splitlines()[-1])
        assert got == (setting, setting is True, setting is False), (value, got)
    # Only "1" traced (from the environment, on import); the opt-in never did.
    names = os.listdir(trace_dir)
    assert not [n for n in names if n.startswith("raw")], names
    assert len([n for n in names if n.startswith("env") and n.endswith(".pfw.gz")]) == 1, names


INIT_AND_RECORD = """
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "s"), None, -1{opt})
with dft_fn("c", "region"):
    pass
log.log_event("n", "c", log.get_time(), 1)
log.finalize()
"""


def test_initialize_log_traces_only_with_enable_exactly_one(run_python, trace_dir, tmp_path):
    """pydftracer's switch: the program keeps initialize_log(); unset, "true"
    and "2" record nothing and create no file; "1" traces."""
    for value in (None, "true", "2", "0"):
        proc = run_python(INIT_AND_RECORD.format(opt=""), env={"DFTRACER_ENABLE": value, "TRACE_DIR": trace_dir})
        assert_no_files(trace_dir, str(tmp_path))
        if value in ("true", "2"):  # looks like "on": one line says why nothing is traced
            assert proc.stderr.count(f"DFTRACER_ENABLE='{value}' is not 1; tracing is off") == 1, proc.stderr
    run_python(INIT_AND_RECORD.format(opt=""), env={"DFTRACER_ENABLE": "1", "TRACE_DIR": trace_dir})
    from trace_reader import read_trace
    files = trace_files(trace_dir)
    assert len(files) == 1 and [e["name"] for e in read_trace(files[0]) if e["name"] in ("region", "n")] == ["region", "n"]


def test_enable_true_opts_in_without_the_environment_but_not_against_it(run_python, trace_dir, tmp_path):
    from trace_reader import read_trace
    run_python(INIT_AND_RECORD.format(opt=", enable=True"), env={"DFTRACER_ENABLE": None, "TRACE_DIR": trace_dir})
    files = trace_files(trace_dir)
    assert len(files) == 1 and len([e for e in read_trace(files[0]) if e["name"] == "region"]) == 1
    os.unlink(files[0])
    if os.path.exists(files[0] + ".idx"):
        os.unlink(files[0] + ".idx")
    for value in ("0", "true"):  # the user's kill switch wins over the program
        run_python(INIT_AND_RECORD.format(opt=", enable=True"), env={"DFTRACER_ENABLE": value, "TRACE_DIR": trace_dir})
        assert_no_files(trace_dir, str(tmp_path))
    # enable=False: this call starts nothing, even with DFTRACER_ENABLE=1
    # (what the environment started on import goes on in its own file).
    run_python(INIT_AND_RECORD.format(opt=", enable=False"), env={"DFTRACER_ENABLE": "1", "TRACE_DIR": trace_dir})
    assert_no_files(trace_dir)
