"""A traced call open on the main thread when a SIGTERM's cut freezes its
stack (no real-time signal free: the signal thread reads the stack itself)
returns while the process finalizes. The frozen stack keeps the call's
entry, which names its owner (the dft_fn that decorated it): the owner must
then be counted as having an entry open (`pushed`), as a region's owner is,
so that freeing it keeps its memory, which no entry may name once freed.
It was not counted: the freed owner went back to the free list, and the
next dft_fn took its address.

Seen from Python: after the call returns and its owner is dropped, a new
dft_fn gets the owner's address only if the owner was really freed. The
program finds the moment the stack froze by itself: it keeps one region
open at all times, closing and freeing each after the next opens; the first
one closed after the freeze is kept allocated (that part was right before).
The program prints its verdict before the signal's re-raise ends it; a run
in which it was not scheduled in that window prints nothing and is retried.
"""
import os
import signal
import subprocess
import sys
import textwrap

from conftest import _clean_env
from trace_reader import read_finalized, trace_files

PROGRAM = """
import os, signal, sys
from dftracer.python import dft_fn
signal.pthread_sigmask(signal.SIG_BLOCK, range(signal.SIGRTMIN, signal.SIGRTMAX + 1))

def until_frozen():
    prev = dft_fn("app", "rolling")
    prev.__enter__()
    announced = False
    while True:
        cur = dft_fn("app", "rolling")
        cur.__enter__()
        a = id(prev)
        prev.__exit__(None, None, None)
        del prev
        if id(dft_fn("app")) != a:
            return
        if not announced:
            os.write(1, b"ready\\n")
            announced = True
        prev = cur

# The free list hands the last freed object out first.
probe = dft_fn("app")
a = id(probe)
del probe
assert id(dft_fn("app")) == a
owner = dft_fn("app")
call = owner.log(until_frozen)
call()
a = id(owner)
del call, owner
os.write(1, b"owner kept\\n" if id(dft_fn("app")) != a else b"owner freed\\n")
while True:
    pass
"""


def run_once(tmp_path, attempt):
    traces = tmp_path / f"traces{attempt}"
    traces.mkdir()
    script = tmp_path / "frozen.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = _clean_env()
    env.update(DFTRACER_ENABLE="1", DFTRACER_FLUSH_INTERVAL_MS="60000", DFTRACER_LOG_FILE=str(traces / "t"))
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == -signal.SIGTERM, err
    files = trace_files(str(traces))
    assert len(files) == 1, files
    events = read_finalized(files[0])
    assert events[-1]["name"] == "end"
    return out.strip()


def test_a_traced_call_kept_by_a_frozen_stack_keeps_its_owner_allocated(tmp_path):
    verdicts = []
    for attempt in range(5):
        verdict = run_once(tmp_path, attempt)
        if verdict:
            verdicts.append(verdict)
            break
    assert verdicts == ["owner kept"], verdicts
