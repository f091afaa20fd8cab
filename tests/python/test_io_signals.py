"""The tracer's SIGTERM/SIGINT handler (finalize the trace, then die of the
signal) is invisible to the program: sigaction/signal report it as SIG_DFL
(src/capture/io/signal_hooks.c). Under PRELOAD the core starts before CPython does,
and CPython used to see a foreign SIGINT handler: no KeyboardInterrupt
(Ctrl-C killed it), both handlers reported as None, and code that saves and
restores a handler (multiprocessing's forkserver) failing with TypeError.
Each case runs a real interpreter untraced, in FUNCTION mode and under
PRELOAD, and compares what the program saw and how it ended."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import _clean_env
from trace_reader import read_trace, trace_files

PROGRAM = r"""
import signal, os, sys, time
print(signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
old = signal.signal(signal.SIGINT, signal.SIG_IGN)   # forkserver's save ...
signal.signal(signal.SIGINT, old)                      # ... and restore
old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGTERM, old)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("KeyboardInterrupt")
    sys.stdout.flush()
if sys.argv[1] == "term":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
sys.exit(7)
"""


def preload_library():
    import dftracer
    path = os.path.join(os.path.dirname(dftracer.__file__), "lib", "libdftracer_preload.so")
    assert os.path.exists(path), path
    return path


def run(mode, how, tmp_path):
    env = _clean_env()
    prefix = str(tmp_path / mode / "t")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    code = PROGRAM
    if mode != "untraced":
        env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=prefix, DFTRACER_DATA_DIR=str(tmp_path))
    if mode == "function":
        code = "import dftracer.python\n" + code
    if mode == "preload":
        env.update(DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library())
    p = subprocess.run([sys.executable, "-c", code, how], env=env, capture_output=True, text=True, timeout=120)
    return p, trace_files(os.path.dirname(prefix)) if mode != "untraced" else []


@pytest.mark.parametrize("mode", ["function", "preload"])
def test_the_program_sees_its_own_signal_dispositions(mode, tmp_path):
    want, _ = run("untraced", "int", tmp_path)
    assert want.returncode == 7 and want.stdout.splitlines() == [
        "<built-in function default_int_handler> 0", "KeyboardInterrupt"], want
    got, files = run(mode, "int", tmp_path)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr[-2000:]
    assert len(files) == 1
    assert read_trace(files[0])[-1]["name"] == "end"  # the normal exit finalized it


@pytest.mark.parametrize("mode", ["function", "preload"])
def test_sigterm_still_finalizes_the_trace_and_kills_as_untraced(mode, tmp_path):
    want, _ = run("untraced", "term", tmp_path)
    assert want.returncode == -signal.SIGTERM and want.stdout.endswith("KeyboardInterrupt\n"), want
    got, files = run(mode, "term", tmp_path)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr[-2000:]
    assert len(files) == 1
    events = read_trace(files[0])
    assert events[-1]["name"] == "end", events[-3:]
