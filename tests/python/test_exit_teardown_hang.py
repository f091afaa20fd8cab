"""A Python program whose interpreter teardown hangs after its atexit
handlers (a __del__ that blocks, a process group's destructor) and is then
SIGKILLed keeps what it recorded: the package's atexit handler writes it to
the file before the teardown (the trace's finalize comes later, at the end of
Py_FinalizeEx, which this program never reaches). With a flush interval of a
minute nothing else would have written it."""
import os
import signal
import subprocess
import sys
import textwrap

from conftest import _clean_env
from trace_reader import read_trace, trace_files

PROGRAM = """
import sys, time
import dftracer
from dftracer.python import dft_fn
for i in range(100):
    with dft_fn("app", "work"):
        pass
class Hang:
    def __del__(self):
        sys.stdout.write("teardown\\n")
        sys.stdout.flush()
        time.sleep(1000)
h = Hang()
print("main done", flush=True)
"""


def test_what_was_recorded_is_on_disk_before_a_teardown_that_hangs(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_LOG_FILE=str(tmp_path / "t"))
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "main done\n"
        assert p.stdout.readline() == "teardown\n"  # past the atexit handlers, hanging
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -signal.SIGKILL
    files = trace_files(str(tmp_path))
    assert len(files) == 1, files
    events = read_trace(files[0])
    assert len([e for e in events if e["name"] == "work"]) == 100
