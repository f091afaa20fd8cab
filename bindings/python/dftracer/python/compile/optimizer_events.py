"""Optimizer steps as events: `Optimizer.step#<Class>.step` (cat "torch", the
name torch's own record_function gives it) around every `optimizer.step()`,
from torch's global optimizer step hooks.

With the compile backends the optimizer runs eagerly and nothing else records
it: its time read as untraced, the report could not say how much of a step the
optimizer took, and the analyzer could not see where a step's work ends. The
LibTorch observer (trace_eager) already records torch's own scope, so while it
is on these hooks record no event: the pre hook only numbers the scope torch
has open (the observer writes its args.opt). The observer installs them when
it loads. Two Python calls per optimizer step; they never raise into the
training loop.

Each event carries `args.opt`: the optimizer instance's number in the order
of their first steps (0, 1, ...). With two optimizers per iteration (a GAN's
discriminator then generator) the analyzer sees the cycle and ends a step at
its last optimizer step only.

`GradScaler.step` (torch.amp's, torch >= 2.3, which torch.cuda.amp's and
torch.cpu.amp's inherit) is one event too, `GradScaler.step#<Class>.step`,
with the same `args.opt` and `args.skipped`: 1 when no optimizer pre-step
hook ran inside it, i.e. the gradients overflowed and the scaler did not call
the optimizer's step. Without it an iteration whose update was skipped (most
fp16 runs skip a few at the start) left no optimizer step, and the analyzer
read it and the next as one step. Skipped is told by the pre hook's
per-thread count, not by the scaler's found_inf tensor: reading that would be
one more op and a device sync. So it is 0 for a fused optimizer (`fused=True`:
the scaler always calls its step, whose kernel skips the update) and 1 for a
compiled optimizer step or one that is no torch.optim.Optimizer (no hook
runs); the analyzer reads only the event's span. With eager tracing on, the
scaler's step and update mark the thread as in the update (the observer's
set_in_update): their ops, the unscale and the scale's update, are optimizer
work, not forward. A GradScaler subclass's own `update` (FSDP's
ShardedGradScaler) is not marked.
"""
import functools
import itertools
import sys
import threading
import weakref

from ... import _core

_installed = False
_install_lock = threading.Lock()
_starts = threading.local()  # .stack: open steps' start ticks; .pre: pre hooks run
_CAT = "torch"
_numbers = weakref.WeakKeyDictionary()  # optimizer -> {"opt": n}
_next_number = itertools.count()


def _never_compiling() -> bool:
    return False


# torch.compiler.is_compiling once installed. Dynamo folds it to a constant
# True, so a compiled optimizer step leaves the hooks there and never reaches
# a call it cannot trace (the _core functions): no graph break.
_is_compiling = _never_compiling


def install() -> None:
    """Registers the hooks once (torch >= 2.0), from any number of threads;
    a no-op without them."""
    global _installed, _is_compiling
    with _install_lock:
        if _installed:
            return
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        except ImportError:
            return
        import torch

        _is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", _never_compiling)
        register_optimizer_step_pre_hook(_pre)
        register_optimizer_step_post_hook(_post)
        _wrap_scaler_step(torch)
        _installed = True


def _wrap_scaler_step(torch) -> None:
    cls = getattr(getattr(torch, "amp", None), "GradScaler", None)
    for attr, wrap in (("step", _scaler_step_wrapper), ("update", _scaler_update_wrapper)):
        fn = getattr(cls, attr, None)
        if fn is None or getattr(fn, "__dftracer_wrapped__", None) is not None:
            continue
        setattr(cls, attr, wrap(fn))
    try:  # the eager observer installs these before the program imports Dynamo, if it ever does
        from ..import_hooks import when_imported

        when_imported("torch._dynamo", _skip_in_dynamo)
    except Exception:  # noqa: BLE001  (the wrappers' own first calls still ask)
        pass


def _update_mark():
    """The LibTorch observer's update mark, set_in_update (while eager
    tracing is on: the scaler's ops, its unscale and its scale's update, are
    then optimizer work), else None. The caller restores the previous mark
    through the same function, even if eager tracing stopped meanwhile."""
    try:
        from .. import eager

        if eager.eager_enabled():
            return getattr(eager._ext, "set_in_update", None)
    except Exception:  # noqa: BLE001  (tracing never breaks the traced program)
        pass
    return None


def _set_mark(mark, on):
    """mark(on) (the previous mark), None when there is no mark or it failed."""
    if mark is None:
        return None
    try:
        return mark(on)
    except Exception:  # noqa: BLE001
        return None


def _scaler_step_wrapper(fn):
    @functools.wraps(fn)
    def step(scaler, optimizer, *args, **kwargs):
        if _is_compiling():  # a constant to Dynamo: torch's method as it is
            return fn(scaler, optimizer, *args, **kwargs)
        try:
            _skip_in_dynamo()
            pre = getattr(_starts, "pre", 0)
            t0 = _core.ticks() if _core.enabled() else None
        except Exception:  # noqa: BLE001
            t0 = None
        mark = _update_mark()
        was = _set_mark(mark, True)
        try:
            out = fn(scaler, optimizer, *args, **kwargs)
        finally:
            if was is not None:
                _set_mark(mark, was)
        if t0 is not None:
            try:
                if _core.enabled():
                    skipped = int(getattr(_starts, "pre", 0) == pre)
                    name = f"GradScaler.step#{type(optimizer).__name__}.step"
                    _core.record_ticks(_core.intern(name), _core.intern(_CAT), t0, _core.ticks(),
                                       {"opt": _number(optimizer)["opt"], "skipped": skipped})
            except Exception:  # noqa: BLE001
                pass
        return out

    step.__dftracer_wrapped__ = fn
    return step


def _scaler_update_wrapper(fn):
    @functools.wraps(fn)
    def update(scaler, *args, **kwargs):
        if _is_compiling():
            return fn(scaler, *args, **kwargs)
        try:
            _skip_in_dynamo()
        except Exception:  # noqa: BLE001
            pass
        mark = _update_mark()
        was = _set_mark(mark, True)
        try:
            return fn(scaler, *args, **kwargs)
        finally:
            if was is not None:
                _set_mark(mark, was)

    update.__dftracer_wrapped__ = fn
    return update


# Every wrapper's code objects (one per wrapper function, whatever it wraps).
_WRAPPER_CODES = tuple(w(lambda *a, **k: None).__code__ for w in (_scaler_step_wrapper, _scaler_update_wrapper))
_dynamo_skips_wrappers = False


def _skip_in_dynamo() -> None:
    """Dynamo skips the wrappers' frames as it skips torch's own methods: a
    compiled function calling scaler.step() breaks its graph there as
    before. Once Dynamo is imported (never imported here: seconds)."""
    global _dynamo_skips_wrappers
    if _dynamo_skips_wrappers or "torch._dynamo" not in sys.modules:
        return
    from .. import torch_compat

    for code in _WRAPPER_CODES:
        torch_compat.dynamo_skip_code(code, "a compiled function calling GradScaler.step or update traces into "
                                      "dftracer's wrapper around it (it then calls torch's method as it is)")
    _dynamo_skips_wrappers = True  # told, or said why not: once


def _number(optimizer) -> dict:
    """The optimizer's args: {"opt": its number}, given at its first step."""
    args = _numbers.get(optimizer)
    if args is None:  # its first step; setdefault: one number if two threads race
        args = _numbers.setdefault(optimizer, {"opt": next(_next_number)})
    return args


def _pre(optimizer, args, kwargs):
    if _is_compiling():  # nothing more while Dynamo traces the step
        return
    try:
        _starts.pre = getattr(_starts, "pre", 0) + 1
        if not _core.enabled():
            return
        from .. import eager
        if eager.eager_enabled():  # the observer records torch's scope: number it
            eager._ext.set_optimizer_number(_number(optimizer)["opt"])
            # step(closure): the closure's forward runs inside the scope (args: self first)
            closure = args[1] if len(args) > 1 else kwargs.get("closure")
            eager._ext.set_closure_step(callable(closure))
        else:
            stack = getattr(_starts, "stack", None)
            if stack is None or len(stack) > 64:  # a step that raised never popped
                stack = _starts.stack = []
            stack.append(_core.ticks())
    except Exception:  # the hook must never break optimizer.step()
        pass


def _post(optimizer, args, kwargs):
    if _is_compiling():
        return
    try:
        stack = getattr(_starts, "stack", None)
        if not stack:
            return
        t0 = stack.pop()
        if _core.enabled():
            t1 = _core.ticks()
            name = f"Optimizer.step#{type(optimizer).__name__}.step"
            _core.record_ticks(_core.intern(name), _core.intern(_CAT), t0, t1, _number(optimizer))
    except Exception:
        pass
