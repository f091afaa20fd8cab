"""Each rank's clock offset to rank 0, measured once the default process
group exists, written as metadata ``clock_offset_ns`` (add it to
this file's timestamps to get rank 0's clock; rank 0 writes 0) and
``clock_offset_uncertainty_ns`` (half the tightest round trip used).

How: K ping-pongs between each rank and rank 0 through the group's
rendezvous store (a TCPStore: every rank of any backend has one, gloo or
nccl alike, with no device copies). Rank r reads its clock (t1), sets
``<r>/<k>/ping``; rank 0, waiting for that key, reads its clock (t0) and
sets ``<r>/<k>/pong`` = t0; rank r, woken by the key, reads its clock (t2).
Causality puts rank 0's reading between t1 and t2, so
offset = t0 - (t1 + t2) / 2 is off by at most (t2 - t1) / 2; the tightest of
the K round trips is kept (as NTP does).

Why the store, on a thread of its own: it must never hang or slow the job.
Collectives over the group would block every rank until all arrive, and hang
for the group's timeout (30 min) when one rank does not take part (tracing
off there). Store requests are short and our waits have their own timeouts
(_wait polls); the exchange runs on a daemon thread with its own store
connection (the job's client serializes its requests behind one lock), and
rank 0 serves the ranks one after the other in the background: the training
never waits for it. At exit the thread is stopped and joined (atexit). When
it cannot run (no TCPStore, a timeout), one warning and no metadata: unknown.
"""
from __future__ import annotations

import atexit
import datetime
import os
import threading
import time

from ... import _core
from ..diagnostics import warn

ROUNDS = 5
PING_TIMEOUT_S = 10.0  # rank 0 waiting for one rank's ping; rank r for its pong, per round
# Bound of any one blocking C++ store call of ours (connect, set, get): the
# exit handler waits this long (plus slack) for the thread to leave it. A
# daemon thread still inside a torch C++ call when the interpreter finalizes
# is killed by pthread_exit while it re-takes the GIL, which unwinds through a
# noexcept destructor: std::terminate, the process aborts at exit ("terminate
# called without an active exception", ~1 run in 10 of a 2-rank job whose
# rank 0 exited while rank 1 was still connecting to its store).
STORE_CALL_TIMEOUT_S = 2.0
EXIT_JOIN_S = 2 * STORE_CALL_TIMEOUT_S + 1.0
SPINS = 50  # checks back to back before sleeping between them
_round = 0  # re-inits of the group in this process: fresh keys each time
_stop = threading.Event()  # set at exit (see _wait)
_threads: list = []


def _stop_at_exit() -> None:
    """Stops the exchange and waits until the thread is out of every C++ call
    (see STORE_CALL_TIMEOUT_S): normally at once, at worst EXIT_JOIN_S."""
    _stop.set()
    deadline = time.monotonic() + EXIT_JOIN_S
    for t in _threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))


def _wait(store, key: str, timeout_s: float) -> None:
    """Returns once `key` is in the store; raises TimeoutError past
    timeout_s or once stopped.

    Polls with `check` (one short request) rather than a blocking `wait`:
    a thread still inside a blocking C++ store call when the interpreter
    shuts down aborts the process ("terminate called without an active
    exception"), and each `wait` that times out prints a c10d warning. Back
    to back at first -- an answer due now is seen one request late at most,
    which is what the round trip measures -- then sleeping up to 10 ms."""
    deadline = time.monotonic() + timeout_s
    spins = 0
    while not _stop.is_set():
        if store.check([key]):
            return
        spins += 1
        if spins > SPINS:
            time.sleep(min(0.01, 0.0002 * (spins - SPINS)))
        if time.monotonic() > deadline:
            break
    raise TimeoutError(f"no {key!r} in the store after {timeout_s:.0f} s")


def _server(dist, store):
    """(host, port) of the job's TCPStore server, or None. Only the address is
    kept: holding the job's store object in our thread would keep rank 0's
    store server alive past the job's own teardown."""
    base = store
    while isinstance(base, dist.PrefixStore):
        base = base.underlying_store
    if not isinstance(base, dist.TCPStore):
        return None
    return base.host, base.port


def _connect(dist, server):
    """A TCPStore client of our own on the job's store server."""
    return dist.TCPStore(server[0], server[1], is_master=False,
                         timeout=datetime.timedelta(seconds=STORE_CALL_TIMEOUT_S), wait_for_workers=False)


def _serve(store, world_size: int) -> None:
    """Rank 0: answer every other rank's pings, in rank order."""
    for r in range(1, world_size):
        for k in range(ROUNDS):
            try:
                _wait(store, f"{r}/{k}/ping", PING_TIMEOUT_S)
            except TimeoutError:
                if _stop.is_set():
                    return
                break  # that rank does not take part (tracing off there, gone): next one
            store.set(f"{r}/{k}/pong", str(_core.now_ns()))


def _measure(store, rank: int) -> tuple[int, int] | None:
    """Rank r: (offset_ns, uncertainty_ns) from the tightest round trip."""
    best = None
    for k in range(ROUNDS):
        t1 = _core.now_ns()
        store.set(f"{rank}/{k}/ping", "1")
        # Rank 0 serves lower ranks first: the first pong may take a while.
        _wait(store, f"{rank}/{k}/pong", PING_TIMEOUT_S * (rank if k == 0 else 1))
        t2 = _core.now_ns()
        t0 = int(store.get(f"{rank}/{k}/pong"))
        if best is None or t2 - t1 < best[0]:
            best = (t2 - t1, t0 - (t1 + t2) // 2)
    if best is None:
        return None
    return best[1], (best[0] + 1) // 2


def _run(dist, server, rank: int, world_size: int, prefix: str) -> None:
    try:
        if _stop.is_set():
            return
        client = dist.PrefixStore(prefix, _connect(dist, server))
        if rank == 0:
            _serve(client, world_size)
            return
        got = _measure(client, rank)
        if got is not None and _core.enabled():
            _core.metadata_int("clock_offset_ns", got[0])
            _core.metadata_int("clock_offset_uncertainty_ns", got[1])
    except Exception as e:  # a timeout, a store gone: unknown, never an error in the job
        if _stop.is_set():
            return  # the job is exiting: nothing to say
        warn(f"clock offset to rank 0 not measured ({type(e).__name__}: {e}); "
             "clock_offset_ns is absent (merge treats it as 0)")


def start(dist, rank: int, world_size: int) -> threading.Thread | None:
    """Starts the measurement for this rank in the background; rank 0 writes
    its own offset (0) at once. Returns the thread (tests join it)."""
    global _round
    if rank == 0:
        _core.metadata_int("clock_offset_ns", 0)
        _core.metadata_int("clock_offset_uncertainty_ns", 0)
    if world_size <= 1:
        return None
    try:
        from ..torch_compat import default_store

        store = default_store()
    except Exception as e:
        warn(f"clock offset to rank 0 not measured: no store for the default group ({e})")
        return None
    server = _server(dist, store)
    del store
    if server is None:
        warn("clock offset to rank 0 not measured: the process group's store is not a TCPStore; "
             "clock_offset_ns is absent (merge treats it as 0)")
        return None
    _round += 1
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    prefix = f"dftracer/clock/{restart}/{_round}/"
    t = threading.Thread(target=_run, args=(dist, server, rank, world_size, prefix),
                         name="dftracer-clock", daemon=True)
    if not _threads:
        atexit.register(_stop_at_exit)
    _threads.append(t)
    t.start()
    return t
