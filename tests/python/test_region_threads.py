"""One dft_fn object open on several threads at once (a DFTracerAI node is a
shared singleton: `with node:` or node.start()/stop() from worker threads).
Each thread's exit writes its own event and leaves nothing of it open on its
stack, whatever the other threads did with the object meanwhile.

Each test runs in a fresh interpreter and reads the trace back.
"""
from trace_reader import read_finalized, trace_files

# Thread B opens the shared `r` and waits; thread A opens and closes `r`
# meanwhile, then lets B go on. Each test gives B's code.
SHARED_REGION = """
import os, threading
from dftracer.python import ai, dft_fn, dftracer
r = {region}
b_open = threading.Event()
a_done = threading.Event()

def thread_a():
    b_open.wait()
    with r:
        pass
    a_done.set()
"""

TWO_THREADS = SHARED_REGION + """
log = dftracer.initialize_log({trace_dir!r} + "/t", None, -1)

def thread_b():
{body}

ta = threading.Thread(target=thread_a)
tb = threading.Thread(target=thread_b)
ta.start(); tb.start(); ta.join(); tb.join()
log.finalize()
"""


def _run(run_python, trace_dir, body, region='dft_fn("c", "n")', cat="c"):
    code = TWO_THREADS.format(trace_dir=trace_dir, body=body, region=region)
    run_python(code, env={"DFTRACER_DISABLE_IO": "1"})
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == cat]


def _contains(outer, inner):
    return outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"] and \
        inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_each_thread_writes_its_own_event_of_a_shared_region(run_python, trace_dir):
    # B's event, and the regions B opens inside it and after it, are written
    # and nest under B's event; after B's exit nothing of `r` is open on B:
    # update() then sets sticky args, which B's next event of `r` carries.
    events = _run(run_python, trace_dir, """
    with r:
        b_open.set()
        a_done.wait()
        with dft_fn("c", "inner"):
            pass
    r.update(args={"after": 1})
    with r:
        pass
""")
    names = sorted(e["name"] for e in events)
    assert names == ["inner", "n", "n", "n"], events
    ns = [e for e in events if e["name"] == "n"]
    inner, = [e for e in events if e["name"] == "inner"]
    assert len({e["tid"] for e in ns}) == 2, ns
    b_events = sorted((e for e in ns if e["tid"] == inner["tid"]), key=lambda e: e["ts"])
    assert len(b_events) == 2, ns
    assert _contains(b_events[0], inner), (b_events[0], inner)
    assert (b_events[0].get("args") or {}).get("after") is None, b_events[0]
    assert (b_events[1].get("args") or {}).get("after") == 1, b_events[1]


def test_start_stop_of_a_shared_region_on_two_threads(run_python, trace_dir):
    # Enter and exit called directly (as DFTracerAI's start()/stop() do).
    events = _run(run_python, trace_dir, """
    r.__enter__()
    b_open.set()
    a_done.wait()
    r.__exit__(None, None, None)
""")
    assert sorted(e["name"] for e in events) == ["n", "n"], events
    assert len({e["tid"] for e in events}) == 2, events


def test_a_dft_ai_nodes_start_stop_on_two_threads(run_python, trace_dir):
    # A DFTracerAI node is one object for the whole process: worker threads
    # that open and close it overlap. A uses `with`, B start()/stop().
    fwd = _run(run_python, trace_dir, """
    r.start()
    b_open.set()
    a_done.wait()
    r.stop()
    r.start()
    r.stop()
""", region="ai.compute.forward", cat="compute")
    assert [e["name"] for e in fwd] == ["forward"] * 3, fwd
    assert len({e["tid"] for e in fwd}) == 2, fwd


def test_a_shared_region_freed_after_its_exits_leaves_nothing_open(run_python, trace_dir):
    # After both exits `r` is freed on B; the next dft_fn is made in its
    # memory (free list). Its flush() writes its own event: no entry of the
    # freed `r` is left on B's stack for it to take as its own.
    events = _run(run_python, trace_dir, """
    global r
    r.__enter__()
    b_open.set()
    a_done.wait()
    r.__exit__(None, None, None)
    del r
    f = dft_fn("c", "flushed")
    f.flush()
    del f
""")
    assert sorted(e["name"] for e in events) == ["flushed", "n", "n"], events


CUT_AFTER_SHARED_EXITS = SHARED_REGION + """
ta = threading.Thread(target=thread_a)
ta.start()
with r:  # the main thread is B: the one whose open regions SIGTERM cuts
    b_open.set()
    a_done.wait()
ta.join()
rd, wr = os.pipe()
with dft_fn("c", "blocked"):
    print("ready", flush=True)
    os.read(rd, 1)
"""


def test_sigterm_after_the_shared_exits_cuts_only_what_is_open(tmp_path):
    # Both exits of `r` are done before the signal: the cut writes only the
    # region still open, and `r` twice, each once, not cut.
    from test_signal_cut_regions import start, terminate
    proc, traces = start(tmp_path, CUT_AFTER_SHARED_EXITS.format(region='dft_fn("c", "n")'))
    _, files = terminate(proc, traces, 0.2)
    events = [e for e in read_finalized(files[0]) if e.get("ph") == "X" and e.get("cat") == "c"]
    cut = sorted(e["name"] for e in events if (e.get("args") or {}).get("cut") is True)
    assert cut == ["blocked"], events
    assert sorted(e["name"] for e in events) == ["blocked", "n", "n"], events
