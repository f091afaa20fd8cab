"""torch.distributed collectives and point-to-point calls as `comm`
events.

Each public function in COLLECTIVES is replaced, in
``torch.distributed.distributed_c10d`` and in ``torch.distributed``, by a
wrapper that calls the original unchanged and records one complete event,
cat ``comm``, named after the function: ``ts`` is when this rank entered the
call, ``dur`` until the operation completed as this rank saw it (a blocking
call: its return; ``async_op=True``, ``isend``/``irecv``: the completion of
its work's future, ``args.async_op`` = 1). args: ``bytes`` (this rank's
input payload), ``dtype``, ``group`` (the process group's name),
``group_size``, ``seq`` (per group, counted here, so equal on every rank for
the same collective), ``peer`` (send/recv: the other side's global rank; the
``seq`` of a send/recv counts per (group, peer, direction), so the n-th send
from A to B matches B's n-th receive from A), ``step`` (current_step.py)
and ``ddp_bucket`` for DDP's gradient all-reduces. A blocking one-tensor
collective (``all_reduce(t)``, ``broadcast(t, src)``, ``reduce(t, dst)``)
takes its ``seq`` as it starts: a call that raises records no event but
still used its number.

Why wrappers (measured in bench/comm/): the alternatives see less or cost
as much. torch's RecordFunction
``record_param_comms`` carries the same facts but only to an observer that
asks for inputs (every ATen op then pays for it), and for gloo it brackets
the enqueue, not the completion; c10d's completion hooks exist for NCCL only.
A wrapper costs a few microseconds per call against tens of microseconds
for the smallest gloo all-reduce; the common blocking one-tensor call runs no
Python of ours (_core.CommWrapper, comm_call.cc).

FSDP needs nothing of its own: its all-gathers and reduce-scatters call
these functions (torch 2.13: FSDP1 and FSDP2 ``all_gather_single`` /
``reduce_scatter_single``, FSDP1 on CPU ``all_gather``; older torch the
``*_into_tensor`` / ``*_tensor`` names, which 2.13 keeps as aliases that call
the ``_single`` ones: one event, the outer name, as for any nested call).

DDP's bucketed all-reduces run in C++ (the Reducer), not through these
functions: ddp.py registers torch's own ``allreduce_hook`` (documented as
what DDP does without a hook) as the module's comm hook, and it calls
``all_reduce`` with the bucket index set here (``bucket_scope``).
"""
from __future__ import annotations

import inspect
import threading
from typing import Any, Callable

from ... import _core
from .. import current_step
from ..diagnostics import warn

CAT_COMM = "comm"

# torch.distributed functions traced, with the parameter holding this rank's
# input payload (None: barrier, no payload).
COLLECTIVES = {
    "all_reduce": "tensor",
    "all_gather": "tensor",
    "all_gather_into_tensor": "input_tensor",
    "all_gather_single": "input_tensor",  # torch >= 2.13: what FSDP (1 and 2) all-gathers with
    "reduce_scatter": "input_list",
    "reduce_scatter_tensor": "input",
    "reduce_scatter_single": "input",  # torch >= 2.13: FSDP's gradient reduce-scatter
    "broadcast": "tensor",
    "reduce": "tensor",
    "barrier": None,
    "all_to_all": "input_tensor_list",
    "all_to_all_single": "input",
    "send": "tensor",
    "recv": "tensor",
    "isend": "tensor",
    "irecv": "tensor",
}
_SENDS = ("send", "isend")
_RECVS = ("recv", "irecv")
_ALWAYS_ASYNC = ("isend", "irecv")


_groups: dict = {}  # process group -> (name, size, seq counter); a job has few groups
_seq_lock = threading.Lock()
_warned = False


class bucket_scope:
    """`with bucket_scope(i):` labels the all-reduces issued inside with
    ``ddp_bucket`` = i (DDP's comm hook, ddp.py). Kept per thread, in C,
    where the traced collective reads it."""

    def __init__(self, index: int):
        self.index = index

    def __enter__(self):
        self.prev = _core._comm_bucket(self.index)

    def __exit__(self, *exc):
        _core._comm_bucket(self.prev)
        return False


def _failed(e: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        warn(f"a torch.distributed call could not be recorded ({type(e).__name__}: {e}); "
             "comm events may be missing")


_dtype_names: dict = {}  # torch.dtype -> its name without "torch."


def _dtype_name(dtype) -> str:
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).replace("torch.", "")
    return name


def _nbytes(x: Any) -> tuple[int, str | None]:
    """(bytes, dtype) of a tensor or a list of tensors, from their metadata
    (numel x element size): the data is never read."""
    if x is None:
        return 0, None
    if isinstance(x, (list, tuple)):
        total, dtype = 0, None
        for t in x:
            n, d = _nbytes(t)
            total += n
            dtype = dtype or d
        return total, dtype
    try:
        return int(x.numel()) * int(x.element_size()), _dtype_name(x.dtype)
    except Exception:
        return 0, None


# group name (or (name, peer, direction)) -> _core._SeqCounter: next() gives
# 0, 1, 2, ...; _core.CommWrapper takes its next value without a Python int.
_seq_counters: dict = {}


def _next_seq(key) -> int:
    counter = _seq_counters.get(key)
    if counter is None:
        with _seq_lock:
            counter = _seq_counters.setdefault(key, _core._SeqCounter())
    return next(counter)  # atomic: a C call under the GIL


class _Params:
    """Where a function's arguments are, by name, from its signature (so a
    torch release that adds a parameter moves nothing here)."""

    def __init__(self, fn: Callable, payload: str | None):
        names = list(inspect.signature(fn).parameters)
        self.pos = {n: i for i, n in enumerate(names)}
        self.payload = payload

    def get(self, args: tuple, kwargs: dict, name: str, default=None):
        i = self.pos.get(name)
        if i is not None and i < len(args):
            return args[i]
        return kwargs.get(name, default)


def _tensor_meta():
    """dftracer._eager's reader of a plain tensor's byte count and dtype
    (a capsule for _core.CommWrapper, which asks at its first traced call:
    the wrappers are made while `import torch` runs), or None: a build
    without the LibTorch observer, where the wrapper reads `nbytes` and
    `dtype`."""
    try:
        import torch
        from ... import _eager
        return _eager._tensor_meta_fn(torch.Tensor, torch.nn.Parameter)
    except Exception:  # ImportError, or an _eager without it
        return None


def _group_info(pg, dist) -> tuple:
    """(name, size, seq counter) of a process group (None: the default
    group)."""
    if pg is None:
        pg = dist.group.WORLD
    info = _groups.get(pg)
    if info is None:
        name = str(getattr(pg, "group_name", "") or "default")
        size = int(pg.size())
        with _seq_lock:
            counter = _seq_counters.setdefault(name, _core._SeqCounter())
        info = _groups[pg] = (name, size, counter)
    return info


def _with_context(out: dict) -> dict:
    """Adds the DDP bucket and the training step the call is part of."""
    bucket = _core._comm_bucket()
    if bucket is not None:
        out["ddp_bucket"] = bucket
    step = current_step.value
    if step is not None:
        out["step"] = step
    return out


def _describe(name: str, params: _Params, dist: Any, args: tuple, kwargs: dict, ret: Any) -> dict:
    group = params.get(args, kwargs, "group")
    gname, gsize, _ = _group_info(group, dist)
    nbytes, dtype = _nbytes(params.get(args, kwargs, params.payload)) if params.payload else (0, None)
    out = {"bytes": nbytes, "group": gname, "group_size": gsize}
    if dtype:
        out["dtype"] = dtype
    if name in _SENDS or name in _RECVS:
        side = "dst" if name in _SENDS else "src"
        peer = params.get(args, kwargs, side)
        local = params.get(args, kwargs, "group_" + side)
        if peer is None and local is not None:
            pg = group if group is not None else dist.group.WORLD
            peer = dist.get_global_rank(pg, local)
        if peer is None and name == "recv" and isinstance(ret, int) and ret >= 0:
            peer = ret  # recv from any source returns the sender
        if peer is not None:
            out["peer"] = int(peer)
        out["seq"] = _next_seq((gname, out.get("peer"), "send" if name in _SENDS else "recv"))
    else:
        out["seq"] = _next_seq(gname)
    return _with_context(out)


def _wrap(name: str, fn: Callable, dist: Any, c10d: Any = None) -> Callable:
    """The traced `fn` (torch.distributed's `name`); `c10d` is the module
    that holds its default group (torch.distributed.distributed_c10d; None:
    `dist.group.WORLD`)."""
    params = _Params(fn, COLLECTIVES[name])
    ids: list[int] = []
    enabled, ticks, record = _core.enabled, _core.ticks, _core.record_ticks
    timed, in_comm = _core._comm_timed, _core._in_comm
    always_async = name in _ALWAYS_ASYNC

    def traced(*args, **kwargs):  # every shape, described after the call
        if in_comm() or not enabled():
            return fn(*args, **kwargs)
        ret, t0, t1 = timed(fn, args, kwargs)
        try:
            if not ids:
                ids.extend((_core.intern(name), _core.intern(CAT_COMM)))
            ev = _describe(name, params, dist, args, kwargs, ret)
            if (always_async or params.get(args, kwargs, "async_op", False)) and ret is not None:
                ev["async_op"] = 1
                try:
                    # Completed when its future is: the end as this rank saw it.
                    ret.get_future().add_done_callback(lambda _f: record(ids[0], ids[1], t0, ticks(), ev))
                    return ret
                except Exception:  # no future on this backend: the enqueue is all we can time
                    pass
            record(ids[0], ids[1], t0, t1, ev)
        except Exception as e:  # never into the training step
            _failed(e)
        return ret

    # A blocking collective whose payload is its first parameter (all_reduce,
    # broadcast, reduce: what DDP and most training loops call) is replaced
    # by _core.CommWrapper: no Python frame between two collectives, whose
    # caches the wait emptied (bench/comm/bench_comm_after.py). It describes
    # the event before the call, as here (bytes, dtype, group, group_size,
    # seq, ddp_bucket, step; the seq taken as the call starts: a call that
    # raises records no event but used its number), and hands `traced` any
    # call it cannot describe so.
    group_pos = params.pos.get("group", -1)
    async_pos = params.pos.get("async_op", -1)
    wrapper: Any = traced
    if (params.payload is not None and params.pos.get(params.payload) == 0 and group_pos > 0 and async_pos > 0
            and name not in _SENDS and name not in _RECVS and not always_async):
        world = getattr(c10d, "_world", None)  # the default group without two Python properties
        world_obj, world_attr = ((world, "_default_pg") if hasattr(world, "_default_pg")
                                 else ((c10d or dist).group, "WORLD"))
        wrapper = _core.CommWrapper(fn, traced, name, CAT_COMM, group_pos, async_pos, world_obj, world_attr,
                                    vars(current_step), lambda pg: _group_info(pg, dist), _dtype_name,
                                    _tensor_meta)

    wrapper.__wrapped__ = fn
    wrapper._dftracer_comm = True
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except AttributeError:
            pass
    return wrapper


def install(c10d: Any) -> None:
    """Wraps the functions of `c10d` (torch.distributed.distributed_c10d)
    and the same objects re-exported by torch.distributed. Idempotent."""
    import torch.distributed as dist

    for name in COLLECTIVES:
        fn = getattr(c10d, name, None)
        if fn is None or getattr(fn, "_dftracer_comm", False):
            continue
        try:
            traced = _wrap(name, fn, dist, c10d)
        except (TypeError, ValueError) as e:  # no signature to read: leave it untraced
            _failed(e)
            continue
        setattr(c10d, name, traced)
        if getattr(dist, name, None) is fn:
            setattr(dist, name, traced)
