"""The phase of what ``loss.backward()`` runs before its engine starts.

``Tensor.backward`` makes the seed gradient (``aten::ones_like`` of a scalar
loss) in Python, with grad mode on and outside any autograd node, so the
observer would write it as ``forward``. While tracing is on, a wrapper around
``Tensor.backward`` marks the thread while the call runs
(``_eager.set_in_backward``): its outermost grad-mode-on work is then
``backward``. The mark is a byte of the observer's per-thread state that the
phase decision already reads; the record path pays nothing more. The
marked span is one event, ``Tensor.backward`` (phase backward): the Python
time of the call that no node holds is backward time. Per backward
call: one Python frame, ``torch.compiler.is_compiling()`` and two C calls
(docs/performance.md).

``Tensor.backward`` and not ``torch.autograd.backward``/``grad``: Dynamo
handles a tensor's ``backward`` method by name, while it knows those functions
by identity (a wrapper in their place changes what it traces). So the seed of
a direct ``torch.autograd.backward(...)`` or ``grad(...)`` call stays
``forward``. Dynamo is told to skip the wrapper's frame (as it skips torch's
own files), so a compiled function that calls ``loss.backward()`` breaks its
graph exactly as without the wrapper.
"""
from __future__ import annotations

import functools

__all__ = ["install", "uninstall", "installed"]

_original = None  # torch's Tensor.backward while installed


def _wrap(fn, set_in_backward, is_compiling):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if is_compiling():  # a constant to Dynamo: torch's method as it is
            return fn(*args, **kwargs)
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


_WRAPPER_CODE = _wrap(None, None, None).__code__  # every wrapper's code object


def _skip_in_dynamo() -> None:
    """Dynamo compiles the frames a compiled function's eager parts call,
    except torch's own; the wrapper is one more to skip. Without the means
    to, the wrapper is removed (the seed is then forward, as without it)."""
    from .. import torch_compat

    if not torch_compat.dynamo_skip_code(_WRAPPER_CODE):
        uninstall()


def install(ext) -> None:
    """Wraps Tensor.backward (idempotent)."""
    global _original
    if _original is not None:
        return
    import torch

    fn = torch.Tensor.backward
    torch.Tensor.backward = _wrap(fn, ext.set_in_backward, torch.compiler.is_compiling)
    _original = fn
    from ..import_hooks import when_imported

    when_imported("torch._dynamo", _skip_in_dynamo)  # (never imported here: seconds)


def uninstall() -> None:
    """Puts torch's method back (left alone when another library wrapped it since)."""
    global _original
    if _original is None:
        return
    import torch

    if getattr(torch.Tensor.backward, "__dftracer_wrapped__", None) is _original:
        torch.Tensor.backward = _original
    _original = None


def installed() -> bool:
    return _original is not None
