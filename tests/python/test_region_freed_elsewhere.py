"""A dft_fn started on one thread (`__enter__()`, as start() does, never exited) and
freed on another: the started event is dropped, as when it is freed on the
thread that started it, and nothing of the freed object stays in use on the
starting thread -- not for a dft_fn made later in its memory, not for the
SIGTERM cut, not as a slot of its open stack.

Each test runs in a fresh interpreter and reads the trace back.
"""
from trace_reader import read_finalized, trace_files

# B starts each dft_fn of `box` and drops its own reference; A then empties
# `box`, so that every one of them is freed on A. B's code follows `freed.wait()`.
ABANDONED_ON_B = """
import threading
from dftracer.python import dft_fn, dftracer
box = []
started = threading.Event()
freed = threading.Event()

def thread_a():
    started.wait()
    box.clear()  # the last references: freed here
    freed.set()

def start_and_leave(n):
    for _ in range(n):
        box.append(dft_fn("c", "abandoned"))
        box[-1].__enter__()  # started, never exited
    started.set()
"""

TWO_THREADS = ABANDONED_ON_B + """
log = dftracer.initialize_log({trace_dir!r} + "/t", None, -1)

def thread_b():
    start_and_leave({n})
    freed.wait()
{body}

ta = threading.Thread(target=thread_a)
tb = threading.Thread(target=thread_b)
ta.start(); tb.start(); ta.join(); tb.join()
log.finalize()
"""


def _events(run_python, trace_dir, body, n=1):
    run_python(TWO_THREADS.format(trace_dir=trace_dir, body=body, n=n), env={"DFTRACER_DISABLE_IO": "1"})
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == "c"]


def test_a_dft_fn_made_after_it_does_not_take_its_event(run_python, trace_dir):
    # The next dft_fn may be made in the freed one's memory (free list):
    # its flush() writes its own event, from its own start.
    events = _events(run_python, trace_dir, """
    f = dft_fn("c", "flushed")
    f.flush()
    del f
    with dft_fn("c", "after"):
        pass
""")
    assert sorted(e["name"] for e in events) == ["after", "flushed"], events


def test_regions_left_open_by_freed_objects_do_not_fill_the_stack(run_python, trace_dir):
    # More than the open stack holds (256), each freed on A. B's next region
    # is still tracked on B's stack: update() inside it adds args to that
    # event only, not sticky args to the next one.
    events = _events(run_python, trace_dir, """
    r = dft_fn("c", "r")
    with r:
        r.update(args={"inside": 1})
    with r:
        pass
""", n=300)
    rs = sorted((e for e in events if e["name"] == "r"), key=lambda e: e["ts"])
    assert len(rs) == 2 and not [e for e in events if e["name"] != "r"], events
    assert (rs[0].get("args") or {}).get("inside") == 1, rs[0]
    assert (rs[1].get("args") or {}).get("inside") is None, rs[1]


CUT_AFTER_FREE = ABANDONED_ON_B + """
import os
ta = threading.Thread(target=thread_a)
ta.start()
start_and_leave(1)  # the main thread is B: the one whose open regions SIGTERM cuts
freed.wait()
ta.join()
rd, wr = os.pipe()
with dft_fn("c", "blocked"):
    print("ready", flush=True)
    os.read(rd, 1)
"""


def test_sigterm_cuts_only_what_is_still_open(tmp_path):
    # (Where the cut reads the main thread's stack from another thread --
    # no free real-time signal -- it does not read the freed object, and
    # writes its entry cut.)
    from test_signal_cut_regions import start, terminate
    proc, traces = start(tmp_path, CUT_AFTER_FREE)
    _, files = terminate(proc, traces, 0.2)
    events = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == "c"]
    assert [e["name"] for e in events] == ["blocked"], events
    assert (events[0].get("args") or {}).get("cut") is True, events
