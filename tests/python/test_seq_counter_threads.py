"""The seq of traced torch.distributed calls: per group (and per peer and
direction), 0, 1, 2, ... with no value given twice or skipped, also when
threads trace calls of a group at once: the first calls of a group race to
make its counter (collectives._next_seq, Python code that threads switch
inside; the test makes that switch happen).

next() of one _core._SeqCounter is not tested across threads here: under the
GIL it is one C call that never interleaves, so such a test cannot fail on
this build (a free-threaded build, Py_GIL_DISABLED, needs its atomic increment).
"""
import threading
import time

from dftracer import _core
from dftracer.python.distributed import collectives

THREADS = 8
KEYS = 20
PER_KEY_PER_THREAD = 3


def test_the_counter_counts_from_zero():
    counter = _core._SeqCounter()
    assert [next(counter) for _ in range(3)] == [0, 1, 2]
    assert repr(counter) == "_SeqCounter(next=3)"


class _SlowToMakeCounters:
    """_core as collectives sees it, but making a _SeqCounter yields to the
    other threads first: they reach the group's first call meanwhile, as a
    thread switch there would have them."""

    def __getattr__(self, name):
        return getattr(_core, name)

    @staticmethod
    def _SeqCounter():
        time.sleep(0.001)
        return _core._SeqCounter()


def test_threads_taking_the_first_seqs_of_new_groups_get_each_value_once(monkeypatch):
    monkeypatch.setattr(collectives, "_core", _SlowToMakeCounters())
    keys = [("seq-test-group", k, "send") for k in range(KEYS)]
    got = [[] for _ in range(THREADS)]
    start = threading.Barrier(THREADS)

    def take(i):
        for key in keys:
            start.wait()  # all threads at the key's first call together
            for _ in range(PER_KEY_PER_THREAD):
                got[i].append((key, collectives._next_seq(key)))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(THREADS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for key in keys:
            collectives._seq_counters.pop(key, None)
    per_key = {}
    for part in got:
        for key, seq in part:
            per_key.setdefault(key, []).append(seq)
    bad = {k[1]: sorted(v) for k, v in per_key.items() if sorted(v) != list(range(THREADS * PER_KEY_PER_THREAD))}
    assert not bad, f"{len(bad)} of {KEYS} groups got seqs given twice or skipped, e.g. {next(iter(bad.items()))}"
