"""Freeing a dft_fn when Python code runs in the middle of it, or when its
kept __enter__/__exit__ bindings outlive it: the free list stays within its
bound, no memory is kept past its object, and cycles through a binding are
collected.

Each test runs in a fresh interpreter: the free list and the open stacks are
per process.
"""
import pytest

# Frees 40 dft_fn objects: the free list (16 regions) is full after it.
FILL = """
import gc, sys, weakref
from dftracer.python import dft_fn
gc.disable()

def fill():
    keep = [dft_fn("c", "x") for _ in range(40)]
    del keep

class Name(str):
    def __del__(self):
        fill()
"""

# 17 regions made after the free list was filled: at most 16 come from it,
# so at least one block is allocated; the list still serves most of them.
COUNT_REUSED = """
hold = [None] * 20
b0 = sys.getallocatedblocks()
for i in range(17):
    hold[i] = dft_fn("c", "x")
print("allocated", sys.getallocatedblocks() - b0)
del hold
for i in range(200):
    with dft_fn("c", "after"):
        pass
print("survived")
"""


@pytest.mark.parametrize("frees_others", [
    # the name's __del__ runs as the object's fields are released
    'r = dft_fn("c", Name("outer"), enable=False)\ndel r\n',
    # a weakref callback runs as the kept binding is freed
    'r = dft_fn("c", "outer")\nref = weakref.ref(r.__enter__, lambda _: fill())\ndel r\n',
])
def test_the_free_list_keeps_its_bound_when_a_free_frees_others(run_python, frees_others):
    proc = run_python(FILL + frees_others + COUNT_REUSED, env={"DFTRACER_DISABLE_IO": "1", "PYTHONMALLOC": None})
    out = proc.stdout.split()
    assert out[-1] == "survived", proc.stdout
    allocated = int(out[out.index("allocated") + 1])
    assert 1 <= allocated < 10, proc.stdout


def test_a_region_freed_on_another_thread_frees_its_kept_bindings(run_python, tmp_path):
    # Entered through its kept binding on B, never exited, freed on A: kept
    # allocated (dead) until B drops its entries, then freed with its
    # bindings. Rounds after the first leave nothing behind.
    proc = run_python("""
    import sys, threading
    from dftracer.python import dft_fn, dftracer
    log = dftracer.initialize_log(%r + "/t", None, -1)
    N = 200

    def round_():
        box = []
        started, freed = threading.Event(), threading.Event()
        def b():
            for _ in range(N):
                r = dft_fn("c", "abandoned")
                e = r.__enter__
                e()
                del e
                box.append(r)
                del r
            started.set()
            freed.wait()
            # fills this thread's open stack: its dead entries are dropped
            keep = [dft_fn("c", "y") for _ in range(300)]
            for k in keep:
                k.__enter__()
            for k in reversed(keep):
                k.__exit__(None, None, None)
        def a():
            started.wait()
            box.clear()
            freed.set()
        tb, ta = threading.Thread(target=b), threading.Thread(target=a)
        tb.start(); ta.start(); ta.join(); tb.join()

    round_()
    base = sys.getallocatedblocks()
    for _ in range(3):
        round_()
    print("growth", sys.getallocatedblocks() - base)
    log.finalize()
    """ % str(tmp_path), env={"DFTRACER_DISABLE_IO": "1", "PYTHONMALLOC": None})
    growth = int(proc.stdout.split()[-1])
    assert growth < 100, proc.stdout  # 3 * 200 kept methods before


def test_a_cycle_through_a_handed_over_binding_is_collected(run_python):
    # s.ex holds s's kept __exit__; when s's last outside reference goes the
    # binding holds s, and s -> __dict__ -> binding -> s is a cycle.
    proc = run_python("""
    import gc
    from dftracer.python import dft_fn

    class S(dft_fn):
        pass

    def one():
        s = S("c", "n")
        s.ex = s.__exit__

    for _ in range(1000):
        one()
    gc.collect()
    print("alive", sum(1 for o in gc.get_objects() if type(o) is S))
    """)
    assert proc.stdout.split()[-1] == "0", proc.stdout


@pytest.mark.parametrize("get_type", [
    'type(dft_fn("c", "n").__exit__)',          # the __exit__ of a region with no other reference
    'type(Region.__dict__["__exit__"])',        # the class's __enter__/__exit__ descriptor
])
def test_the_binding_types_cannot_be_instantiated(run_python, get_type):
    proc = run_python("""
    from dftracer._core import Region
    from dftracer.python import dft_fn
    T = %s
    try:
        x = T()
    except TypeError as e:
        print("typeerror", e)
    else:
        del x
        print("made")
    """ % get_type)
    assert proc.stdout.startswith("typeerror"), proc.stdout
