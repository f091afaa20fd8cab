"""Compile time in the trace: torch.compile's own phase timers as events.

torch times each phase of a compile with ``dynamo_timed``; every such phase
starts and ends through one logger, on the compiling thread, nested like a
call stack (torch_compat.wrap_compile_phases hooks it). Each phase that runs
while tracing is on becomes a complete event, cat ``compile``, on that
thread, spanning the phase (our clock, read outside torch's bookkeeping, so
a phase's event contains its sub-phases' events). Names:

  dynamo.trace       Dynamo's compile of one frame (torch: entire_frame_compile):
                     args frame, file, line, compile_id; when torch compiles
                     its inlining wrapper (external_utils ``inner``, around
                     a module forward defined in torch such as
                     nn.Sequential's), the function it wraps
  recompile          the same compile when it is a recompile (torch's
                     outermost "dynamo" phase, around dynamo.trace): args
                     reason (torch's recompile reason), frame, compile_id
  backend_compile    the backend call (OutputGraph.call_user_compiler); the
                     lazy backward compile at the first .backward() is one
                     too, with args phase "backward"
  aot_autograd       AOT autograd (create_aot_dispatcher_function)
  dftracer.instrument  our graph pass on one ATen graph (recorded by the
                     capture backend itself, ``instrumented()``)
  anything else      torch's own phase name (bytecode_tracing, build_guards,
                     aot_trace_joint_graph, inductor_compile, ...)

Every event has ``compile_id``; while a ``Dynamo.compile`` call is active on
the thread its tags (``step``, ``epoch``, ...) are added. Compiles are rare
(tens of phases each), so this is plain Python; it never raises into torch.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, Iterator

from .. import diagnostics, torch_compat
from ..diagnostics import warn
from .dynamo_graph_call import _active_tags
from .dynamo_hooks import _core

CAT_COMPILE = "compile"

# torch's phase name -> (our name, extra args)
_RENAMED = {
    "entire_frame_compile": ("dynamo.trace", None),
    "backend_compile": ("backend_compile", None),
    "entire_backward_compile": ("backend_compile", {"phase": "backward"}),
    "create_aot_dispatcher_function": ("aot_autograd", None),
}
_FRAME = "entire_frame_compile"  # recorded once its frame's metrics exist (at "dynamo"'s end)
_OUTER = "dynamo"  # torch's outermost phase of a frame compile: a recompile's span


class _Phases(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[str, int, str, dict]] = []  # (torch name, start ticks, compile id, tags)
        self.model: int | None = None  # id of the model whose frame is compiling (see _graphs)
        self.ours = False  # a dftracer backend compiled the graph of the backend_compile in progress
        self.frame: tuple[int, int, dict] | None = None  # the last entire_frame_compile: t0, t1, tags
        # the user's function when the frame compiling is torch's inlining wrapper
        self.inlined: tuple[str, str, int] | None = None


_phases = _Phases()
# Models (torch.compile(module), Dynamo.compile(module)) whose frames were
# compiled while tracing: id -> [class name, graphs compiled]. At finalize a
# model with none is named (nothing of it is traced).
_graphs: dict[int, list] = {}
_BACKEND = "backend_compile"  # torch's phase around one backend call (call_user_compiler)
_installed = False
_install_lock = threading.Lock()
_warned = False


def install() -> None:
    """Hooks torch's compile phases (once per process; idempotent)."""
    global _installed
    if _installed or _core is None:
        return
    with _install_lock:
        if not _installed:
            _installed = torch_compat.wrap_compile_phases(_on_start, _on_end)
            if _installed:
                diagnostics.before_finalize(at_finalize)


def _failed(e: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        warn(f"a compile phase event could not be recorded ({type(e).__name__}: {e}); compile events may be missing")


def _tags() -> dict:
    """The active Dynamo.compile call's tags on this thread, as a dict."""
    tags_id = _active_tags.tags
    if not tags_id:
        return {}
    text = _core.string(tags_id)
    return json.loads("{" + text + "}") if text else {}


def _record(name: str, t0: int, t1: int, args: dict) -> None:
    _core.record_ticks(_core.intern(name), _core.intern(CAT_COMPILE), t0, t1, args)


def _on_start(phase: str) -> None:
    try:
        if _core.enabled():
            if phase == _FRAME:
                _phases.inlined = torch_compat.inlined_user_function()
                _phases.model = _note_model()
            elif phase == _BACKEND:
                _phases.ours = False
                if _phases.model in _graphs:
                    _graphs[_phases.model][1] += 1
            _phases.stack.append((phase, _core.ticks(), torch_compat.current_compile_id(), _tags()))
    except Exception as e:
        _failed(e)


def _on_end(phase: str) -> None:
    try:
        t1 = _core.ticks()
        stack = _phases.stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == phase:
                break
        else:
            return  # started while tracing was off
        _, t0, compile_id, tags = stack[i]
        del stack[i:]  # as torch does: phases left open inside it are dropped
        args = {"compile_id": compile_id, **tags}
        if phase == _BACKEND and not _phases.ours:
            _foreign_backend()
        if phase == _FRAME:
            _phases.frame = (t0, t1, args)
        elif phase == _OUTER:
            _end_frame_compile(t0, t1, args)
        else:
            name, extra = _RENAMED.get(phase, (phase, None))
            _record(name, t0, t1, {**args, **extra} if extra else args)
    except Exception as e:
        _failed(e)


def _end_frame_compile(t0: int, t1: int, args: dict) -> None:
    """dynamo.trace (and recompile) of the frame compile that just ended,
    with the frame and reason torch recorded for it."""
    frame, _phases.frame = _phases.frame, None
    metrics = torch_compat.frame_compile_metrics(args["compile_id"])
    code, file, line, reason = metrics or ("", "", -1, "")
    inlined, _phases.inlined = _phases.inlined, None
    if inlined is not None:  # torch's metrics name its wrapper `inner`: name what it inlined
        code, file, line = inlined
    if frame is not None:
        f0, f1, fargs = frame
        _record("dynamo.trace", f0, f1, {**fargs, "frame": code, "file": file, "line": line})
    if reason:
        _record("recompile", t0, t1, {**args, "reason": reason, "frame": code})


@contextlib.contextmanager
def instrumented(graph: int, phase: str) -> Iterator[None]:
    """A ``dftracer.instrument`` event around our graph pass on one graph."""
    t0 = _core.ticks() if _core is not None and _core.enabled() else 0
    try:
        yield
    finally:
        if t0:
            try:
                args: dict[str, Any] = {"graph": graph, "phase": phase,
                                        "compile_id": torch_compat.current_compile_id(), **_tags()}
                _record("dftracer.instrument", t0, _core.ticks(), args)
            except Exception as e:
                _failed(e)


def ours() -> None:
    """Called by dftracer's backends: the graph being compiled is traced."""
    _phases.ours = True


def _note_model() -> int | None:
    from . import dynamo_modules

    model = dynamo_modules.compiled_model()
    if model is None:
        return None
    _graphs.setdefault(id(model), [type(model).__name__, 0])
    return id(model)


_said: set[str] = set()
_named: set[int] = set()  # models at_finalize named


def _foreign_backend() -> None:
    from ..eager import eager_enabled  # trace_eager records such graphs' ATen ops / kernels

    if "foreign" not in _said and not eager_enabled():
        _said.add("foreign")
        warn("a torch.compile graph was compiled by a backend other than dftracer's (e.g. backend=\"inductor\"): "
             "nothing of it is traced; compile with backend=dftracer_inductor_backend or "
             "dftracer_dynamo_backend (dftracer.python) to trace its kernels or ops")


def at_finalize() -> None:
    """Names each compiled model for which torch captured no graph while
    tracing (Dynamo ran it eagerly: an nn.LSTM, torch.compile(DDP(...))):
    none of its ops is in the trace. Once per model."""
    try:
        from ..eager import eager_enabled

        if eager_enabled():  # their ops are recorded as eager ops
            return
        for key, (name, graphs) in list(_graphs.items()):
            if graphs == 0 and key not in _named:
                _named.add(key)
                warn(f"torch.compile captured no graph for {name}: Dynamo ran it eagerly, so none of its ops "
                     f"is traced; DFTRACER_TRACE_EAGER=1 traces them as eager ops")
    except Exception as e:  # noqa: BLE001 - finalize must go on
        _failed(e)
