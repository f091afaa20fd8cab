"""SIGTERM while a region is open: torchrun terminates the surviving ranks
while one is blocked in a collective, and the open `train_step` is the main
evidence of where it was. At the signal the tracer writes the main thread's
open regions and traced calls, from their start to the signal, marked
"cut": true, then finalizes and the process dies of the signal as before.
Regions already closed are written once, as usual; another thread's open
regions are not cut."""
import collections
import os
import signal
import subprocess
import sys
import textwrap
import time

from trace_reader import read_finalized, trace_files

PROGRAM = """
import os, sys, threading, time
from dftracer.python import dft_fn

train = dft_fn("train")

@train.log
def train_step(step):
    with dft_fn("comm", "all_reduce"):
        # Blocked, the GIL released, as in a collective that never returns.
        os.read(r, 1)

def other_thread():
    with dft_fn("worker", "other_open"):
        os.read(r2, 1)

r, w = os.pipe()
r2, w2 = os.pipe()
threading.Thread(target=other_thread, daemon=True).start()
with dft_fn("train", "epoch"):
    for step in range(3):
        if step < 2:
            with dft_fn("train", "finished_step"):
                pass
            continue
        print("ready", flush=True)
        train_step(step)
"""


def start(tmp_path, program, argv=()):
    """Starts `program` (with `argv`) traced to tmp_path/traces (no timed
    flush: only the finalize writes); returns (process, trace dir) once it
    printed "ready"."""
    traces = tmp_path / "traces"
    traces.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(traces / "t"), DFTRACER_FLUSH_INTERVAL_MS="60000")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(program))
    proc = subprocess.Popen([sys.executable, str(script), *argv], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        raise AssertionError(proc.stderr.read())
    return proc, traces


def terminate(proc, traces, delay):
    """SIGTERM to `proc` after `delay` s; returns (its stderr, its one trace
    file in a list) once it died of the signal."""
    try:
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM, err
    files = trace_files(str(traces))
    assert len(files) == 1, files
    return err, files


def test_sigterm_writes_the_main_threads_open_regions_as_cut(tmp_path):
    proc, traces = start(tmp_path, PROGRAM)
    # 0.5 s: the main thread is past "ready" and into the blocking read
    err, files = terminate(proc, traces, 0.5)
    assert err == ""
    events = read_finalized(files[0])
    complete = [e for e in events if e.get("ph") == "X"]
    cut = {e["name"]: e for e in complete if e.get("args", {}).get("cut") is True}
    assert set(cut) == {"epoch", "train_step", "all_reduce"}, sorted(cut)
    assert cut["epoch"]["cat"] == cut["train_step"]["cat"] == "train" and cut["all_reduce"]["cat"] == "comm"
    for e in cut.values():
        assert e["tid"] == proc.pid, e  # the main thread's, not the signal thread's
    # Nested as they were open: epoch holds train_step holds all_reduce, all
    # ending at the signal.
    ends = {n: e["ts"] + e["dur"] for n, e in cut.items()}
    assert cut["epoch"]["ts"] <= cut["train_step"]["ts"] <= cut["all_reduce"]["ts"]
    assert max(ends.values()) - min(ends.values()) < 10_000, ends
    assert cut["all_reduce"]["dur"] >= 400_000  # blocked ~0.5 s before the signal
    finished = [e for e in complete if e["name"] == "finished_step"]
    assert len(finished) == 2 and not any("cut" in e.get("args", {}) for e in finished)
    assert not any(e["name"] == "other_open" for e in complete)


FORKED = """
import os, signal, sys, warnings
from dftracer.python import dft_fn

r, w = os.pipe()
with dft_fn("train", "epoch"):
    # Python >= 3.12 warns (DeprecationWarning, shown in __main__) at a fork
    # in a process with threads: the core's signal thread is one.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        with dft_fn("train", "child_step"):
            print("ready", flush=True)
            os.read(r, 1)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_a_forked_child_cuts_only_its_own_regions(tmp_path):
    # The child inherits a copy of the parent's open `epoch`: its trace gets
    # only the region it opened itself.
    proc, traces = start(tmp_path, FORKED)
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            child = int(f.read().split()[0])
        os.kill(child, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == "", err
    by_pid = {}
    for path in trace_files(str(traces)):
        events = read_finalized(path)
        by_pid[int(path.rsplit("-", 1)[1].split(".")[0])] = events
    assert set(by_pid) == {proc.pid, child}, sorted(by_pid)
    cut = [e["name"] for e in by_pid[child] if e.get("ph") == "X" and e.get("args", {}).get("cut") is True]
    assert cut == ["child_step"], cut
    parent = [e for e in by_pid[proc.pid] if e.get("ph") == "X" and e.get("cat") == "train"]
    assert [e["name"] for e in parent] == ["epoch"] and "cut" not in parent[0].get("args", {}), parent


BUSY = """
import sys
from dftracer.python import dft_fn

sys.setrecursionlimit(10000)
regions = [dft_fn("busy", "level%d" % i) for i in range(200)]

def nest(i):
    if i == len(regions):
        return
    with regions[i]:
        nest(i + 1)

print("ready", flush=True)
while True:
    nest(0)
"""


def test_regions_closing_while_cut_are_written_once(tmp_path):
    # The main thread keeps opening and closing 200 nested regions while the
    # signal thread cuts the open ones: each region is written by the cut or
    # by its own exit, never both, and every cut is a whole entry.
    for trial in range(3):
        base = tmp_path / f"t{trial}"
        base.mkdir()
        proc, traces = start(base, BUSY)
        # 0.1 s: ~300k events, the thread's 256 KiB chunks filled and handed to
        # the writer dozens of times before the signal (reading them back is
        # what a trial costs).
        _, files = terminate(proc, traces, 0.1)
        busy = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == "busy"]
        seen = collections.Counter((e["name"], e["ts"]) for e in busy)
        twice = [k for k, n in seen.items() if n > 1]
        assert not twice, twice[:5]
        for e in busy:
            assert e["name"].startswith("level"), e
