"""What the fast paths of the Python regions must keep: event names and
categories looked up by the address of their str (the recent-ids front of
the intern cache) stay right when strs come and go, a region type check
remembered for one type is not taken for another, and the C no-op context
manager the benchmarks use as CPython's floor does nothing."""
import collections

import pytest

from trace_reader import read_finalized, trace_files


def _complete(trace_dir):
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return [e for e in read_finalized(files[0]) if e.get("ph") == "X"]


def test_log_event_names_made_and_freed_per_call_keep_their_own_names(run_python, trace_dir):
    # Each name is a new str, freed after its call: the next one is often
    # made at the same address. 300 names also share the 64 recent slots.
    run_python(f"""
        from dftracer.python import dftracer
        log = dftracer.initialize_log({trace_dir!r} + "/t", None, -1)
        for rnd in range(2):
            for i in range(300):
                log.log_event("name%d" % i, "cat%d" % (i % 3), 10 + i, 1)
        for i in range(300):
            n = "".join(["x", str(i)])
            log.log_event(n, "".join(["c", str(i % 5)]), 1000 + i, 2)
            del n
        log.finalize()
    """, env={"DFTRACER_DISABLE_IO": "1"})
    events = _complete(trace_dir)
    got = collections.Counter((e["name"], e["cat"]) for e in events if e["name"][0] in "nx")
    want = collections.Counter()
    for rnd in range(2):
        for i in range(300):
            want[("name%d" % i, "cat%d" % (i % 3))] += 1
    for i in range(300):
        want[("x%d" % i, "c%d" % (i % 5))] += 1
    assert got == want


def test_new_regions_per_with_keep_their_names_as_strs_come_and_go(run_python, trace_dir):
    run_python(f"""
        from dftracer.python import dft_fn, dftracer
        log = dftracer.initialize_log({trace_dir!r} + "/t", None, -1)
        for i in range(200):
            with dft_fn("".join(["k", str(i % 7)]), "".join(["r", str(i)])):
                pass
        log.finalize()
    """, env={"DFTRACER_DISABLE_IO": "1"})
    got = sorted((e["name"], e["cat"]) for e in _complete(trace_dir) if e["name"].startswith("r"))
    assert got == sorted(("r%d" % i, "k%d" % (i % 7)) for i in range(200))


def test_enter_of_a_region_type_does_not_pass_for_another_type():
    from dftracer.python import dft_fn

    class Other:
        pass

    enter = dft_fn.__dict__.get("__enter__") or dft_fn.__mro__[1].__dict__["__enter__"]
    with dft_fn("c", "n"):  # the region type is now the one remembered
        pass
    with pytest.raises(TypeError, match="requires a 'dftracer._core.Region' object"):
        enter.__get__(Other())
    with pytest.raises(TypeError, match="requires a 'dftracer._core.Region' object"):
        enter(Other())


def test_the_benchmarks_null_context_does_nothing():
    from dftracer import _core

    c = _core._NullContext()
    with c as got:
        assert got is c
    assert c.__exit__(ValueError, ValueError("x"), None) is None  # an exception is not swallowed
    with pytest.raises(ValueError):
        with c:
            raise ValueError("passes through")


def test_the_benchmarks_new_object_floors_make_a_new_object_per_call():
    # bench_regions.py's floor of `with dft_fn(cat, name)`: a new object per
    # call (a one-slot free list), the class immutable or not as documented.
    import gc
    import sys

    from dftracer import _core

    for cls, immutable in ((_core._FloorNewContext, True), (_core._FloorNewMutable, False)):
        with cls("c", "n") as got:
            assert got is None
        a, b = cls("c", "n"), cls()
        assert a is not b and type(a) is cls and type(b) is cls
        refs = sys.getrefcount(cls)
        del a, b  # one kept as the spare, one freed with its class reference
        gc.collect()
        for _ in range(1000):  # one from the spare, one allocated and freed
            x, y = cls(), cls()
            del x, y
        assert sys.getrefcount(cls) <= refs  # no class reference leaked per object
        assert bool(cls.__flags__ & (1 << 8)) is immutable  # Py_TPFLAGS_IMMUTABLETYPE
        if immutable:
            with pytest.raises(TypeError):
                cls.x = 1
        else:
            cls.x = 1
            del cls.x
        with pytest.raises(TypeError):
            cls(k=1)


def test_a_region_freed_while_open_leaves_nothing_for_the_next_one(run_python, trace_dir):
    # `r` is entered and dropped without its exit; the next dft_fn is made in
    # its memory (free list): its flush() must write its own event, not the
    # dropped one's open entry.
    run_python(f"""
        from dftracer.python import dft_fn, dftracer
        log = dftracer.initialize_log({trace_dir!r} + "/t", None, -1)
        for i in range(3):
            r = dft_fn("c", "dropped")
            r.__enter__()
            del r
            f = dft_fn("c", "flushed")
            f.flush()
            del f
        log.finalize()
    """, env={"DFTRACER_DISABLE_IO": "1"})
    names = [e["name"] for e in _complete(trace_dir) if e["cat"] == "c"]
    assert names == ["flushed"] * 3, names
