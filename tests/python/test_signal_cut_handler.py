"""The signal-time cut takes the main thread's open regions in a handler of
a real-time signal on the main thread (so that closing a region needs no
atomic read-modify-write). What must hold whatever the program does with
its signals: traced calls closing while cut are written once; a program's
own real-time handlers stay its own; a main thread that blocks the
real-time signals is still cut (read from the signal thread)."""
import collections

import pytest

from test_signal_cut_regions import start, terminate
from trace_reader import read_finalized

BUSY_CALLS = """
import sys
from dftracer.python import dft_fn

sys.setrecursionlimit(10000)
region = dft_fn("busy")
DEPTH = 150

def make(i):
    def level(depth):
        if depth + 1 < DEPTH:
            fns[depth + 1](depth + 1)
    level.__name__ = level.__qualname__ = "call%d" % i
    return region.log(level)

fns = [make(i) for i in range(DEPTH)]
print("ready", flush=True)
while True:
    fns[0](0)
"""


def test_traced_calls_closing_while_cut_are_written_once(tmp_path):
    for trial in range(3):
        base = tmp_path / f"t{trial}"
        base.mkdir()
        proc, traces = start(base, BUSY_CALLS)
        _, files = terminate(proc, traces, 0.3)
        busy = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == "busy"]
        seen = collections.Counter((e["name"], e["ts"]) for e in busy)
        twice = [k for k, n in seen.items() if n > 1]
        assert not twice, twice[:5]
        cut = [e for e in busy if e.get("args", {}).get("cut") is True]
        assert all(e["name"].startswith("call") for e in busy)
        # The cut entries are the ones open at the signal: call0 .. callK.
        names = sorted(int(e["name"][4:]) for e in cut)
        assert names == list(range(len(names))), names


OWN_HANDLER = """
import os, signal, sys
from dftracer.python import dft_fn

for sig in range(signal.SIGRTMIN, signal.SIGRTMAX + 1):
    signal.signal(sig, lambda s, f: os.write(2, b"program handler ran"))
if sys.argv[1:] == ["one-free"]:
    signal.signal(signal.SIGRTMIN, signal.SIG_DFL)
r, w = os.pipe()
with dft_fn("train", "epoch"):
    print("ready", flush=True)
    os.read(r, 1)
"""


@pytest.mark.parametrize("free", ["one-free", "none-free"])
def test_a_programs_own_realtime_handlers_are_left_alone(tmp_path, free):
    # One real-time signal left at its default: the cut uses it. None: the
    # cut reads the stack from the signal thread. Never the program's.
    proc, traces = start(tmp_path, OWN_HANDLER, [free])
    err, files = terminate(proc, traces, 0.5)
    assert err == ""
    cut = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("args", {}).get("cut") is True]
    assert [e["name"] for e in cut] == ["epoch"], cut


BLOCKED = """
import os, signal
from dftracer.python import dft_fn

signal.pthread_sigmask(signal.SIG_BLOCK, range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
r, w = os.pipe()
with dft_fn("train", "epoch"):
    with dft_fn("comm", "all_reduce"):
        print("ready", flush=True)
        os.read(r, 1)
"""


def test_a_main_thread_that_blocks_realtime_signals_is_still_cut(tmp_path):
    proc, traces = start(tmp_path, BLOCKED)
    err, files = terminate(proc, traces, 0.5)
    assert err == ""
    cut = {e["name"]: e for e in read_finalized(files[0])
           if e.get("ph") == "X" and e.get("args", {}).get("cut") is True}
    assert set(cut) == {"epoch", "all_reduce"}, sorted(cut)
    assert cut["epoch"]["tid"] == proc.pid
