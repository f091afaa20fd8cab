"""Optimizer steps as events: `Optimizer.step#<Class>.step` (cat "torch", the
name torch's own record_function gives it) around every `optimizer.step()`,
from torch's global optimizer step hooks.

With the compile backends the optimizer runs eagerly and nothing else records
it: its time read as untraced, the report could not say how much of a step the
optimizer took, and the analyzer could not see where a step's work ends. The
LibTorch observer (trace_eager) already records torch's own scope, so while it
is on these hooks record nothing. Two Python calls per optimizer step; they
never raise into the training loop.
"""
import threading

from ... import _core

_installed = False
_starts = threading.local()
_CAT = "torch"


def install() -> None:
    """Registers the hooks once (torch >= 2.0); a no-op without them."""
    global _installed
    if _installed:
        return
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    except ImportError:
        return
    register_optimizer_step_pre_hook(_pre)
    register_optimizer_step_post_hook(_post)
    _installed = True


def _recording() -> bool:
    if not _core.enabled():
        return False
    from .. import eager
    if eager.eager_enabled():
        return False
    import torch
    return not torch.compiler.is_compiling()


def _pre(optimizer, args, kwargs):
    try:
        if _recording():
            stack = getattr(_starts, "stack", None)
            if stack is None or len(stack) > 64:  # a step that raised never popped
                stack = _starts.stack = []
            stack.append(_core.ticks())
    except Exception:  # the hook must never break optimizer.step()
        pass


def _post(optimizer, args, kwargs):
    try:
        stack = getattr(_starts, "stack", None)
        if not stack:
            return
        t0 = stack.pop()
        if _core.enabled():
            name = f"Optimizer.step#{type(optimizer).__name__}.step"
            _core.record_ticks(_core.intern(name), _core.intern(_CAT), t0, _core.ticks(), None)
    except Exception:
        pass
