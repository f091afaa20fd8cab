"""How a traced Python program's trace ends when the program is stopped:
Ctrl-C (SIGINT), an uncaught KeyboardInterrupt, `python -c`, with recording
threads still running. Each must leave a finalized file: `[`, one object a line, `]`, the
`end` event last, and nothing recorded before the stop lost.

After an uncaught KeyboardInterrupt CPython finalizes the interpreter and
then kills itself with SIGINT, so C atexit handlers never run; the
extension finalizes at the end of Py_FinalizeEx (Py_AtExit), after every
Python atexit handler, also those registered before dftracer was imported. The flush interval is set to a
minute so that, without it, every event would still sit in its buffer.
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from trace_reader import read_finalized, read_trace, trace_files

ENV = {"DFTRACER_ENABLE": "1", "DFTRACER_FLUSH_INTERVAL_MS": "60000"}

RECORD_THEN_WAIT = """
import threading, time
from dftracer.python import dft_fn
{threads}
for i in range(100):
    with dft_fn("app", "before_stop"):
        pass
print("ready", flush=True)
{stop}
"""

WAIT_FOREVER = """
while True:
    with dft_fn("app", "loop"):
        time.sleep(0.01)
"""

# Daemon threads still recording when the interpreter exits, and one
# ordinary thread that has finished: each leaves its events.
RECORDING_THREADS = """
def record(name, first):
    while True:
        with dft_fn("worker", name):
            time.sleep(0.001)
        first.set()

def finish():
    for _ in range(50):
        with dft_fn("worker", "finished"):
            pass

recorded = [threading.Event() for _ in range(3)]
for k, first in enumerate(recorded):
    threading.Thread(target=record, args=(f"daemon{k}", first), daemon=True).start()
for first in recorded:
    first.wait()
done = threading.Thread(target=finish)
done.start()
done.join()
"""


def run_until_stopped(tmp_path, trace_dir, code, as_command=False, send_sigint=True):
    """Runs `code` in a fresh interpreter tracing to trace_dir/stop; sends it
    SIGINT once it prints "ready" (if `send_sigint`). Returns (returncode,
    stderr, the one trace file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(ENV, DFTRACER_LOG_FILE=os.path.join(trace_dir, "stop"))
    code = textwrap.dedent(code)
    if as_command:
        argv = [sys.executable, "-c", code]
    else:
        script = tmp_path / "stopped.py"
        script.write_text(code)
        argv = [sys.executable, str(script)]
    proc = subprocess.Popen(argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        if send_sigint:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    files = trace_files(trace_dir)
    assert len(files) == 1, (files, err)
    return proc.returncode, err, files[0]


def check_finalized(path, err):
    read_finalized(path)  # `[`, events, `]`: nothing cut short
    events = read_trace(path)
    assert events[-1]["name"] == "end", (events[-3:], err)
    assert sum(e["name"] == "before_stop" for e in events) == 100, err
    return events


def test_sigint_finalizes_the_trace(tmp_path, trace_dir):
    rc, err, path = run_until_stopped(tmp_path, trace_dir, RECORD_THEN_WAIT.format(threads="", stop=WAIT_FOREVER))
    assert rc == -signal.SIGINT, err  # the program still dies of SIGINT, as without the tracer
    assert "KeyboardInterrupt" in err
    check_finalized(path, err)


def test_uncaught_keyboard_interrupt_finalizes_the_trace(tmp_path, trace_dir):
    rc, err, path = run_until_stopped(tmp_path, trace_dir,
                                      RECORD_THEN_WAIT.format(threads="", stop="raise KeyboardInterrupt"),
                                      send_sigint=False)
    assert rc == -signal.SIGINT, err
    check_finalized(path, err)


def test_sigint_finalizes_python_dash_c(tmp_path, trace_dir):
    rc, err, path = run_until_stopped(tmp_path, trace_dir, RECORD_THEN_WAIT.format(threads="", stop=WAIT_FOREVER),
                                      as_command=True)
    assert rc == -signal.SIGINT, err
    check_finalized(path, err)


def test_sigint_with_recording_threads_finalizes_the_trace(tmp_path, trace_dir):
    rc, err, path = run_until_stopped(tmp_path, trace_dir,
                                      RECORD_THEN_WAIT.format(threads=RECORDING_THREADS, stop=WAIT_FOREVER))
    assert rc == -signal.SIGINT, err
    events = check_finalized(path, err)
    names = {e["name"] for e in events if e.get("cat") == "worker"}
    assert names == {"daemon0", "daemon1", "daemon2", "finished"}, names
    assert sum(e["name"] == "finished" for e in events) == 50


def test_atexit_handlers_of_the_program_still_record(tmp_path, trace_dir):
    # The package's exit hook is registered at import, so it runs after the
    # handlers the program registers later (atexit runs them last first).
    stop = """
import atexit
def bye():
    with dft_fn("app", "at_exit"):
        pass
atexit.register(bye)
raise KeyboardInterrupt
"""
    rc, err, path = run_until_stopped(tmp_path, trace_dir, RECORD_THEN_WAIT.format(threads="", stop=stop),
                                      send_sigint=False)
    assert rc == -signal.SIGINT, err
    events = check_finalized(path, err)
    assert sum(e["name"] == "at_exit" for e in events) == 1


EARLY_ATEXIT = """
import atexit, os, sys
def bye():
    from dftracer.python import dft_fn
    for _ in range(5):
        with dft_fn("app", "early_at_exit"):
            pass
atexit.register(bye)  # before dftracer is imported: runs after the package's own handler
from dftracer.python import dft_fn
for i in range(100):
    with dft_fn("app", "before_stop"):
        pass
print("ready", flush=True)
{stop}
"""


@pytest.mark.parametrize("stop", ["sys.exit(0)", "raise KeyboardInterrupt"])
def test_atexit_handlers_registered_before_the_import_still_record(tmp_path, trace_dir, stop):
    # Python's atexit runs them after the package's own handler, which used
    # to finalize: their events were lost (not even counted as dropped).
    # The extension finalizes at the end of Py_FinalizeEx now (Py_AtExit).
    rc, err, path = run_until_stopped(tmp_path, trace_dir, EARLY_ATEXIT.format(stop=stop), send_sigint=False)
    assert rc == (0 if stop.startswith("sys") else -signal.SIGINT), err
    events = check_finalized(path, err)
    assert sum(e["name"] == "early_at_exit" for e in events) == 5
