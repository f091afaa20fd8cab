"""Python's garbage collections as events (``DFTRACER_TRACE_GC``, on unless
``0``/``false``/``no``/``off``).

Each collection while tracing is on is a complete event on the thread that
ran it: cat ``gc``, name ``gc.gen0``/``gc.gen1``/``gc.gen2`` (the oldest
generation collected), args ``generation``, ``collected`` and
``uncollectable``. The recorder is ``_core.gc_callback`` in ``gc.callbacks``
(a C function: no Python frame per collection); installing it twice is a
no-op, and a forked child keeps it (and its own trace file)."""
from __future__ import annotations

import gc

from .. import _core
from .env_switch import on_unless_off

GC_ENV = "DFTRACER_TRACE_GC"


def enabled_by_env() -> bool:
    return on_unless_off(GC_ENV)


def install() -> bool:
    """Adds the recorder to gc.callbacks unless DFTRACER_TRACE_GC turns it
    off; True when it is there."""
    callback = getattr(_core, "gc_callback", None)
    if callback is None or not enabled_by_env():
        return False
    if not any(c is callback for c in gc.callbacks):
        gc.callbacks.append(callback)
    return True


def uninstall() -> None:
    callback = getattr(_core, "gc_callback", None)
    gc.callbacks[:] = [c for c in gc.callbacks if c is not callback]
