"""DDP's bucketed gradient all-reduces as `comm` events with
`ddp_bucket`.

DDP's Reducer all-reduces each gradient bucket from C++, past the Python
functions collectives.py wraps. What DDP offers to see them is its comm hook: so
each DistributedDataParallel built while tracing gets one, a dispatcher that
runs torch's own ``default_hooks.allreduce_hook`` (which torch documents as
"this won't change behavior of DDP": divide by the group size, all-reduce,
as the built-in path does) inside ``collectives.bucket_scope(bucket.index())``.

DDP accepts one hook per module, so the user's own registration must still
work afterwards: ``register_comm_hook`` and ``_register_builtin_comm_hook``
are wrapped to replace the dispatcher's hook (with DDP's own checks and
logging) instead of failing, and a second registration fails as it would
without us. Built-in hooks become their Python twins (ALLREDUCE ->
allreduce_hook, FP16_COMPRESS -> fp16_compress_hook).
"""
from __future__ import annotations

import functools
from typing import Any

from . import collectives
from ..diagnostics import warn


class _HookBox:
    """The comm hook DDP runs: state and hook the dispatcher calls."""

    def __init__(self, state: Any, hook: Any):
        self.state, self.hook, self.user_set = state, hook, False


def _dispatch(box, bucket):  # unannotated: DDP rejects a `bucket` annotation other than GradBucket
    with collectives.bucket_scope(int(bucket.index())):
        return box.hook(box.state, bucket)


def _builtin_twin(kind: Any) -> Any:
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return {dist.BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
            dist.BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}.get(kind)


def install(ddp_cls: Any) -> None:
    """Wraps DistributedDataParallel's __init__ and hook registration. Idempotent."""
    if getattr(ddp_cls, "_dftracer_ddp", False):
        return
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    from ... import _core

    init, register, register_builtin = (ddp_cls.__init__, ddp_cls.register_comm_hook,
                                        ddp_cls._register_builtin_comm_hook)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if not _core.enabled() or getattr(self, "_dftracer_hook", None) is not None:
            return
        try:
            box = _HookBox(self.process_group, default_hooks.allreduce_hook)
            register(self, box, _dispatch)
            self._dftracer_hook = box
        except Exception as e:  # DDP without a reducer, a changed API: untraced buckets, same DDP
            warn(f"DDP's gradient all-reduces are not traced ({type(e).__name__}: {e})")

    @functools.wraps(register)
    def register_comm_hook(self, state, hook):
        box = getattr(self, "_dftracer_hook", None)
        if box is None or box.user_set:
            return register(self, state, hook)
        self._check_comm_hook(hook)
        self.logger._set_comm_hook_name(hook.__qualname__)
        box.state, box.hook, box.user_set = state, hook, True

    @functools.wraps(register_builtin)
    def _register_builtin_comm_hook(self, comm_hook_type):
        box = getattr(self, "_dftracer_hook", None)
        twin = _builtin_twin(comm_hook_type)
        if box is None or box.user_set or twin is None:
            return register_builtin(self, comm_hook_type)
        self.logger._set_comm_hook_name(str(comm_hook_type))
        box.state, box.hook, box.user_set = self.process_group, twin, True

    ddp_cls.__init__ = __init__
    ddp_cls.register_comm_hook = register_comm_hook
    ddp_cls._register_builtin_comm_hook = _register_builtin_comm_hook
    ddp_cls._dftracer_ddp = True
