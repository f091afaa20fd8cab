"""Eager ATen op tracing: LibTorch's RecordFunction observer as a Python switch.

The capture backend (``dftracer.python.dynamo``) sees only what Dynamo
captures. This switch records every ATen op that runs outside instrumented
graphs -- code between graph breaks, eager models, the autograd engine's
work for them -- into the same trace (cat ``aten``), on the thread that ran
it::

    from dftracer.python import trace_eager

    trace_eager()                      # on from now on
    trace_eager(False)                 # off again
    with trace_eager(shapes=True):     # on inside, previous state after
        model(x).sum().backward()

``trace_eager(memory=True)`` (or ``DFTRACER_MEMORY=1``) also records the
allocations and frees of torch's allocators made on this thread (and the
threads torch hands its work to): per op ``alloc_bytes``/``free_bytes``
args and a ``memory`` counter track of the bytes allocated per device.
``trace_eager(flops=True)`` (or ``DFTRACER_EAGER_FLOPS=1``) writes each
matrix multiply's, convolution's and attention kernel's FLOPs as
``args.flops``, as ``torch.utils.flop_counter.FlopCounterMode`` counts them,
for ``dftracer-analyze summary --efficiency``.

or ``DFTRACER_TRACE_EAGER=1`` (``=shapes`` for input shapes) in the
environment, applied as soon as both dftracer.python and torch are imported,
in either order. Ops are recorded while tracing is on (``DFTRACER_ENABLE=1``
or ``dftracer.initialize_log``).

Importing this module never imports torch: ``trace_eager`` imports it on
first use (the observer extension needs torch's libraries loaded first).
"""
from __future__ import annotations

import os
import threading

from ..diagnostics import warn
from ..import_hooks import when_imported

__all__ = ["trace_eager", "eager_enabled", "memory_enabled", "TRACE_EAGER_ENV", "MEMORY_ENV", "MODULES_ENV",
           "EAGER_FLOPS_ENV"]

TRACE_EAGER_ENV = "DFTRACER_TRACE_EAGER"
MEMORY_ENV = "DFTRACER_MEMORY"
MODULES_ENV = "DFTRACER_EAGER_MODULES"
EAGER_FLOPS_ENV = "DFTRACER_EAGER_FLOPS"

_lock = threading.RLock()
_ext = None


def _load():
    """The observer extension dftracer._eager, loaded after torch."""
    global _ext
    if _ext is not None:
        return _ext
    with _lock:
        if _ext is not None:
            return _ext
        import torch  # noqa: F401  (its libraries must be loaded before _eager)

        try:
            from ... import _eager
        except ImportError as e:
            raise RuntimeError(
                "dftracer: eager op tracing needs the LibTorch observer (dftracer._eager), and this "
                "dftracer has none or it does not load with this torch "
                f"{getattr(torch, '__version__', '?')} ({e}); reinstall dftracer with torch present "
                "in the build's Python: pip install --no-build-isolation ."
            ) from e
        _ext = _eager
        from .torch_profiler_aside import install

        install(_ext, _lock)
        # The optimizer step hooks number each optimizer's step scope (args.opt:
        # a GAN's two optimizers make one step). torch.optim is loaded with
        # torch, so this imports nothing more.
        from ..compile import optimizer_events

        optimizer_events.install()
        # Both matter only once torch._dynamo is in use (no instrumented graph
        # and no compile can exist before): a pure eager program pays no probe
        # call per op.
        when_imported("torch._dynamo", _on_dynamo_import)  # (never imported here: seconds)
        return _ext


def _on_dynamo_import() -> None:
    _install_graph_probe(_ext)
    _pause_while_compiling()


def _install_graph_probe(ext) -> None:
    """Lets the observer skip ops inside the capture backend's instrumented
    graphs (they are recorded there already), through the capture hooks'
    per-thread count of open graph calls, and count what a graph node
    allocates on that node's event, when dftracer._core exports them."""
    try:
        from ... import _core
    except ImportError:
        return
    probe = getattr(_core, "dynamo_depth_fn", None)
    if probe is not None:
        ext.set_graph_depth_probe(probe)
    # Memory capture: what a graph node allocates counts on the node's event.
    mem_probe = getattr(_core, "dynamo_memory_fn", None)
    if mem_probe is not None and hasattr(ext, "set_graph_memory_probe"):
        ext.set_graph_memory_probe(mem_probe)


_compile_hooks_installed = False


def _pause_while_compiling() -> None:
    """Pauses recording on the compiling thread while torch.compile compiles
    (Dynamo's compile callbacks, also for the lazy backward compile): the ops
    it runs on fake tensors to trace graphs are not the program's."""
    global _compile_hooks_installed
    with _lock:
        if _compile_hooks_installed:
            return
        from ..torch_compat import compile_callback_handler

        callback_handler = compile_callback_handler()
        if callback_handler is None:  # torch_compat said so once
            _compile_hooks_installed = True
            return
        ext = _ext

        def on_start(_args):
            ext.suspend_this_thread()

        def on_end(_args):
            ext.resume_this_thread()

        def register():
            if on_start not in callback_handler.start_callbacks:
                callback_handler.register_start_callback(on_start)
            if on_end not in callback_handler.end_callbacks:
                callback_handler.register_end_callback(on_end)

        # torch._dynamo.reset() clears every compile callback (tests and
        # notebooks call it often); put ours back after each clear, on this
        # handler object only.
        original_clear = callback_handler.clear

        def clear_and_keep_ours():
            original_clear()
            register()

        callback_handler.clear = clear_and_keep_ours
        register()
        _compile_hooks_installed = True


class trace_eager:
    """Turns eager ATen op tracing on (or off with ``trace_eager(False)``).

    Takes effect when called. Used as a context manager, the previous state
    (on/off, shapes) comes back at the end of the ``with`` block.
    ``shapes=True`` also records each op's input sizes -- it makes the
    dispatcher box every op's arguments, several times the observer's cost.
    ``memory=True`` turns allocation capture on for the calling thread,
    ``memory=False`` off; ``None`` (the default) leaves it as it is.
    ``flops=True`` writes ``args.flops`` on the ops FlopCounterMode counts
    (it boxes every op's arguments too; docs/performance.md); ``None`` (the
    default) takes ``DFTRACER_EAGER_FLOPS`` (1/true/yes/on: on).
    """

    __slots__ = ("_previous",)

    def __init__(self, enabled: bool = True, *, shapes: bool = False, memory: bool | None = None,
                 flops: bool | None = None):
        if not isinstance(enabled, bool):
            raise TypeError(f"trace_eager: enabled must be a bool, got {type(enabled).__name__}")
        if not isinstance(shapes, bool):
            raise TypeError(f"trace_eager: shapes must be a bool, got {type(shapes).__name__}")
        if memory is not None and not isinstance(memory, bool):
            raise TypeError(f"trace_eager: memory must be a bool or None, got {type(memory).__name__}")
        if flops is not None and not isinstance(flops, bool):
            raise TypeError(f"trace_eager: flops must be a bool or None, got {type(flops).__name__}")
        if flops is None:
            flops = os.environ.get(EAGER_FLOPS_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        ext = _load()
        with _lock:
            self._previous = (ext.enabled(), ext.shapes_enabled(), ext.memory_enabled(), ext.flops_enabled())
            if memory is not None:
                ext.enable_memory(memory)
            if enabled:
                ext.enable(shapes=shapes, flops=flops)
            else:
                ext.disable()
            _sync_hooks(ext)

    def __enter__(self) -> "trace_eager":
        return self

    def __exit__(self, *exc) -> bool:
        was_on, had_shapes, had_memory, had_flops = self._previous
        with _lock:
            if bool(_ext.memory_enabled()) != had_memory:
                _ext.enable_memory(had_memory)
            if was_on:
                _ext.enable(shapes=had_shapes, flops=had_flops)
            else:
                _ext.disable()
            _sync_hooks(_ext)
        return False

    def __repr__(self) -> str:
        return f"trace_eager(enabled={eager_enabled()})"


def eager_enabled() -> bool:
    """True while eager ATen ops are being recorded."""
    return _ext is not None and bool(_ext.enabled())


def memory_enabled() -> bool:
    """True while allocation capture is on (``trace_eager(memory=True)``)."""
    return _ext is not None and bool(_ext.memory_enabled())


# ------------------------------------------------- DFTRACER_TRACE_EAGER


def _apply_env_now() -> None:
    try:
        ext = _load()
        ext.enable_from_env()  # the C++ side parses and warns
        _sync_hooks(ext)
    except Exception as e:  # tracing never breaks the traced program
        warn(f"{TRACE_EAGER_ENV} ignored: {e}")


# ------------------------------------------------- module attribution


def _modules_wanted() -> bool:
    """DFTRACER_EAGER_MODULES: on unless 0/false/no/off (one warning for an
    unknown value, then the default)."""
    value = os.environ.get(MODULES_ENV)
    if value is None:
        return True
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("", "0", "false", "no", "off"):
        return False
    global _warned_modules_env
    if not _warned_modules_env:
        _warned_modules_env = True
        warn(f"{MODULES_ENV}={value!r} is not one of 1/true/yes/on, 0/false/no/off: module attribution stays on")
    return True


_warned_modules_env = False


def _sync_hooks(ext) -> None:
    """The module hooks are registered exactly while the observer records
    ops and module attribution is wanted; the backward wrapper and the
    DataLoader threads' wrapper while it records ops."""
    from . import backward_phase, data_threads, modules

    on = ext.enabled()
    for hook, wanted, what in ((backward_phase, on and hasattr(ext, "set_in_backward"), "backward phase"),
                               (data_threads, on and hasattr(ext, "set_data_thread"), "data-loading threads"),
                               (modules, on and _modules_wanted() and hasattr(ext, "set_module"),
                                "module attribution")):
        try:
            if wanted:
                hook.install(ext)
            else:
                hook.uninstall()
        except Exception as e:  # noqa: BLE001  (tracing never breaks the traced program)
            warn(f"eager {what} unavailable: {e}")


def _env_on(name: str) -> bool:
    value = os.environ.get(name)
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def _apply_env_at_import() -> None:
    if not (_env_on(TRACE_EAGER_ENV) or _env_on(MEMORY_ENV)):
        return
    when_imported("torch", _apply_env_now)


_apply_env_at_import()
