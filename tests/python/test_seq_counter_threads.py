"""_core._SeqCounter (collectives' per-group seq) under threads taking values at
once: every value is given exactly once. On a free-threaded build
(Py_GIL_DISABLED) this needs its atomic increment; under the GIL, next() is
one C call and never interleaves."""
import threading

from dftracer import _core

THREADS = 8
PER_THREAD = 20000


def test_each_seq_is_given_once_across_threads():
    counter = _core._SeqCounter()
    got = [None] * THREADS
    start = threading.Barrier(THREADS)

    def take(i):
        start.wait()
        got[i] = [next(counter) for _ in range(PER_THREAD)]

    threads = [threading.Thread(target=take, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = sorted(v for part in got for v in part)
    assert values == list(range(THREADS * PER_THREAD))
    assert repr(counter) == f"_SeqCounter(next={THREADS * PER_THREAD})"

