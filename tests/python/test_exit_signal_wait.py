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
import time

import full_pool
from trace_reader import read_trace, trace_files

THEN = """
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGTERM)
for i in range(100):
    print("ran on after the signal", i, flush=True)
    time.sleep(0.05)
"""


def test_code_after_a_self_sent_signal_never_runs_while_the_finalize_is_slow(tmp_path):
    p = full_pool.start(tmp_path, THEN)
    try:
        assert p.stdout.readline() == "ready\n"
        assert not full_pool.catches_sigalrm(p.pid)
        full_pool.wait_for_the_handler(p)  # the program has signalled itself; its handler waits, the finalize drains the pool
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
