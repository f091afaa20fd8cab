"""Every private PyTorch name the Python package uses, in one place.

Checked against torch 2.13.0. torch's underscore modules change between
releases without notice; each name below says what uses it and what a user
loses when it is gone. A name that cannot be found is reported once, as one
``[dftracer] warning:`` line (``diagnostics.warn``), and the feature that
needs it degrades -- the traced program never gets an exception from here.

Users of this module:
  dynamo_backend / dynamo_graph_pass   aot_autograd, boxed_nop, aot_eager, the
                                       min-cut partitioner, unwrap_disabled
  dynamo_metadata                      compile_reason, current_compile_id,
                                       root_frame_code, graph_break_counts
  dynamo_nodes                         OpOverload, HigherOrderOperator,
                                       size_hint
  dynamo_modules                       frame_locals, compiled_module_of
  eager                                compile_callback_handler
  compile_events                       wrap_compile_phases (torch's phase
                                       timers), frame_compile_metrics
  clock_sync                           default_store (the default process
                                       group's rendezvous store)
  eager.torch_profiler_aside           wrap_profiler_start_stop (torch's
                                       profiler's _enable_profiler /
                                       _disable_profiler)
  eager.data_threads                   wrap_thread_namer (torch.multiprocessing's
                                       _set_thread_name)
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from typing import Any, Callable, Iterator

import torch

from .diagnostics import warn

__all__ = [
    "TORCH_CHECKED",
    "aot_autograd",
    "aot_eager",
    "boxed_nop",
    "min_cut_rematerialization_partition",
    "OpOverload",
    "HigherOrderOperator",
    "compile_callback_handler",
    "compile_reason",
    "compiled_module_of",
    "frame_locals",
    "frame_compile_metrics",
    "current_compile_id",
    "graph_break_counts",
    "mark_side_effectful",
    "root_frame_code",
    "size_hint",
    "unwrap_disabled",
    "wrap_compile_phases",
    "wrap_profiler_start_stop",
    "wrap_thread_namer",
]

TORCH_CHECKED = "2.13.0"

_warned: set[str] = set()
_warned_lock = threading.Lock()


def degraded(what: str, error: BaseException, effect: str) -> None:
    """One warning per `what` per process: a torch internal is gone or changed."""
    with _warned_lock:
        if what in _warned:
            return
        _warned.add(what)
    warn(f"torch {getattr(torch, '__version__', '?')}: {what} not usable ({type(error).__name__}: {error}); "
         f"{effect} (checked against torch {TORCH_CHECKED})")


# ------------------------------------------------- aot_eager's building blocks
# The capture backend is aot_eager plus a graph pass: the same aot_autograd
# factory, partitioner and per-graph compiler (boxed_nop), with our pass run
# on each graph before boxed_nop sees it. Missing: the backend returns
# Dynamo's graph as is (the "eager" backend), untraced.
#
# Imported on first use (module __getattr__), not when this module is: this
# module is also imported from trace_eager's hook on the import of
# torch._dynamo, which can fire inside torch's own import of torch._inductor
# (torch.profiler's start does that). Importing the backends there hits
# torch's partially initialised torch._inductor.standalone_compile; the
# ImportError looked like a missing API, and the backend ran every graph
# untraced for the rest of the process.


def _load_aot_backends() -> dict:
    try:
        from torch._dynamo.backends.common import aot_autograd
        from torch._dynamo.backends.debugging import aot_eager, boxed_nop
    except Exception as e:  # ImportError, or a module that fails to import
        degraded("torch._dynamo.backends (aot_autograd, aot_eager, boxed_nop)", e,
                 "dftracer_dynamo_backend runs Dynamo's graphs eagerly, untraced")
        return {"aot_autograd": None, "aot_eager": None, "boxed_nop": None}
    return {"aot_autograd": aot_autograd, "aot_eager": aot_eager, "boxed_nop": boxed_nop}


def _load_partitioner() -> dict:
    try:  # public (functorch.compile), listed here because aot_eager's choice is what we copy
        from functorch.compile import min_cut_rematerialization_partition
    except Exception as e:
        degraded("functorch.compile.min_cut_rematerialization_partition", e,
                 "forward/backward flow arrows are drawn for every seq_nr")
        return {"min_cut_rematerialization_partition": None}
    return {"min_cut_rematerialization_partition": min_cut_rematerialization_partition}


_LAZY = {
    "aot_autograd": _load_aot_backends,
    "aot_eager": _load_aot_backends,
    "boxed_nop": _load_aot_backends,
    "min_cut_rematerialization_partition": _load_partitioner,
}


def __getattr__(name: str) -> Any:
    load = _LAZY.get(name)
    if load is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(load())  # later lookups find the module attribute
    return globals()[name]


# --------------------------------------------------------------- op classes
# dynamo_nodes names events by overload and reads schemas. Missing: events
# are named by the target's __name__ and views count bytes like copies.
try:
    from torch._ops import HigherOrderOperator, OpOverload
except Exception as e:
    class OpOverload:  # type: ignore[no-redef]  # isinstance() is then always False
        pass

    class HigherOrderOperator:  # type: ignore[no-redef]
        pass

    degraded("torch._ops.OpOverload", e, "op events are named by function name only")


def size_hint(x: Any) -> int:
    """Compile-time hint of a SymInt (fx.experimental, not a stable API).
    Missing: 1, so FLOPs/bytes of dynamic-shape nodes read as for size 1."""
    try:
        from torch.fx.experimental.symbolic_shapes import optimization_hint

        return optimization_hint(x, fallback=1)
    except Exception as e:
        degraded("torch.fx.experimental.symbolic_shapes.optimization_hint", e,
                 "dynamic sizes count as 1 in flops/bytes")
        return 1


def mark_side_effectful(fn: Callable) -> None:
    """Keeps FX dead-code elimination from removing calls of `fn` (our hook
    nodes have no users). Missing: a pass that eliminates dead code after us
    could drop hooks; boxed_nop runs none."""
    try:
        torch.fx.node.has_side_effect(fn)
    except Exception as e:
        degraded("torch.fx.node.has_side_effect", e, "hook nodes are not protected from dead-code elimination")


def unwrap_disabled(fn: Callable) -> Callable:
    """The function inside a torch._dynamo.disable wrapper (aot_autograd
    returns its runtime wrapped in one); `fn` itself when there is none. We
    re-wrap once around our entry, so each call passes one disable layer,
    not two; if the attribute moves, two layers only cost a little."""
    return getattr(fn, "_torchdynamo_orig_callable", fn)


# -------------------------------------------------- Dynamo's graph metadata
# dynamo_metadata writes where each graph came from and why it ended.
# Missing: those metadata events say "?" / "" instead.


def compile_reason(gm: torch.fx.GraphModule) -> tuple[str, bool, str, str, int]:
    """Why Dynamo ended graph `gm` (its GraphCompileReason): (reason,
    graph_break, function, file, line) of the innermost user frame; ("",
    False, "", "", -1) when unknown."""
    try:
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is None:
            return "", False, "", "", -1
        fn_name = file = ""
        line = -1
        if reason.user_stack:
            fs = reason.user_stack[-1]
            fn_name, file, line = fs.name, fs.filename, fs.lineno or -1
        return str(reason.reason), bool(reason.graph_break), fn_name, file, line
    except Exception as e:
        degraded("GraphModule.compile_subgraph_reason (Dynamo's GraphCompileReason)", e,
                 "dynamo.graph events have no reason or source line")
        return "", False, "", "", -1


def current_compile_id() -> str:
    """Dynamo's id of the frame compile in progress ("0/1"), or ""."""
    try:
        from torch._guards import CompileContext

        return str(CompileContext.current_compile_id() or "")
    except Exception as e:
        degraded("torch._guards.CompileContext.current_compile_id", e, "dynamo.graph events have no compile_id")
        return ""


def root_frame_code() -> Any:
    """Code object of the user function Dynamo is compiling, with resume
    functions (the code after a graph break) mapped back to the function they
    were cut from; None when unknown."""
    try:
        from torch._dynamo.resume_execution import ContinueExecutionCache
        from torch._dynamo.symbolic_convert import InstructionTranslator

        code = InstructionTranslator.current_tx().f_code
        for _ in range(64):  # resume functions of resume functions
            meta = ContinueExecutionCache.generated_code_metadata.get(code)
            if meta is None:
                break
            code = meta.code
        return code
    except Exception as e:
        degraded("torch._dynamo's current frame (InstructionTranslator, ContinueExecutionCache)", e,
                 "graphs are counted per frame by the resume function's name")
        return None


def frame_locals() -> dict:
    """Locals of the frame Dynamo is compiling now (its
    InstructionTranslator's ``f_locals``), {} when unknown. Missing: module
    paths are resolved from the Python stack only."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        return dict(tx.f_locals) if tx is not None else {}
    except Exception as e:
        degraded("torch._dynamo's current frame locals (InstructionTranslator.f_locals)", e,
                 "module paths are resolved from the Python stack only")
        return {}


def compiled_module_of(obj: Any) -> Any:
    """The module ``torch.compile(module)`` compiled when ``obj`` is the
    OptimizedModule it returned (its ``_orig_mod``), else None. Missing:
    module paths are resolved against the outermost module on the stack."""
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except Exception as e:
        degraded("torch._dynamo.eval_frame.OptimizedModule", e,
                 "module paths are resolved against the outermost module on the stack")
        return None
    if not isinstance(obj, OptimizedModule):
        return None
    orig = getattr(obj, "_orig_mod", None)
    return orig if isinstance(orig, torch.nn.Module) else None


def dynamo_skip_code(code: Any, consequence: str = "loss.backward()'s seed gradient is forward work in eager traces") -> bool:
    """Tells Dynamo never to compile the frames of ``code`` (as it skips
    torch's own files); False when it cannot be told. Missing: the caller
    takes its wrapper out (eager/backward_phase.py) or leaves it to Dynamo
    (compile/optimizer_events.py), and says what that costs."""
    try:
        from torch._dynamo.eval_frame import skip_code

        skip_code(code)
        return True
    except Exception as e:
        degraded("torch._dynamo.eval_frame.skip_code", e, consequence)
        return False


def graph_break_counts() -> dict:
    """Dynamo's graph-break counter: {reason message: count}."""
    try:
        from torch._dynamo.utils import counters

        return dict(counters["graph_break"])
    except Exception as e:
        degraded("torch._dynamo.utils.counters", e, "breaks without a graph of their own are not listed")
        return {}


# ----------------------------------------------------- compile callbacks
def compile_callback_handler() -> Any:
    """Dynamo's compile start/end callback registry (torch._dynamo.callback),
    or None. eager.py pauses the LibTorch observer on the compiling thread
    through it; missing: ops Dynamo runs on fake tensors while compiling show
    up as eager ops."""
    try:
        from torch._dynamo.callback import callback_handler

        for attr in ("register_start_callback", "register_end_callback", "start_callbacks", "end_callbacks",
                     "clear"):
            getattr(callback_handler, attr)
        return callback_handler
    except Exception as e:
        degraded("torch._dynamo.callback.callback_handler", e,
                 "eager tracing records the ops torch.compile runs while compiling")
        return None


# ------------------------------------------------------ compile phase timers
# compile_events turns torch.compile's own phase timers into trace events.
# Every `dynamo_timed` phase (Dynamo's frame compile and its bytecode
# tracing, AOT autograd, the backend call, the lazy backward compile,
# Inductor's phases) starts and ends through the one ChromiumEventLogger
# (torch._dynamo.utils.get_chromium_event_logger), on the compiling thread,
# nested like a call stack. Missing: no compile events; nothing else changes.
def wrap_compile_phases(on_start: Callable[[str], None], on_end: Callable[[str], None]) -> bool:
    """Calls ``on_start(name)`` before and ``on_end(name)`` after each of
    torch's timed compile phases, by wrapping ``log_event_start`` /
    ``log_event_end`` of the logger instance (once per process). The two
    callbacks must not raise. True when installed (now or before)."""
    try:
        from torch._dynamo.utils import get_chromium_event_logger

        log = get_chromium_event_logger()
        if getattr(log, "_dftracer_wrapped", False):
            return True
        start, end = log.log_event_start, log.log_event_end  # bound methods: the class stays untouched

        def log_event_start(event_name, *args, **kwargs):
            on_start(event_name)
            return start(event_name, *args, **kwargs)

        def log_event_end(event_name, *args, **kwargs):
            try:
                return end(event_name, *args, **kwargs)
            finally:
                on_end(event_name)

        log.log_event_start, log.log_event_end = log_event_start, log_event_end
        log._dftracer_wrapped = True
        return True
    except Exception as e:
        degraded("torch._dynamo.utils.get_chromium_event_logger (log_event_start/log_event_end)", e,
                 "compile time is not traced (no cat 'compile' events)")
        return False


def frame_compile_metrics(compile_id: str) -> tuple[str, str, int, str] | None:
    """(code name, file, first line, recompile reason or "") of Dynamo's
    frame compile `compile_id`, from torch's CompilationMetrics (recorded
    when the frame compile's metrics context closes, just before its
    outermost "dynamo" phase ends); None when not found."""
    try:
        from torch._dynamo.utils import get_compilation_metrics

        for m in reversed(get_compilation_metrics()):
            if str(m.compile_id) == compile_id:
                return (m.co_name or "", m.co_filename or "", int(m.co_firstlineno or -1),
                        str(m.recompile_reason or ""))
        return None
    except Exception as e:
        degraded("torch._dynamo.utils.get_compilation_metrics", e,
                 "dynamo.trace events have no frame name and recompiles no reason")
        return None


def inlined_user_function() -> tuple[str, str, int] | None:
    """(name, file, first line) of the user's function when the frame Dynamo
    is compiling now (called from inside its frame compile) is torch's
    ``external_utils.wrap_inline`` wrapper ``inner``: torch.compile wraps a
    function it would otherwise skip (an ``nn.Module`` forward defined in
    torch, e.g. ``nn.Sequential``'s) in it and inlines the function, so
    torch's metrics name ``inner``. Read from convert_frame's ``_compile``
    (its ``code`` and ``closure`` arguments, on the stack). None when the
    frame is the user's own or that layout is gone (then ``inner`` stays)."""
    try:
        f = sys._getframe(1)
        while f is not None and not (f.f_code.co_name == "_compile" and
                                     f.f_code.co_filename.endswith("convert_frame.py")):
            f = f.f_back
        if f is None:
            return None
        code, closure = f.f_locals.get("code"), f.f_locals.get("closure")
        if code is None or code.co_name != "inner" or not code.co_filename.endswith("external_utils.py"):
            return None
        for cell in closure or ():
            fn = inspect.unwrap(getattr(cell.cell_contents, "__func__", cell.cell_contents))
            c = getattr(getattr(fn, "__func__", fn), "__code__", None)
            if c is not None:
                return c.co_name, c.co_filename, c.co_firstlineno
        return None
    except Exception as e:
        degraded("torch._dynamo.convert_frame._compile (code, closure)", e,
                 "dynamo.trace names torch's wrapper `inner` for functions torch wraps to inline")
        return None


# ------------------------------------------------------------------ Inductor
# inductor_backend compiles with Inductor's compile_fx, our inner compile
# around compile_fx_inner; inductor_kernels reads the CompiledFxGraph it
# returns (source_code, compiled_fn_runner, _fx_graph_cache_key) and
# Inductor's provenance table. Missing: dftracer_inductor_backend compiles
# with plain Inductor, no kernel events.
def inductor_compilers() -> tuple[Callable, Callable] | None:
    """(compile_fx, compile_fx_inner), or None."""
    try:
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        return compile_fx, compile_fx_inner
    except Exception as e:
        degraded("torch._inductor.compile_fx (compile_fx, compile_fx_inner)", e,
                 "dftracer_inductor_backend runs plain Inductor, no kernel events")
        return None


def inductor_mode_options(mode: str | None) -> dict:
    """Inductor's config patches for torch.compile's `mode` ({} for None)."""
    if not mode:
        return {}
    from torch._inductor import list_mode_options  # public: torch._inductor's own __init__

    return dict(list_mode_options(mode))


def inductor_cpp_wrapper(patches: dict) -> bool:
    """Whether Inductor generates a C++ wrapper (``cpp_wrapper`` in the
    config patches or set globally): its kernel calls are C++, not Python
    statements a mark can precede. Missing: False (instrumenting the graph
    then fails and it runs unmarked, with a less specific warning)."""
    if "cpp_wrapper" in patches:
        return bool(patches["cpp_wrapper"])
    try:
        from torch._inductor import config

        return bool(config.cpp_wrapper)
    except Exception as e:
        degraded("torch._inductor.config.cpp_wrapper", e, "cpp_wrapper mode is not recognised before compiling")
        return False


def no_autograd_cache() -> Any:
    """A context where the AOT autograd cache is off: a hit there loads
    Inductor's compiled graphs without calling the inner compiler, so they
    would run unhooked. (The FX graph cache stays on: a hit there still goes
    through the inner compiler.) Missing: a null context."""
    try:
        return torch._functorch.config.patch(enable_autograd_cache=False)
    except Exception as e:
        degraded("torch._functorch.config.enable_autograd_cache", e,
                 "an AOT autograd cache hit runs Inductor's graphs without kernel events")
        return contextlib.nullcontext()


@contextlib.contextmanager
def own_kernel_provenance() -> Iterator[dict]:
    """Around one compile_fx_inner call: yields a dict that, on exit, holds
    the provenance entries ({"<kernel>:<handle>": [post-grad node names]})
    that this call's lowering wrote, and only those. Inductor keeps one
    process-wide table that it resets per compile_fx but not for the lazy
    backward compile, so read directly it mixes other graphs' kernels in (a
    cache hit lowers nothing and would read them). The entries are merged
    back into Inductor's table afterwards. Missing: yields {} (no module
    attribution for kernels)."""
    try:
        import torch._inductor.debug as inductor_debug

        saved = inductor_debug._inductor_triton_kernel_to_post_grad_node_info
        inductor_debug._inductor_triton_kernel_to_post_grad_node_info = {}
    except Exception as e:
        degraded("torch._inductor.debug._inductor_triton_kernel_to_post_grad_node_info", e,
                 "Inductor kernel events have no module attribution")
        yield {}
        return
    own: dict = {}
    try:
        yield own
    finally:
        own.update(inductor_debug._inductor_triton_kernel_to_post_grad_node_info)
        saved.update(own)
        inductor_debug._inductor_triton_kernel_to_post_grad_node_info = saved


@contextlib.contextmanager
def lowering_again() -> Iterator[None]:
    """A context where compile_fx_inner, already run once for this graph (an
    FX graph cache hit), lowers it again: the FX graph cache off (local and
    remote), and the output strides the first call handed to the tracing
    context taken back (the second call hands the same ones; they are put
    back when it fails). Missing: raises, and the caller keeps the first
    compile."""
    from torch._guards import TracingContext
    from torch._inductor import config

    context = TracingContext.try_get()
    strides = getattr(context, "output_strides", None)
    saved = list(strides) if strides is not None else None
    if strides is not None:
        strides.clear()
    try:
        with config.patch(fx_graph_cache=False, fx_graph_remote_cache=False):
            yield
    except BaseException:
        if strides is not None:
            strides[:] = saved
        raise


def compiled_graph_parts(out: Any) -> tuple[str, Any, str]:
    """(wrapper source, Runner object, FX graph cache key or "") of an
    Inductor CompiledFxGraph; raises when it is not one."""
    src = out.source_code
    runner = out.compiled_fn_runner
    if not isinstance(src, str) or runner is None:
        raise TypeError(f"not a Python-wrapper CompiledFxGraph: {type(out).__name__}")
    return src, runner, str(getattr(out, "_fx_graph_cache_key", None) or "")


def inductor_cache_dir() -> str | None:
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        return cache_dir()
    except Exception as e:
        degraded("torch._inductor.runtime.cache_dir_utils.cache_dir", e,
                 "Inductor kernel tables are not kept for FX graph cache hits")
        return None


def default_store() -> Any:
    """The default process group's store (c10d's private _get_default_store),
    used by clock_sync to measure each rank's clock offset to rank 0. Without
    it: no clock_offset_ns metadata (merge then assumes aligned clocks)."""
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


# ------------------------------------------------ torch's profiler start/stop
# torch.autograd.profiler's profile (what torch.profiler.profile runs) starts
# and stops torch's profiler through the module's globals _enable_profiler /
# _disable_profiler (torch._C._autograd's, private). eager.torch_profiler_aside
# wraps them so memory capture steps aside on the thread torch's profiler
# starts on. Missing, or a torch older than the layout is known from: torch's
# profiler refuses to start on a thread where memory capture is on ("Profiler
# is already enabled on this thread"); turning memory capture off first works.
PROFILER_START_STOP_SINCE = (2, 0)


def torch_version() -> tuple[int, int]:
    """(major, minor) of torch.__version__; (0, 0) when it does not parse."""
    try:
        major, minor = str(torch.__version__).split(".")[:2]
        return int(major), int("".join(c for c in minor if c.isdigit()) or "0")
    except Exception:
        return 0, 0


def wrap_profiler_start_stop(wrap_enable: Callable[[Callable], Callable],
                             wrap_disable: Callable[[Callable], Callable]) -> bool:
    """Replaces torch.autograd.profiler's ``_enable_profiler`` and
    ``_disable_profiler`` by ``wrap_enable(original)`` and
    ``wrap_disable(original)``, once per process. True when installed (now
    or before); False, after one warning line, when the names are gone or
    torch is older than PROFILER_START_STOP_SINCE."""
    what = "torch.autograd.profiler._enable_profiler / _disable_profiler"
    effect = "torch.profiler cannot start on a thread while memory capture is on there (turn it off first)"
    if torch_version() < PROFILER_START_STOP_SINCE:
        degraded(what, RuntimeError(f"needs torch >= {'.'.join(map(str, PROFILER_START_STOP_SINCE))}"), effect)
        return False
    try:
        import torch.autograd.profiler as tap

        enable, disable = tap._enable_profiler, tap._disable_profiler
        if not (callable(enable) and callable(disable)):
            raise TypeError("not callable")
    except Exception as e:
        degraded(what, e, effect)
        return False
    if getattr(enable, "_dftracer_wrapped", False):
        return True
    new_enable, new_disable = wrap_enable(enable), wrap_disable(disable)
    new_enable._dftracer_wrapped = True
    tap._enable_profiler, tap._disable_profiler = new_enable, new_disable
    return True


def wrap_thread_namer(make_wrapper: Callable[[Callable], Callable]) -> Callable | None:
    """Puts ``make_wrapper(original)`` in the place of
    ``torch.multiprocessing._set_thread_name`` (which names a DataLoader
    worker's and pin-memory thread, looked up there at each call) and returns
    the original, which ``wrap_thread_namer(lambda _: original)`` puts back;
    None when torch has none. Missing: a DataLoader worker's eager ops carry
    phase forward (eager/data_threads.py)."""
    try:
        import torch.multiprocessing as tmp

        fn = tmp._set_thread_name
        if not callable(fn):
            raise TypeError("torch.multiprocessing._set_thread_name is not callable")
    except Exception as e:
        degraded("torch.multiprocessing._set_thread_name", e,
                 "a DataLoader worker's eager ops are written as forward work")
        return None
    tmp._set_thread_name = make_wrapper(fn)
    return fn
