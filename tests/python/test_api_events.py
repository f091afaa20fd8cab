"""pydftracer-compatible API: what each call writes to the trace file.

Every test runs its code in a fresh interpreter (tracing state is per
process), then reads the file back with trace_reader and checks names,
categories, args and nesting.
"""
import json
import os

from trace_reader import complete_events, read_finalized, read_trace, read_trace_text, trace_files

PRELUDE = """
import os, sys
from dftracer.python import dftracer, dft_fn
TRACE_DIR = os.environ["TRACE_DIR"]
log = dftracer.initialize_log(os.path.join(TRACE_DIR, "t.pfw"), None, -1)
"""


def run_traced(run_python, trace_dir, body, env=None):
    e = {"TRACE_DIR": trace_dir}
    e.update(env or {})
    proc = run_python(PRELUDE + body + "\nlog.finalize()\n", env=e)
    files = trace_files(trace_dir)
    assert len(files) == 1, (files, proc.stderr)
    return files[0], read_trace(files[0]), proc


def by_name(events, name):
    return [e for e in events if e.get("name") == name]


def contains(outer, inner):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def test_context_manager_decorator_and_nesting(run_python, trace_dir):
    path, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("compute")

@fn.log
def inner(x):
    return x + 1

with dft_fn("train", "outer", epoch=2):
    assert inner(1) == 2
""")
    assert os.path.basename(path).startswith("t-") and path.endswith(".pfw.gz")
    outer, = by_name(events, "outer")
    call, = by_name(events, "inner")
    assert outer["cat"] == "train" and outer["ph"] == "X"
    assert outer["args"]["epoch"] == 2
    assert call["cat"] == "compute"
    assert contains(outer, call)
    assert outer["tid"] == call["tid"] and outer["pid"] == call["pid"] == int(path.split("-")[-1].split(".")[0])
    assert "hhash" not in call.get("args", {})  # DFTRACER_INC_METADATA unset, as pydftracer


def test_decorator_names_methods_and_captured_params(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("m")

class Trainer:
    def __init__(self):
        self.epoch = 4

    @fn.log
    def step_once(self, step, image_idx=9):
        return step

    @fn.log_static
    @staticmethod
    def helper():
        return 1

    @classmethod
    @fn.log
    def build(cls):
        return cls

@fn.log(name="custom")
def named():
    pass

t = Trainer()
assert t.step_once(3) == 3
assert t.step_once(step=5, image_idx=1) == 5
assert Trainer.helper() == 1 and t.helper() == 1
assert Trainer.build() is Trainer
named()
""")
    calls = by_name(events, "Trainer.step_once")
    assert [c["args"]["step"] for c in calls] == [3, 5]
    assert [c["args"]["image_idx"] for c in calls] == [9, 1]
    assert all(c["args"]["epoch"] == 4 for c in calls)  # attribute of self
    assert len(by_name(events, "Trainer.helper")) == 2
    assert len(by_name(events, "Trainer.build")) == 1
    assert len(by_name(events, "custom")) == 1


def test_wrapper_looks_like_the_function(run_python, trace_dir):
    run_traced(run_python, trace_dir, """
import functools, inspect, pickle
fn = dft_fn("w")

@fn.log
def documented(a, b=2):
    "Doc string."
    return a + b

assert documented.__name__ == "documented"
assert documented.__doc__ == "Doc string."
assert documented.__wrapped__.__name__ == "documented"
assert str(inspect.signature(documented)) == "(a, b=2)"
assert pickle.loads(pickle.dumps(documented)) is documented
assert documented(1) == 3 and documented(1, b=5) == 6
""")


def test_exception_propagates_and_event_is_written(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("err")

@fn.log
def boom():
    raise KeyError("x")

try:
    boom()
except KeyError:
    pass
else:
    raise SystemExit("exception swallowed")
try:
    with dft_fn("err", "block"):
        raise ValueError("y")
except ValueError:
    pass
""")
    assert len(by_name(events, "boom")) == 1
    assert len(by_name(events, "block")) == 1


def test_iter_events_per_iteration(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("loop")
seen = [x for x in fn.iter(range(4))]
assert seen == [0, 1, 2, 3]
for x in fn.iter(["a", "b", "c"], name="early", iter_name="batch"):
    if x == "b":
        break
""")
    fetch = by_name(events, "loop.iter")
    body = by_name(events, "loop.yield")
    assert [e["args"]["step"] for e in fetch] == [1, 2, 3, 4]
    assert [e["args"]["step"] for e in body] == [1, 2, 3, 4]
    assert all(e["cat"] == "loop" for e in fetch + body)
    # the loop left early still closes the body event of its last item
    assert [e["args"]["batch"] for e in by_name(events, "early.yield")] == [1, 2]


def test_generator_function_one_event_per_resumption(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("gen")

@fn.log
def produce(n):
    for i in range(n):
        yield i * 2
    return "done"

assert list(produce(3)) == [0, 2, 4]
g = produce(5)
next(g)
g.close()
""")
    # 3 items + the resumption that finishes, then 1 item for the closed one
    assert len(by_name(events, "produce")) == 5


def test_update_attaches_args_to_current_event(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
fn = dft_fn("u")

@fn.log
def work(n):
    fn.update(args={"items": n})
    return n

with dft_fn("u", "block") as region:
    region.update(step=7, args={"file": "a.bin", "ok": True})
work(3)
fn.update(epoch=11)        # nothing open: sticks to later events of fn
work(4)
with fn:
    pass
""")
    block, = by_name(events, "block")
    assert block["args"]["step"] == 7 and block["args"]["file"] == "a.bin" and block["args"]["ok"] is True
    first, second = by_name(events, "work")
    assert first["args"]["items"] == 3 and "epoch" not in first["args"]
    assert second["args"]["items"] == 4 and second["args"]["epoch"] == 11


def test_pydftracer_flush_and_reset(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
import time
f = dft_fn("p", "manual")   # the constructor starts the clock (pydftracer)
time.sleep(0.002)
f.flush()
f.flush()                   # already written: no second event
with dft_fn("p", "early") as g:
    g.flush()
""")
    manual = by_name(events, "manual")
    assert len(manual) == 1 and manual[0]["dur"] >= 1000
    assert len(by_name(events, "early")) == 1


def test_log_event_microseconds_args_and_metadata(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
import math
t = log.get_time()
assert isinstance(t, int) and t > 1_600_000_000_000_000
# args= (ours, keyword-only): any values; the 5th positional is pydftracer's int_args
log.log_event("read", "io", t, 250, args={"size": 4096, "path": "/x", "ratio": 0.5, "hit": False,
                                          "shape": (2, 3), 7: "seven", "big": 2**70, "nan": math.nan})
log.log_event("typed", "io", t, 1, int_args={"fd": 3}, string_args={"mode": "r"})
log.log_metadata_event("model", "resnet50")
log.log_metadata_event("layers", 50)
""")
    read, = by_name(events, "read")
    t_us = read["ts"]
    assert read["cat"] == "io" and read["dur"] == 250
    a = read["args"]
    assert a["size"] == 4096 and a["path"] == "/x" and a["ratio"] == 0.5 and a["hit"] is False
    assert a["shape"] == "(2, 3)" and a["7"] == "seven"  # other values / keys: str()
    assert a["big"] == str(2**70) and a["nan"] is None
    typed, = by_name(events, "typed")
    assert typed["args"]["fd"] == 3 and typed["args"]["mode"] == "r" and typed["ts"] == t_us
    # pydftracer's form: every one named "CM" (custom metadata), the key in args.name.
    meta = [e for e in events if e.get("ph") == "M" and e["name"] == "CM"]
    assert {(e["args"]["name"], e["args"]["value"]) for e in meta} == {("model", "resnet50"), ("layers", "50")}
    assert all(e["cat"] == "dftracer" for e in meta)
    assert not [e for e in events if e["name"] in ("model", "layers")]


def test_finalize_twice_log_after_finalize_gives_a_finalized_file(run_python, trace_dir):
    path, events, proc = run_traced(run_python, trace_dir, """
fn = dft_fn("f")
with fn:
    pass
log.finalize()
log.finalize()
with dft_fn("f", "after"):
    pass
log.log_event("after2", "f", log.get_time(), 1)
@fn.log
def late():
    return 5
assert late() == 5
assert late() == 5
log.log_metadata_event("late_key", "v")
# Every one of those calls is counted, as the C API counts its own: the
# region, log_event, late() twice, the metadata event.
from dftracer import _core
assert _core.stats()["events_after_finalize"] == 5, _core.stats()
""")
    read_finalized(path)  # [, one object a line, ]
    assert not by_name(events, "after") and not by_name(events, "after2") and not by_name(events, "late")
    assert by_name(events, "end")


def test_non_finite_floats_in_args_are_written_as_null(run_python, trace_dir):
    # JSON has no NaN or Infinity: such args are written as null, never raised.
    path, events, _ = run_traced(run_python, trace_dir, """
nan, inf = float("nan"), float("inf")
with dft_fn("f", "region", epoch=nan) as r:
    r.update(args={"loss": inf})
fn = dft_fn("f", step=-inf)
@fn.log
def step():
    return 1
assert step() == 1
log.log_event("logged", "f", log.get_time(), 1, {"loss": nan}, float_args={"lr": -inf})
""")
    read_finalized(path)
    assert by_name(events, "region")[0]["args"]["epoch"] is None
    assert by_name(events, "region")[0]["args"]["loss"] is None
    assert by_name(events, "step")[0]["args"]["step"] is None
    logged = by_name(events, "logged")[0]["args"]
    assert logged["loss"] is None and logged["lr"] is None


def test_bad_input_gives_clear_errors_and_never_a_corrupt_file(run_python, trace_dir):
    path, events, _ = run_traced(run_python, trace_dir, r'''
def expect(exc, fn, text):
    try:
        fn()
    except exc as e:
        assert "dftracer" in str(e) and text in str(e), str(e)
    else:
        raise SystemExit(f"no {exc.__name__} for {text}")

expect(TypeError, lambda: log.log_event(123, "c", 0, 1), "name must be a str")
expect(TypeError, lambda: log.log_event("n", None, 0, 1), "cat must be a str")
expect(ValueError, lambda: log.log_event("n", "c", 0, -1), "duration")
expect(TypeError, lambda: log.log_event("n", "c", "now", 1), "start_time")
expect(TypeError, lambda: log.log_event("n", "c", 0, 1, args=[1, 2]), "args must be a dict")
expect(TypeError, lambda: dft_fn(42), "cat must be a str")
expect(TypeError, lambda: dft_fn("c", name=3.5), "name must be a str")
expect(TypeError, lambda: dft_fn("c").log(name=7)(lambda: 0), "name must be a str")
expect(TypeError, lambda: dft_fn("c").log(5), "needs a function")
expect(TypeError, lambda: dft_fn("c", "n").update(args=[1]), "takes a dict")

class Unprintable:
    def __str__(self):
        raise RuntimeError("no")

log.log_event('we"ird\nname', "c\\at", log.get_time(), 1, {"obj": Unprintable(), "q": 'a"b'})
with dft_fn("c", "x") as r:
    r.update(args={"obj": Unprintable()})
''')
    read_finalized(path)
    weird, = by_name(events, 'we"ird\nname')
    assert weird["cat"] == "c\\at" and weird["args"]["obj"] == "<unprintable Unprintable>"
    assert weird["args"]["q"] == 'a"b'
    assert by_name(events, "x")[0]["args"]["obj"] == "<unprintable Unprintable>"


def test_threads_each_get_their_tid_and_lose_nothing(run_python, trace_dir):
    _, events, _ = run_traced(run_python, trace_dir, """
import threading
fn = dft_fn("thr")

@fn.log
def work(i):
    return i

def body(k):
    for i in range(500):
        with dft_fn("thr", f"t{k}"):
            work(i)

threads = [threading.Thread(target=body, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
""")
    tids = set()
    for k in range(8):
        mine = by_name(events, f"t{k}")
        assert len(mine) == 500
        assert len({e["tid"] for e in mine}) == 1
        tids |= {e["tid"] for e in mine}
    assert len(tids) == 8
    assert len(by_name(events, "work")) == 8 * 500


def test_uncompressed_when_asked_and_env_prefix(run_python, trace_dir):
    prefix = os.path.join(trace_dir, "envrun")
    run_python("""
import dftracer._core as core
assert core.enabled()          # started on import, from the environment
from dftracer.python import dft_fn
with dft_fn("env", "on_import"):
    pass
""", env={"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": prefix, "DFTRACER_TRACE_COMPRESSION": "0"})
    files = trace_files(trace_dir)
    assert len(files) == 1 and files[0].endswith(".pfw") and os.path.basename(files[0]).startswith("envrun-")
    read_finalized(files[0])  # finalized at exit
    assert len(by_name(read_trace(files[0]), "on_import")) == 1


def started_from_env(trace_dir):
    """Environment in which importing dftracer starts tracing to
    trace_dir/fromenv-*; the snippet's initialize_log() asks for TRACE_DIR/asked."""
    return {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "fromenv"),
            "TRACE_DIR": trace_dir}


def test_initialize_log_after_env_start_moves_to_the_asked_file(run_python, trace_dir):
    run_python("""
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "asked.pfw"), None, -1)
with dft_fn("c", "e"):
    pass
log.finalize()
""", env=started_from_env(trace_dir))
    files = trace_files(trace_dir)
    assert [os.path.basename(f).split("-")[0] for f in files] == ["asked"]
    assert len(by_name(read_trace(files[0]), "e")) == 1


def test_initialize_log_after_env_start_leaves_nothing_of_the_empty_file(run_python, trace_dir):
    # The dropped file is a .pfw.gz: its member index goes with it.
    run_python("""
import os
from dftracer.python import dftracer
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "asked.pfw"), None, -1)
log.finalize()
""", env=started_from_env(trace_dir))
    left = sorted(os.listdir(trace_dir))
    assert not [f for f in left if f.startswith("fromenv")], left
    assert [f.split("-")[0] for f in left if f.endswith(".pfw.gz")] == ["asked"], left


def test_initialize_log_after_env_start_keeps_events_of_exited_threads(run_python, trace_dir):
    # The events were recorded by a thread that has exited and whose buffer
    # the writer has retired: the env-started file holds them, so
    # initialize_log() must never delete them. It renames that file to the
    # one it asks for and goes on in it: one file, every event.
    proc = run_python("""
import os, threading, time
from dftracer import _core
from dftracer.python import dftracer, dft_fn

def work():
    for _ in range(1000):
        with dft_fn("w", "worker_event"):
            pass

tasks = len(os.listdir("/proc/self/task"))
t = threading.Thread(target=work)
t.start()
t.join()
# join() returns before the OS thread runs its exit handlers: wait until it
# is gone, then have the writer drain its chain (and retire its buffer).
while len(os.listdir("/proc/self/task")) >= tasks + 1:
    time.sleep(0.01)
_core.flush()
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "asked.pfw"), None, -1)
with dft_fn("w", "after_initialize_log"):
    pass
log.finalize()
""", env=started_from_env(trace_dir))
    files = trace_files(trace_dir)
    assert [os.path.basename(f).split("-")[0] for f in files] == ["asked"], (files, proc.stderr)
    events = read_trace(files[0])
    assert len(by_name(events, "worker_event")) == 1000
    assert len(by_name(events, "after_initialize_log")) == 1
    assert len(by_name(events, "start")) == 1 and len(by_name(events, "end")) == 1
    assert not [f for f in os.listdir(trace_dir) if f.endswith(".idx") and not f.startswith("asked")]


def test_importing_dftracer_python_does_not_import_torch(run_python):
    run_python("""
import sys
import dftracer.python
from dftracer.python import *
assert "torch" not in sys.modules, "dftracer.python imported torch"
""")
