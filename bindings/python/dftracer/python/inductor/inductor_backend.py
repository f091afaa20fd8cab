"""The Inductor capture backend: torch.compile as users run it, traced kernel
by kernel.

``make_inductor_backend(default_tags, mode, options)`` returns a Dynamo
backend that compiles with Inductor's own ``compile_fx`` (AOT autograd,
Inductor's partitioner and decompositions, ``mode`` / ``options`` passed
through as Inductor config patches) with one change: its inner compiler is
``compile_fx_inner`` followed by ``inductor_kernels.instrument`` on the
compiled graph it returns (forward, backward, inference), which marks each
kernel call of the generated wrapper. The kernels are Inductor's.

Two settings differ from a plain ``torch.compile``: Inductor's provenance
tracking is on (comments in the wrapper and a compile-time table; the
kernels' code is the same) and the AOT autograd cache is off for these
compiles, because a hit there loads the compiled graphs without calling the
inner compiler. The FX graph cache stays on: a hit there goes through the
inner compiler and is instrumented like a fresh compile.

Inductor's ``cpp_wrapper`` mode generates the wrapper in C++: there is no
Python ``call()`` to mark, so such graphs are compiled exactly as plain
Inductor compiles them and run unmarked, with one warning per process.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import torch
import torch.fx

from ..compile import compile_events, dynamo_graph_call, dynamo_instances, dynamo_modules, dynamo_nodes, dynamo_sizes
from . import inductor_kernels
from .. import torch_compat
from ..diagnostics import warn
from ..compile.dynamo_graphs import compile_stats, new_graph_id
from ..compile.dynamo_hooks import BACKWARD, FORWARD, INFERENCE, tracing_enabled
from ..compile.dynamo_metadata import record_graph_metadata
from ..compile.dynamo_nodes import PHASES

_PROVENANCE = {"trace.provenance_tracking_level": 1}
COMPILE_BACKEND_ENV = "DFTRACER_COMPILE_BACKEND"
COMPILERS = ("aot_eager", "inductor")
_warned: set[str] = set()


def _warn_once(what: str, msg: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warn(msg)


def backend_name(backend: str | None) -> str:
    """"aot_eager" or "inductor": `backend`, or when None DFTRACER_COMPILE_BACKEND
    (a bad value there: one warning, aot_eager), else "aot_eager"."""
    if backend is not None:
        name = str(backend).strip().lower()
        if name not in COMPILERS:
            raise ValueError(f"dynamo.compile: backend must be one of {', '.join(COMPILERS)}, got {backend!r}")
        return name
    value = os.environ.get(COMPILE_BACKEND_ENV, "").strip().lower()
    if value in ("", "aot_eager"):
        return "aot_eager"
    if value == "inductor":
        return value
    _warn_once("env", f"{COMPILE_BACKEND_ENV}={os.environ[COMPILE_BACKEND_ENV]!r} is not one of "
               f"{', '.join(COMPILERS)}; using aot_eager")
    return "aot_eager"


def _phase(kwargs: dict) -> int:
    if kwargs.get("is_backward"):
        return BACKWARD
    return INFERENCE if kwargs.get("is_inference") else FORWARD


def _make_inner(compile_fx_inner: Callable, graph_id: int, modules: Any = None) -> Callable:
    """compile_fx_inner, then the kernel marks on what it returns."""

    def dftracer_compile_fx_inner(gm: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Any:
        if not tracing_enabled() or not any(n.op == "call_function" for n in gm.graph.nodes):
            # tracing off, or a graph with no op (Inductor runs its forward as is): nothing to trace
            return compile_fx_inner(gm, example_inputs, **kwargs)
        phase = _phase(kwargs)
        try:  # read before compile_fx_inner's post-grad passes rewrite gm
            with dynamo_nodes.module_scope(modules):  # the paths the digest covers: the user's model's
                digest = inductor_kernels.graph_digest(gm, phase)
            sizes = dynamo_sizes.GraphSizes(gm)
        except Exception:
            digest = sizes = None
        with torch_compat.own_kernel_provenance() as provenance:
            out = compile_fx_inner(gm, example_inputs, **kwargs)
        try:
            with compile_events.instrumented(graph_id, PHASES[phase]), dynamo_nodes.module_scope(modules):
                if digest is None:
                    raise RuntimeError("the ATen graph could not be read before compiling")
                src, _runner, key = torch_compat.compiled_graph_parts(out)
                sites = inductor_kernels.kernel_sites(src)
                entries = inductor_kernels.kernel_table(sites, gm, phase, key, digest, provenance, sizes)
                if entries is None:
                    # An FX graph cache hit without a table made for this
                    # graph: lower it again (cache off) for its provenance.
                    compile_stats["lowered_again"] += 1
                    with torch_compat.own_kernel_provenance() as provenance, torch_compat.lowering_again():
                        out = compile_fx_inner(gm, example_inputs, **kwargs)
                    sites = inductor_kernels.kernel_sites(torch_compat.compiled_graph_parts(out)[0])
                    entries = (inductor_kernels.kernel_table(sites, gm, phase, key, digest, provenance, sizes)
                               or inductor_kernels.comment_table(sites))
                info = inductor_kernels.instrument(out, gm, phase, graph_id, sites, entries, sizes)
            out.current_callable = dynamo_graph_call.wrap(info, out.current_callable)
        except Exception as e:  # never fail the user's compile: run it unmarked
            _warn_once(f"instrument:{type(e).__name__}",
                       f"an Inductor graph runs without kernel events ({type(e).__name__}: {e})")
        return out

    return dftracer_compile_fx_inner


def make_inductor_backend(default_tags: Callable[[], int], mode: str | None = None,
                          options: dict | None = None) -> Callable:
    """A Dynamo backend compiling with Inductor, kernels traced; ``mode`` and
    ``options`` as torch.compile takes them for Inductor."""
    compile_events.install()
    patches = {**torch_compat.inductor_mode_options(mode), **(options or {})}

    def dftracer_inductor_backend(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any):
        compile_events.ours()  # a dftracer backend: no "other backend" note
        compilers = torch_compat.inductor_compilers()
        if compilers is None:
            return gm.forward  # torch_compat warned: Dynamo's graph runs eagerly
        compile_fx, compile_fx_inner = compilers
        if not tracing_enabled():
            return compile_fx(gm, example_inputs, config_patches=patches or None)
        if torch_compat.inductor_cpp_wrapper(patches):
            # Plain Inductor, as the user asked for it (no provenance patch: the
            # same FX cache entries as torch.compile's), graphs unmarked.
            _warn_once("cpp_wrapper", "Inductor's cpp_wrapper mode (Inductor config cpp_wrapper=True) "
                       "generates C++ kernel calls that cannot be marked: its graphs run as plain Inductor's, "
                       "without kernel events (turn cpp_wrapper off to trace them)")
            return compile_fx(gm, example_inputs, config_patches=patches or None)
        graph_id = new_graph_id()
        record_graph_metadata(gm, graph_id)
        modules = dynamo_modules.resolve_safely(gm)
        if modules is not None:
            modules.instance = dynamo_instances.find(modules, example_inputs)
        with torch_compat.no_autograd_cache():
            compiled = compile_fx(gm, example_inputs, inner_compile=_make_inner(compile_fx_inner, graph_id, modules),
                                  config_patches={**patches, **_PROVENANCE})
        inner = torch_compat.unwrap_disabled(compiled)
        return torch.compiler.disable(dynamo_graph_call.enter(inner, default_tags),
                                      reason="dftracer: Inductor-compiled graph")

    return dftracer_inductor_backend
