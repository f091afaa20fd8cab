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
import time

import full_pool
from trace_reader import read_trace, trace_files

THEN = """
while True:
    time.sleep(1)
"""


def test_a_finalize_past_its_deadline_still_ends_the_process_of_its_signal(tmp_path):
    p = full_pool.start(tmp_path, THEN)
    try:
        assert p.stdout.readline() == "ready\n"
        assert not full_pool.catches_sigalrm(p.pid)
        os.kill(p.pid, signal.SIGTERM)
        full_pool.wait_for_the_handler(p)  # the alarm is set; the finalize drains the pool
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
