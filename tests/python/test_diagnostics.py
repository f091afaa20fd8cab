"""The tracer's one diagnostics channel: Python warnings go through the
core's dft_warn, in the same format and under the same DFTRACER_LOG_LEVEL as
the C++ side's."""
import subprocess
import sys

from conftest import _clean_env
from test_io_signals import preload_library

WARN = """
from dftracer.python.diagnostics import warn
warn("something odd happened")
"""


def test_warn_is_one_line_in_the_core_format(run_python):
    proc = run_python(WARN)
    assert proc.stderr.splitlines() == ["[dftracer] warning: something odd happened"]


def test_warn_obeys_the_core_log_level(run_python):
    proc = run_python(WARN, env={"DFTRACER_LOG_LEVEL": "error", "DFTRACER_ENABLE": "1",
                                 "DFTRACER_LOG_FILE": "traces/t"})
    assert "something odd happened" not in proc.stderr


def test_eager_env_warning_uses_the_same_channel(run_python):
    proc = run_python("import torch, dftracer.python", env={"DFTRACER_TRACE_EAGER": "sometimes"})
    lines = [l for l in proc.stderr.splitlines() if "DFTRACER_TRACE_EAGER" in l]
    assert len(lines) == 1 and lines[0].startswith("[dftracer] warning: "), proc.stderr


# A program that closed 0-2 and then opened its data files got them as 0-2;
# the writer's warning about dropped events (32 threads on 16 chunks) used to
# be written into the one at 2. Under PRELOAD, recording the program's own
# writes; a stderr put on 2 with os.dup2 gets the warning.
CLOSED_STDIO = r"""
import os, sys, threading
redirect = sys.argv[1] == "dup2"
for fd in (0, 1, 2):
    os.close(fd)
fds = [os.open(f"data{i}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for i in range(3)]
assert fds == [0, 1, 2], fds
if redirect:
    log = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 2)
barrier = threading.Barrier(32)
def work(k):
    fd = os.open(f"t{k}.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x")
    barrier.wait()  # every thread holds a chunk, or drops, at once
    for _ in range(20):
        os.write(fd, b"x")
    os.close(fd)
threads = [threading.Thread(target=work, args=(k,)) for k in range(32)]
for t in threads: t.start()
for t in threads: t.join()
for fd in (0, 1) if redirect else (0, 1, 2):
    os.write(fd, b"data\n")
"""


def test_a_warning_never_lands_in_a_data_file_that_took_descriptor_two(tmp_path):
    for how in ("closed", "dup2"):
        data = tmp_path / how
        data.mkdir()
        env = _clean_env()
        env.update(DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD", LD_PRELOAD=preload_library(),
                   DFTRACER_LOG_FILE=str(tmp_path / how / "traces" / "t"), DFTRACER_DATA_DIR=str(data),
                   DFTRACER_BUFFER_SIZE="64K", DFTRACER_CHUNK_SIZE="4K")
        p = subprocess.run([sys.executable, "-c", CLOSED_STDIO, how], cwd=str(data), env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (how, p.stderr)
        assert p.stderr == ""  # the program closed the test's stderr
        for i in range(3 if how == "closed" else 2):
            assert (data / f"data{i}.txt").read_text() == "data\n", (how, i)
        if how == "dup2":
            assert "dropping events" in (data / "stderr.txt").read_text()
