"""A finalize at SIGTERM that outlasts its 10 s deadline (a pool of a GiB to
drain, a slow parallel file system) ends the process -- of SIGTERM, as
untraced, not of the deadline's SIGALRM ("Alarm clock"), which a batch
system or torchrun would report instead.

The finalize is made to outlast the deadline by stopping the process
(SIGSTOP) shortly after the SIGTERM, while the finalize drains a full
buffer pool of records gzip cannot shrink, and continuing it (SIGCONT) once the deadline has passed: the alarm's
signal is then pending, and the process dies as soon as it runs again.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import _clean_env
from trace_reader import read_trace, trace_files

PROGRAM = """
import os, threading, time
from dftracer.python import dftracer

log = dftracer.get_instance()
# Records the writer formats and compresses slower than they come (gzip
# finds no repeat in its 32 KiB window): the pool stays full.
args = [{"s": os.urandom(1000).hex()} for _ in range(1000)]

def record():
    while True:
        for a in args:
            log.log_event("busy", "app", log.get_time(), 1, string_args=a)

for _ in range(2):
    threading.Thread(target=record, daemon=True).start()
time.sleep(1)  # the pool fills: the finalize has it all to write
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def test_a_finalize_past_its_deadline_still_ends_the_process_of_its_signal(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_BUFFER_SIZE="64M",
               DFTRACER_LOG_FILE=str(tmp_path / "t"))
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        os.kill(p.pid, signal.SIGTERM)
        time.sleep(0.05)  # its handler has run (and set the alarm); the finalize drains the pool
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(11)  # past the 10 s deadline while stopped: not a timing assert
        os.kill(p.pid, signal.SIGCONT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == -signal.SIGTERM, (p.returncode, err)
    # The deadline ended it, not a finalize that completed: the file has no `end`.
    files = trace_files(str(tmp_path))
    assert len(files) == 1, files
    assert "end" not in {e["name"] for e in read_trace(files[0])}
