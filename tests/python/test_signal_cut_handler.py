"""The signal-time cut takes the main thread's open regions in a handler of
a real-time signal on the main thread (so that closing a region needs no
atomic read-modify-write). What must hold whatever the program does with
its signals: regions and traced calls closing while cut are written once,
whether the main thread takes the signal or blocks it (then the stack is
read from the signal thread); a program's own real-time signals -- with a
handler, or blocked and waited for -- stay its own; a main thread that
blocks the real-time signals is still cut."""
import collections
import json
import re
import shutil

import pytest

from test_signal_cut_regions import start, terminate
from trace_reader import read_finalized, read_trace_text

BUSY_CALLS = """
import signal, sys
from dftracer.python import dft_fn

if sys.argv[1:] == ["blocked"]:  # the cut reads the stack from the signal thread
    signal.pthread_sigmask(signal.SIG_BLOCK, range(signal.SIGRTMIN, signal.SIGRTMAX + 1))

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


@pytest.mark.parametrize("signals", ["free", "blocked"])
def test_traced_calls_closing_while_cut_are_written_once(tmp_path, signals):
    for trial in range(3):
        base = tmp_path / f"t{trial}"
        base.mkdir()
        proc, traces = start(base, BUSY_CALLS, [signals])
        # 0.1 s: ~300k events, the thread's 256 KiB chunks filled and handed to
        # the writer dozens of times before the signal (reading them back is
        # what a trial costs).
        _, files = terminate(proc, traces, 0.1)
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


BUSY_REGIONS = """
import os, signal, sys
os.environ["DFTRACER_TIME_RESOLUTION"] = "ns"  # one `ts` a step
from dftracer.python import dft_fn

if sys.argv[1:] == ["blocked"]:
    signal.pthread_sigmask(signal.SIG_BLOCK, range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
step = dft_fn("train", "step")
print("ready", flush=True)
with dft_fn("train", "epoch"):
    while True:
        with step:
            x = sum(range(100))
"""


@pytest.mark.parametrize("signals", ["free", "blocked"])
def test_regions_closing_while_cut_are_written_once(tmp_path, signals):
    # One dft_fn re-entered in a tight loop, each `step` closing a moment
    # after it opened: a `step` open at the signal is written once, cut or
    # whole, though the main thread keeps running until the re-raised
    # SIGTERM ends it. Millions of events: read as text.
    cut_steps = 0
    for trial in range(10):
        base = tmp_path / f"t{trial}"
        base.mkdir()
        proc, traces = start(base, BUSY_REGIONS, [signals])
        _, files = terminate(proc, traces, 0.1)
        lines = read_trace_text(files[0]).split("\n")
        assert lines[-2] == "]", lines[-2:]
        cut = [line for line in lines if '"cut":true' in line]
        assert [json.loads(line)["name"] for line in cut if '"name":"step"' not in line] == ["epoch"], cut
        for line in cut:
            if '"name":"step"' in line:
                cut_steps += 1
                ts = re.search(r'"ts":[0-9.]+,', line).group(0)  # as written: nanosecond decimals
                same = [other for other in lines if ts in other and '"name":"step"' in other]
                assert len(same) == 1, same
        shutil.rmtree(base)
    print("steps cut:", cut_steps)


SIGWAIT = """
import os, signal, sys
from dftracer.python import dft_fn

# The program's own real-time signal: blocked and taken with sigwait, its
# action left at the default (as with sigwaitinfo or a signalfd).
mine = signal.SIGRTMAX
blocked = range(signal.SIGRTMIN, signal.SIGRTMAX + 1) if sys.argv[1:] == ["all"] else {mine}
signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
with dft_fn("c", "work"):
    print("ready", flush=True)
    got = signal.sigwait({mine})
    os.write(2, b"program received signal %d" % got)
"""


@pytest.mark.parametrize("blocked", ["one", "all"])
def test_a_realtime_signal_the_program_waits_for_is_left_alone(tmp_path, blocked):
    # A blocked real-time signal is never the cut's, even at its default
    # action: the program would take it with sigwait as its own.
    proc, traces = start(tmp_path, SIGWAIT, [blocked])
    err, files = terminate(proc, traces, 0.3)
    assert err == ""
    cut = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("args", {}).get("cut") is True]
    assert [e["name"] for e in cut] == ["work"], cut
