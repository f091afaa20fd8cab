"""Checkpoint work as events (``DFTRACER_TRACE_CHECKPOINT``, on unless
``0``/``false``/``no``/``off``), each one complete event on the thread that
called it, cat ``checkpoint``:

- ``torch.save`` and ``torch.load``; the ``state_dict()`` and
  ``load_state_dict()`` of a module or an optimizer, named
  ``<Class>.state_dict``, ``<Class>.load_state_dict``
  (``GPT2LMHeadModel.state_dict``, ``AdamW.load_state_dict``);
- safetensors' ``save_file``, ``load_file``, ``save``, ``load``,
  ``save_model``, ``load_model`` (``safetensors.save_file``);
- ``torch.distributed.checkpoint``'s ``save``, ``async_save``, ``load``
  (``dcp.save``; an ``async_save`` is its synchronous part, the staging);
- Hugging Face's ``PreTrainedModel.save_pretrained``
  (``GPT2LMHeadModel.save_pretrained``).

None inside a DataLoader's batch fetch: a dataset that loads its samples
with ``torch.load`` loads data.

Each library's functions are wrapped right after it is imported.

Without them a checkpoint between two training steps read as the loop's
work: ``model.state_dict()`` detaches every parameter with grad mode on,
ops the LibTorch observer writes as forward, so the next step began there
and held the whole save (its file writes as data I/O, the pickling as
untraced time), and was flagged slow. The analyzer gives checkpoint events
their own category, and neither they nor the work inside them begin or end
a step (docs/analyzer.md).

Only a thread's outermost such call is an event: a module's ``state_dict``
calls each child's, ``save_pretrained`` calls ``state_dict`` and
safetensors. Code that bound ``torch.save`` before tracing started (``from
torch import save``) keeps torch's function and records nothing. Inside code Dynamo
compiles the wrappers call torch's function as it is (no graph break, no
guard on dftracer's state).
"""
from __future__ import annotations

import functools
import sys
import threading

from .. import _core
from .env_switch import on_unless_off

CHECKPOINT_ENV = "DFTRACER_TRACE_CHECKPOINT"
_CAT = "checkpoint"

_tls = threading.local()  # .open: a checkpoint call is open on the thread
_originals: dict = {}  # (owner, attribute) -> torch's function, while installed
_lock = threading.Lock()
_installing = False  # install() ran and uninstall() has not: libraries imported later are wrapped


def _never_compiling() -> bool:
    return False


_is_compiling = _never_compiling


def _wrap(fn, name_of):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _is_compiling() or getattr(_tls, "open", False):  # compiled, or inside another: its work
            return fn(*args, **kwargs)
        try:
            t0 = _core.ticks() if _core.enabled() else None
        except Exception:  # noqa: BLE001  (tracing never breaks the traced program)
            t0 = None
        if t0 is None:
            return fn(*args, **kwargs)
        _tls.open = True
        try:
            return fn(*args, **kwargs)
        finally:
            _tls.open = False
            try:
                if _core.enabled():
                    _core.record_ticks(_core.intern(name_of(args)), _core.intern(_CAT), t0, _core.ticks())
            except Exception:  # noqa: BLE001
                pass

    wrapper.__dftracer_wrapped__ = fn
    return wrapper


_WRAPPER_CODE = _wrap(lambda: None, None).__code__


def _data_fetch(fn):
    """A DataLoader's batch fetch: a dataset loading its shards with
    torch.load or safetensors in `__getitem__` loads data, no checkpoint."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_tls, "open", False):
            return fn(*args, **kwargs)
        _tls.open = True
        try:
            return fn(*args, **kwargs)
        finally:
            _tls.open = False

    wrapper.__dftracer_wrapped__ = fn
    return wrapper


def _named(name):
    return lambda args: name


def _method(suffix):
    # The instance's class: the model's or optimizer's own name.
    return lambda args: (type(args[0]).__name__ if args else "?") + suffix


def _functions(module, prefix, names):
    return [(module, n, _named(prefix + n)) for n in names]


def _torch_targets(torch):
    return [
        (torch, "save", _named("torch.save")),
        (torch, "load", _named("torch.load")),
        (torch.serialization, "save", _named("torch.save")),
        (torch.serialization, "load", _named("torch.load")),
        (torch.nn.Module, "state_dict", _method(".state_dict")),
        (torch.nn.Module, "load_state_dict", _method(".load_state_dict")),
        (torch.optim.Optimizer, "state_dict", _method(".state_dict")),
        (torch.optim.Optimizer, "load_state_dict", _method(".load_state_dict")),
    ]


def _dcp_targets(dcp):
    # Re-exported from the modules that define them: each owner is wrapped.
    import importlib

    out = []
    for owner in (dcp, importlib.import_module(dcp.__name__ + ".state_dict_saver"),
                  importlib.import_module(dcp.__name__ + ".state_dict_loader")):
        out += _functions(owner, "dcp.", [n for n in ("save", "async_save", "load") if hasattr(owner, n)])
    return out


# Module -> the checkpoint functions it defines, wrapped right after it is
# imported. safetensors is the format of Hugging Face's weights, and
# `save_pretrained` does tensor work of its own (views that find tied
# weights) between its `state_dict()` and its file: without an event around
# it those ops read as forward work and began the next training step.
_LIBRARIES = {
    "torch": _torch_targets,
    "safetensors.torch": lambda m: _functions(m, "safetensors.", ("save_file", "load_file", "save", "load",
                                                                   "save_model", "load_model")),
    "torch.distributed.checkpoint": _dcp_targets,
    "transformers.modeling_utils": lambda m: [(m.PreTrainedModel, "save_pretrained", _method(".save_pretrained"))],
    # No event: inside, the functions above record nothing (in a worker process and with num_workers=0).
    "torch.utils.data._utils.fetch": lambda m: [(getattr(m, c), "fetch", None) for c in
                                                ("_MapDatasetFetcher", "_IterableDatasetFetcher") if hasattr(m, c)],
}

_wrappers: dict = {}  # id(function) -> its wrapper: one per function whatever the owners


def _install_library(module_name) -> None:
    global _is_compiling
    with _lock:
        if not _installing:
            return
        module = sys.modules[module_name]
        if module_name == "torch":
            _is_compiling = getattr(getattr(module, "compiler", None), "is_compiling", _never_compiling)
        for owner, attr, name_of in _LIBRARIES[module_name](module):
            fn = getattr(owner, attr, None)
            if fn is None or getattr(fn, "__dftracer_wrapped__", None) is not None:
                continue
            w = _wrappers.get(id(fn))
            if w is None or w.__dftracer_wrapped__ is not fn:
                w = _wrappers[id(fn)] = _wrap(fn, name_of) if name_of is not None else _data_fetch(fn)
            setattr(owner, attr, w)
            _originals[(owner, attr)] = fn
    if module_name == "torch":
        from .import_hooks import when_imported

        when_imported("torch._dynamo", _skip_in_dynamo)  # (never imported here: seconds)


def _skip_in_dynamo() -> None:
    """Dynamo skips the wrapper's frames as it skips torch's own functions."""
    from . import torch_compat

    torch_compat.dynamo_skip_code(_WRAPPER_CODE, "a compiled function calling torch.save, torch.load or a "
                                  "state_dict method traces into dftracer's wrapper around it")


def install() -> bool:
    """Wraps each library's checkpoint functions once it is imported (now,
    or right after the program imports it) unless DFTRACER_TRACE_CHECKPOINT
    turns them off; True when they will be."""
    if not on_unless_off(CHECKPOINT_ENV):
        return False
    global _installing
    try:
        from .import_hooks import when_imported

        _installing = True
        for name in _LIBRARIES:
            when_imported(name, functools.partial(_install_library, name))
    except Exception as e:  # noqa: BLE001  (tracing never breaks the traced program)
        from .diagnostics import warn

        warn(f"checkpoint events not installed ({type(e).__name__}: {e}); a save between steps may read as a step's")
        return False
    return True


def uninstall() -> None:
    """Puts the original functions back (one another library wrapped since
    stays); a library imported later is left alone."""
    global _installing
    with _lock:
        _installing = False
        for (owner, attr), fn in list(_originals.items()):
            if getattr(getattr(owner, attr, None), "__dftracer_wrapped__", None) is fn:
                setattr(owner, attr, fn)
        _originals.clear()
        _wrappers.clear()


def installed() -> bool:
    return bool(_originals) and "torch" in sys.modules
