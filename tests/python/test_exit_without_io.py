"""DFTRACER_DISABLE_IO=1 switches the I/O events off, not the end of the
trace: a Python program that ends in os._exit, execs another traced
program, or gives SIGINT the default action itself must leave finalized
files as with I/O tracing on. The hooks that finish the trace where the
image ends (src/capture/io/exit_hooks.c, signal_hooks.c, vfork_hook.c) used to be
installed only with the I/O hooks: os._exit lost the events of the last
flush interval and the `end`.

The flush interval is a minute, so without a finalize every event would
still sit in its buffer.
"""
import os
import signal
import subprocess
import sys
import textwrap

from conftest import _clean_env
from trace_reader import read_finalized, trace_files

PROGRAM = """
import os, signal, subprocess, sys, time
from dftracer.python import dft_fn
for i in range(100):
    with dft_fn("app", "before_end"):
        pass
# A vfork child (subprocess) between: it must not finalize the parent's trace.
subprocess.run(["true"], check=True)
with open("data.txt", "w") as f:
    f.write("x")
print("ready", flush=True)
{end}
"""

ENDS = {
    "os_exit": "os._exit(5)",
    "execv": ("os.execv(sys.executable, [sys.executable, '-c', "
              "'from dftracer.python import dft_fn\\nwith dft_fn(\"app\", \"exec_d\"):\\n    pass'])"),
    "sigint_default": "signal.signal(signal.SIGINT, signal.SIG_DFL)\nos.kill(os.getpid(), signal.SIGINT)\n"
                      "print('ran on after the signal', flush=True)",
}


def run(tmp_path, end):
    traces = tmp_path / "traces"
    traces.mkdir()
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_DISABLE_IO="1", DFTRACER_FLUSH_INTERVAL_MS="60000",
               DFTRACER_LOG_FILE=str(traces / "t"))
    script = tmp_path / "ends.py"
    script.write_text(textwrap.dedent(PROGRAM.format(end=ENDS[end])))
    p = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=120)
    files = {os.path.basename(f): read_finalized(f) for f in trace_files(str(traces))}  # each framed, `end` last
    for name, events in files.items():
        assert events[-1]["name"] == "end", (name, events[-3:], p.stderr)
        assert not [e for e in events if e.get("cat") in ("POSIX", "STDIO")], name  # I/O stays off
    return p, files


def count(files, name):
    return sum(e["name"] == name for events in files.values() for e in events)


def test_os_exit_keeps_every_event(tmp_path):
    p, files = run(tmp_path, "os_exit")
    assert (p.returncode, p.stdout) == (5, "ready\n"), p.stderr
    assert len(files) == 1, list(files)
    assert count(files, "before_end") == 100


def test_exec_finalizes_the_old_image(tmp_path):
    p, files = run(tmp_path, "execv")
    assert (p.returncode, p.stdout) == (0, "ready\n"), p.stderr
    assert len(files) == 2, list(files)  # the exec'd interpreter traces into a file of its own
    assert count(files, "before_end") == 100 and count(files, "exec_d") == 1


def test_sigint_given_its_default_action_finalizes(tmp_path):
    p, files = run(tmp_path, "sigint_default")
    assert (p.returncode, p.stdout) == (-signal.SIGINT, "ready\n"), p.stderr
    assert len(files) == 1, list(files)
    assert count(files, "before_end") == 100
