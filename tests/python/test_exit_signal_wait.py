"""A signal the program sends itself ends it inside that call, also when the
finalize outlasts the handler's first wait: the handler waits on while the
writer makes progress and then dies of the signal in any case. It used to
give up after 2 s and return, and the code after os.kill ran on until the
signal thread had finished.

The finalize is made to outlast 2 s by stopping the process (SIGSTOP) for
3 s while it drains a full pool of records gzip cannot shrink (as in
test_exit_deadline.py); that is below the 10 s deadline, so the finalize
completes and the file ends with its `end` event."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import _clean_env
from trace_reader import read_trace, trace_files

PROGRAM = """
import os, signal, threading, time
from dftracer.python import dftracer

log = dftracer.get_instance()
args = [{"s": os.urandom(1000).hex()} for _ in range(1000)]

def record():
    while True:
        for a in args:
            log.log_event("busy", "app", log.get_time(), 1, string_args=a)

for _ in range(2):
    threading.Thread(target=record, daemon=True).start()
time.sleep(1)  # the pool fills: the finalize has it all to write
print("ready", flush=True)
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGTERM)
for i in range(100):
    print("ran on after the signal", i, flush=True)
    time.sleep(0.05)
"""


def test_code_after_a_self_sent_signal_never_runs_while_the_finalize_is_slow(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_BUFFER_SIZE="64M",
               DFTRACER_LOG_FILE=str(tmp_path / "t"))
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        time.sleep(0.25)  # the program has signalled itself; its handler waits, the finalize drains the pool
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(3)  # past the handler's first 2 s wait, below the 10 s deadline: not a timing assert
        os.kill(p.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -signal.SIGTERM, (p.returncode, err[-2000:])
    assert "ran on" not in out, out
    files = trace_files(str(tmp_path))
    assert len(files) == 1, files
    assert read_trace(files[0])[-1]["name"] == "end"
