"""CommWrapper's per-wrapper caches of groups and dtypes when several
threads miss them at once: the Python callbacks that describe a new group
or dtype (group_info, dtype_name) let other threads run, so every thread
can be inside one while the cache has room for a single entry. The cache
never grows past its size, each call is recorded once (by the C path or by
the Python fallback), and the wrapper keeps working.

The wrapper is driven directly, with stand-in tensors and groups (objects
with the attributes it reads), so the test needs no process group.
"""
from test_region_with_protocol import run_traced

RACE = """
import threading
from dftracer import _core

N = 12
CACHED = 15  # the caches hold 16 entries: room for one more
racing = [False]
barrier = threading.Barrier(N, timeout=30)

def fn(t, group=None, async_op=False):
    return None

fallbacks = [0]
lock = threading.Lock()
def fallback(*a, **k):
    with lock:
        fallbacks[0] += 1
    return fn(*a, **k)

def group_info(pg):
    if racing[0]:
        barrier.wait()  # every thread is here before any returns
    return ("g%d" % pg.n, 2, iter(range(10**9)))

def dtype_name(d):
    if racing[0]:
        barrier.wait()
    return "dt%d" % d.n

class Key:
    def __init__(self, n):
        self.n = n

class T:  # what the wrapper reads of a tensor
    nbytes = 16
    def __init__(self, dtype):
        self.dtype = dtype

class World:
    value = None

w = _core.CommWrapper(fn, fallback, "all_reduce", "comm", 1, 2, World, "value", {"value": None},
                      group_info, dtype_name)
pg0, dt0 = Key(0), Key(0)
calls = 0

def fill(make):
    global calls
    for i in range(CACHED):
        w(*make(i))
        calls += 1

def race(make):
    global calls
    racing[0] = True
    ths = [threading.Thread(target=w, args=make(i)) for i in range(N)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    racing[0] = False
    calls += N
    for _ in range(3):  # a cached key still takes the C path
        w(T(dt0), pg0)
        calls += 1

WHAT = os.environ["WHAT"]
if WHAT == "group":
    fill(lambda i: (T(dt0), pg0 if i == 0 else Key(100 + i)))
    race(lambda i: (T(dt0), Key(200 + i)))
else:
    fill(lambda i: (T(dt0 if i == 0 else Key(100 + i)), pg0))
    race(lambda i: (T(Key(200 + i)), pg0))
w.attr = 1  # the instance dict, past the caches in the object, is intact
del w
import gc
gc.collect()
print(calls, fallbacks[0])
"""


def _check(run_python, trace_dir, what):
    events, proc = run_traced(run_python, trace_dir, RACE, env={"WHAT": what})
    calls, fallbacks = map(int, proc.stdout.split())
    comm = [e for e in events if e.get("cat") == "comm"]
    # The one free entry went to one racing thread; the others took the
    # Python path (its events are not written by this stand-in fallback).
    assert fallbacks == 12 - 1, (fallbacks, proc.stderr)
    assert len(comm) + fallbacks == calls
    names = {e["args"]["group" if what == "group" else "dtype"] for e in comm}
    assert len(names) == 16, names


def test_racing_group_misses_fill_the_cache_once(run_python, trace_dir):
    _check(run_python, trace_dir, "group")


def test_racing_dtype_misses_fill_the_cache_once(run_python, trace_dir):
    _check(run_python, trace_dir, "dtype")
