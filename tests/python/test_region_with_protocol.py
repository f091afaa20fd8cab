"""dft_fn's context-manager protocol: __enter__/__exit__ as bound, unbound
and `with` forms, and the unit of get_time()/log_event() fixed when tracing
starts.

Each test runs in a fresh interpreter (tracing state is per process) and
reads the trace back.
"""
from trace_reader import complete_events, read_trace, trace_files

PRELUDE = """
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "t.pfw"), None, -1)
"""


def run_traced(run_python, trace_dir, body, env=None):
    proc = run_python(PRELUDE + body + "\nlog.finalize()\n", env=dict({"TRACE_DIR": trace_dir}, **(env or {})))
    files = trace_files(trace_dir)
    assert len(files) == 1, (files, proc.stderr)
    return complete_events(read_trace(files[0])), proc


def test_bound_unbound_and_with_forms_write_one_event_each(run_python, trace_dir):
    events, proc = run_traced(run_python, trace_dir, """
r = dft_fn("c", "bound")
assert r.__enter__() is r            # bound, called at once
assert r.__exit__(None, None, None) is False
enter = dft_fn("c", "held").__enter__  # bound object outlives the expression
region = enter.__self__
assert enter() is region and region.__exit__(None, None, None) is False
u = dft_fn("c", "unbound")
assert dft_fn.__enter__(u) is u and dft_fn.__exit__(u, None, None, None) is False
try:
    dft_fn.__enter__(object())
except TypeError as e:
    print("typeerror", "Region" in str(e))
try:
    u.__enter__(1)
except TypeError:
    print("enter-args")
class Sub(dft_fn):
    def __enter__(self):
        super().__enter__()
        return "sub"
with Sub("c", "sub") as s:
    assert s == "sub"
nest = dft_fn("c", "nested")
with nest:
    with nest:
        pass
try:
    with dft_fn("c", "raised"):
        raise KeyError("k")
except KeyError:
    print("propagated")
print(repr(dft_fn.__enter__), callable(r), "ok")
""")
    out = proc.stdout.split()
    assert out[:5] == ["typeerror", "True", "enter-args", "propagated", "<method"], proc.stdout
    assert out[-1] == "ok" and out[-2] == "False"  # a dft_fn itself is not callable
    names = sorted(e["name"] for e in events if e.get("cat") == "c")
    assert names == ["bound", "held", "nested", "nested", "raised", "sub", "unbound"]


def test_time_metric_is_read_when_tracing_starts(run_python, trace_dir):
    # The core reads DFTRACER_* when tracing starts; get_time() and
    # log_event() keep the unit of that moment even if the variable changes.
    events, proc = run_traced(run_python, trace_dir, """
os.environ["DFTRACER_TIME_METRIC"] = "MS"
t = log.get_time()
log.log_event("late", "c", t, 1)
print(t > 10 ** 15)
""", env={"DFTRACER_TIME_METRIC": "NS"})
    assert proc.stdout.split() == ["True"], proc.stdout  # nanoseconds since the epoch, not milliseconds
    late, = [e for e in events if e["name"] == "late"]
    assert abs(late["dur"] - 0.001) < 1e-9  # 1 ns, in the file's microseconds



def test_freed_regions_are_reused_safely(run_python, trace_dir):
    # dft_fn objects freed and made again (the constructor's free list), and
    # subclasses with a __dict__, a weakref and a finalizer (the generic
    # dealloc, ending in Region's), each keep their own name, cat and args.
    events, proc = run_traced(run_python, trace_dir, """
import gc, weakref
class Sub(dft_fn):
    def __del__(self):
        print("del", self.name)
for i in range(40):
    with dft_fn("c", f"r{i % 3}", step=i):
        pass
s = Sub("c", "sub")
s.extra = 1
w = weakref.ref(s)
with s:
    pass
del s
gc.collect()
print(w() is None)
kept = [dft_fn("k", f"k{i}") for i in range(20)]
print(len({id(k) for k in kept}), [k.name for k in kept][-1], kept[0].cat)
""")
    assert proc.stdout.split() == ["del", "sub", "True", "20", "k19", "k"], proc.stdout
    regions = [e for e in events if e.get("cat") == "c" and e["name"].startswith("r")]
    assert [(e["name"], e["args"]["step"]) for e in regions] == [(f"r{i % 3}", i) for i in range(40)]


def test_bound_enter_exit_kept_while_the_region_is_used_again(run_python, trace_dir):
    # A region keeps its bound __enter__/__exit__ (builtin methods whose
    # __self__ it does not count); every binding calls the region it was
    # made from, and one still held when the region's last reference goes
    # keeps the region (its name, its open entry) until it is dropped.
    events, proc = run_traced(run_python, trace_dir, """
import gc, weakref
r = dft_fn("c", "kept")
a, b = r.__exit__, r.__exit__
print(a is b, a.__self__ is r, type(a).__name__)
with r:                      # bound again while `a` is held
    pass
assert r.__enter__() is r and a(None, None, None) is False
assert r.__enter__() is r and b(None, None, None) is False
del a, b
ex = dft_fn("c", "orphan").__exit__    # the only reference to its region
k = dft_fn("c", "handed")
kx = k.__exit__                        # kept binding, then the region's last reference goes
k.__enter__()
del k
en = dft_fn("c", "entered").__enter__  # the same, at once
for i in range(20):                    # made and freed around them (free list)
    with dft_fn("c", "other"):
        pass
gc.collect()
print(ex.__self__.name, kx.__self__.name, en.__self__.name)
ex.__self__.__enter__()
assert ex(None, None, None) is False
assert kx(None, None, None) is False
assert en() is en.__self__ and en.__self__.__exit__(None, None, None) is False
del ex, kx, en
class Attrs(dft_fn):                   # freed by the generic subclass dealloc
    pass
s = Attrs("c", "subclass")
s.x = 1
sx = s.__exit__
s.__enter__()
del s
gc.collect()
print(sx.__self__.x)
assert sx(None, None, None) is False
del sx
class Fin(dft_fn):                     # its own finalizer: bindings hold the region
    def __del__(self):
        print("del", self.name)
fx = Fin("c", "finalized").__exit__
fx.__self__.__enter__()
print("held")
assert fx(None, None, None) is False
del fx
w = weakref.ref(dft_fn("c", "weak").__enter__)
print(w() is None)
t = dft_fn("c", "weak-kept")
w = weakref.ref(t.__exit__)
del t
print(w() is None)
for i in range(3):
    with dft_fn("c", "after"):
        pass
d = dft_fn("c", "explicit-del")
d.__del__()                            # an explicit call: the region stays usable
with d:
    pass
f = dft_fn("c", "object-level")          # pydftracer: the constructor starts the clock
assert f.__exit__(None, None, None) is False  # an exit without an enter writes it
assert f.__exit__(None, None, None) is False  # once
""")
    assert proc.stdout.split() == ["True", "True", "builtin_function_or_method", "orphan", "handed", "entered",
                                   "1", "held", "del", "finalized", "True", "True"], proc.stdout
    names = sorted(e["name"] for e in events if e.get("cat") == "c")
    assert names == sorted(["kept"] * 3 + ["object-level", "orphan", "handed", "entered", "subclass", "finalized",
                            "explicit-del"] + ["other"] * 20 + ["after"] * 3)


def test_regions_used_after_tracing_stops_write_nothing(run_python, trace_dir):
    # Exits with tracing off skip the clock and the open stack; a region
    # entered while tracing was on still closes its entry.
    events, proc = run_traced(run_python, trace_dir, """
r = dft_fn("c", "traced")
with r:
    pass
r.__enter__()
log.finalize()
assert r.__exit__(None, None, None) is False
for _ in range(3):
    with r:
        pass
    with dft_fn("c", "never"):
        pass
print("ok")
""")
    assert proc.stdout.split() == ["ok"], proc.stdout
    assert [e["name"] for e in events if e.get("cat") == "c"] == ["traced"]


def test_logger_methods_bound_and_unbound(run_python, trace_dir):
    # get_time / log_event are C method descriptors of the logger class: the
    # bound, unbound and module-level forms, and the Python path for
    # keywords, all record.
    from dftracer.python import get_time

    events, proc = run_traced(run_python, trace_dir, """
from dftracer.python import get_time
t = log.get_time()
print(t > 0, dftracer.get_time(log) >= t, get_time() >= t, log.log_event.__name__)
log.log_event("bound", "c", t, 1)
dftracer.log_event(log, "unbound", "c", t, 1)
log.log_event("kw", "c", start_time=t, duration=1)
try:
    dftracer.log_event(object(), "x", "c", t, 1)
except TypeError:
    print("typeerror")
""")
    assert proc.stdout.split() == ["True", "True", "True", "log_event", "typeerror"], proc.stdout
    assert sorted(e["name"] for e in events if e.get("cat") == "c") == ["bound", "kw", "unbound"]
    assert isinstance(get_time(), int)  # the module-level form needs no logger
