"""A DataLoader's own threads: its worker processes' and its pin-memory thread.

Their ops are the dataset's transforms and copies (``torch.from_numpy(x).mean(0)``
in a ``__getitem__``, ``pin_memory``), which run with grad mode on outside any
model call, so the observer would write them as ``forward``. torch names those
threads when they start, ``torch.multiprocessing._set_thread_name("pt_data_worker")``
in ``_worker_loop`` and ``"pt_data_pin"`` in the pin-memory loop, both through
the module attribute at call time: a wrapper there marks the thread
(``_eager.set_data_thread``), whose ops then carry no phase. The analyzer
also knows a worker by that thread name (no steps, not in the model's run).
A forked worker inherits the wrapper; a spawned one installs it when its
tracer starts, as the parent did.
"""
from __future__ import annotations

import functools

__all__ = ["install", "uninstall", "installed"]

DATA_THREAD_NAMES = frozenset({"pt_data_worker", "pt_data_pin"})

_original = None  # torch.multiprocessing._set_thread_name while installed


def _wrap(fn, set_data_thread):
    @functools.wraps(fn)
    def wrapper(name, *args, **kwargs):
        out = fn(name, *args, **kwargs)
        if name in DATA_THREAD_NAMES:
            try:
                set_data_thread()
            except Exception:  # noqa: BLE001  (tracing never breaks the traced program)
                pass
        return out

    wrapper.__dftracer_wrapped__ = fn
    return wrapper


def install(ext) -> None:
    """Wraps torch.multiprocessing._set_thread_name (idempotent; nothing where torch has none)."""
    global _original
    if _original is not None:
        return
    from .. import torch_compat

    _original = torch_compat.wrap_thread_namer(lambda fn: _wrap(fn, ext.set_data_thread))


def uninstall() -> None:
    global _original
    if _original is None:
        return
    from .. import torch_compat

    original = _original
    torch_compat.wrap_thread_namer(lambda _: original)
    _original = None


def installed() -> bool:
    return _original is not None
