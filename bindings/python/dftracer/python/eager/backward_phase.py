"""The phase of what a backward call runs before its engine starts.

``loss.backward()`` (``torch.autograd.backward``) and ``torch.autograd.grad``
make the seed gradient (``aten::ones_like`` of a scalar loss) in Python, with
grad mode on and outside any autograd node, so the observer would write it as
``forward``. While one of them runs, this wrapper marks the thread
(``_eager.set_in_backward``): its outermost grad-mode-on work is then
``backward``. The mark is a byte of the observer's per-thread state that the
phase decision already reads; the record path pays nothing more. Per backward
call: one Python call frame and two C calls (docs/performance.md).

``Tensor.backward`` calls ``torch.autograd.backward`` through the module's
attribute, so it goes through the wrapper; code that bound the function
before tracing started (``from torch.autograd import backward``) does not.
"""
from __future__ import annotations

import functools

__all__ = ["install", "uninstall", "installed"]

_originals = None  # {name: torch's function} while installed


def _wrap(fn, set_in_backward):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            was = set_in_backward(True)
        except Exception:  # noqa: BLE001  (tracing never breaks the traced program)
            was = None
        try:
            return fn(*args, **kwargs)
        finally:
            if was is not None:
                set_in_backward(was)

    wrapper.__dftracer_wrapped__ = fn
    return wrapper


def install(ext) -> None:
    """Wraps torch.autograd.backward and grad (idempotent)."""
    global _originals
    if _originals is not None:
        return
    import torch.autograd as autograd

    originals = {}
    for name in ("backward", "grad"):
        fn = getattr(autograd, name)
        originals[name] = fn
        setattr(autograd, name, _wrap(fn, ext.set_in_backward))
    _originals = originals


def uninstall() -> None:
    """Puts torch's functions back (those another library wrapped since stay as they are)."""
    global _originals
    if _originals is None:
        return
    import torch.autograd as autograd

    for name, fn in _originals.items():
        if getattr(getattr(autograd, name), "__dftracer_wrapped__", None) is fn:
            setattr(autograd, name, fn)
    _originals = None


def installed() -> bool:
    return _originals is not None
