"""Ranks of a torch.distributed job: who this process is, its
clock against rank 0's, and its collectives.

When tracing starts, ``install()`` hooks torch.distributed -- at once if it
is imported, else when it is (a ``sys.meta_path`` finder that patches
``torch.distributed.distributed_c10d`` right after it runs, before
``torch.distributed`` re-exports its names), so importing dftracer never
imports torch. The hooks:

- ``init_process_group`` is wrapped (same arguments, same result, same
  exceptions); when it returns, on the calling thread, this process writes
  its rank metadata (``rank``, ``local_rank``, ``world_size``,
  ``group_rank``, ``hostname``) and its process name ``rank R (pid P)`` --
  unless the core already wrote them at start from torchrun's environment
  (config.cc, the trace's first chunk) -- and starts the clock measurement
  (clock_sync.py). A group that exists when tracing starts is handled the
  same way at once.
- the collectives and point-to-point functions (collectives.py) and DDP's gradient
  buckets (ddp.py).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import socket
import sys

from ... import _core
from ..diagnostics import warn

C10D = "torch.distributed.distributed_c10d"
DDP_MODULE = "torch.nn.parallel.distributed"
_written_rank = None  # the rank whose metadata this trace holds
_finder = None


def _env_int(name: str) -> int | None:
    v = os.environ.get(name, "")
    return int(v) if v.isdigit() else None


def note_started() -> None:
    """Tracing just started: the core wrote the rank metadata in the first
    chunk when RANK was in the environment (config.cc reads the same)."""
    global _written_rank
    _written_rank = _env_int("RANK")


def _group_ready(dist) -> None:
    """The default group exists: write what the trace lacks, start the clock."""
    global _written_rank
    if not _core.enabled():
        return
    rank, world = int(dist.get_rank()), int(dist.get_world_size())
    if _written_rank != rank:
        _core.metadata_int("rank", rank)
        for key, env in (("local_rank", "LOCAL_RANK"), ("group_rank", "GROUP_RANK")):
            v = _env_int(env)
            if v is not None:
                _core.metadata_int(key, v)
        _core.metadata_int("world_size", world)
        _core.metadata("hostname", socket.gethostname())
        _core.set_process_name(f"rank {rank} (pid {os.getpid()})")
        _written_rank = rank
    from . import clock_sync

    clock_sync.start(dist, rank, world)


def _wrap_init(c10d, dist) -> None:
    init = c10d.init_process_group
    if getattr(init, "_dftracer_init", False):
        return

    def init_process_group(*args, **kwargs):
        ret = init(*args, **kwargs)
        try:
            _group_ready(dist)
        except Exception as e:  # never into the job: the group is up, only our metadata is not
            warn(f"rank metadata not written after init_process_group ({type(e).__name__}: {e})")
        return ret

    for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__wrapped__"):
        try:
            setattr(init_process_group, attr, init if attr == "__wrapped__" else getattr(init, attr))
        except AttributeError:
            pass
    init_process_group._dftracer_init = True
    c10d.init_process_group = init_process_group
    if getattr(dist, "init_process_group", None) is init:
        dist.init_process_group = init_process_group


def _patch(c10d) -> None:
    """Hooks a freshly imported (or already imported) distributed_c10d."""
    try:
        dist = sys.modules["torch.distributed"]
        from . import collectives

        _wrap_init(c10d, dist)
        collectives.install(c10d)
    except Exception as e:
        warn(f"torch.distributed is not traced ({type(e).__name__}: {e})")


def _patch_ddp(module) -> None:
    """Hooks DDP in torch.nn.parallel.distributed (`module`: that module,
    maybe just run, its package torch.nn.parallel not finished yet)."""
    try:
        from . import ddp

        ddp.install(module.DistributedDataParallel)
    except Exception as e:
        warn(f"DDP's gradient all-reduces are not traced ({type(e).__name__}: {e})")


class _PatchingLoader(importlib.abc.Loader):
    """The module's own loader, then our patch once its code has run."""

    def __init__(self, inner, after):
        self.inner, self.after = inner, after

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.after(module)

    def __getattr__(self, name):  # get_source, get_filename, ... for inspect and linecache
        return getattr(self.inner, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds distributed_c10d (and DDP's module) through the other finders
    and hands back their spec with a loader that patches after running it."""

    TARGETS = {C10D: _patch, DDP_MODULE: _patch_ddp}

    def find_spec(self, name, path, target=None):
        after = self.TARGETS.get(name)
        if after is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, after)
                return spec
        return None


def install() -> None:
    """Hooks torch.distributed now or when it is imported. Never raises."""
    global _finder
    note_started()
    try:
        c10d = sys.modules.get(C10D)
        if c10d is not None:
            _patch(c10d)
        if DDP_MODULE in sys.modules:
            _patch_ddp(sys.modules[DDP_MODULE])
        if (c10d is None or DDP_MODULE not in sys.modules) and _finder is None:
            _finder = _PatchOnImport()
            sys.meta_path.insert(0, _finder)
        if c10d is not None and c10d.is_initialized():
            _group_ready(sys.modules["torch.distributed"])
    except Exception as e:
        warn(f"torch.distributed is not traced ({type(e).__name__}: {e})")
