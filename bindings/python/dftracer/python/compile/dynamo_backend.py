"""The torch.compile backend: aot_eager plus a graph pass.

``make_backend(default_tags)`` returns a Dynamo backend built the way the
in-tree ``aot_eager`` is -- ``aot_autograd`` with the same partitioner and
calling convention -- whose forward, backward and inference compilers each
run the graph pass (``dynamo_graph_pass.instrument``) on their graph, compile
it as aot_eager does, and bracket the result with the graph-call hooks
(``dynamo_graph_call.wrap``).

The pieces, one job each:
  dynamo_hooks        the C++ hooks (_core), tracing_enabled, phase numbers
  dynamo_graph_pass   instrument(): node table + mark nodes (the graph pass)
  dynamo_graph_call   per-call wrappers: grad mode, tags, dynamo_begin/_end
  dynamo_pairing      forward/backward pairing: seq_nr tables, flows, keys
  dynamo_graphs       GraphInfo and the table of instrumented graphs
  dynamo_metadata     per-Dynamo-graph metadata events (graph breaks ...)
  dynamo_nodes        static args of one op node (module, shapes, flops ...)
  dynamo_modules      module paths resolved against the compiled model
  compile_events      torch.compile's phases as cat "compile" events
  torch_compat        every private torch name the package uses

With tracing off at compile time the backend is ``aot_eager`` behind one
check per graph call: a graph compiled while tracing was off stays
uninstrumented (re-instrumenting it would mean keeping its example inputs
alive to re-trace), so when tracing is on by the time such a graph runs, one
line on stderr says so and how to get its ops traced.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import torch
import torch.fx

from . import compile_events, dynamo_graph_call, dynamo_instances, dynamo_modules, dynamo_nodes, dynamo_pairing
from .. import torch_compat
from ..diagnostics import warn
from .dynamo_graph_call import _active_tags, _entry  # noqa: F401  (imported from here by dynamo.py, tests)
from .dynamo_graph_pass import instrument, op_nodes  # noqa: F401
from .dynamo_graphs import GraphInfo, compile_stats, graph_count, instrumented_graphs, new_graph_id  # noqa: F401
from .dynamo_hooks import BACKWARD, FORWARD, INFERENCE, _core, tracing_enabled  # noqa: F401
from .dynamo_metadata import record_graph_metadata


_PHASE_NAMES = {FORWARD: "forward", BACKWARD: "backward", INFERENCE: "inference"}


def _make_compiler(phase: int, graph_id_box: list) -> Callable:
    """aot_eager's compiler (boxed_nop) after the graph pass."""

    def compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        t0 = time.perf_counter()
        try:
            with compile_events.instrumented(graph_id_box[0], _PHASE_NAMES[phase]), \
                    dynamo_nodes.module_scope(graph_id_box[1]):
                info = instrument(gm, phase, graph_id_box[0])
        except Exception as e:  # e.g. the C++ side's 65536 graph slots are used up
            _warn_once("instrument", f"a graph compiled by dftracer_dynamo_backend runs uninstrumented: {e}")
            return torch_compat.boxed_nop(gm, example_inputs)
        # boxed_nop (not a copy of it): the boxed codegen, plus what torch
        # adds there -- in 2.13 a serializable AOTEagerOutputCode when the
        # AOT autograd cache bundles artifacts, DebugMode's interpreter.
        compiled = torch_compat.boxed_nop(gm, example_inputs)
        compile_stats["instrument_s"] += time.perf_counter() - t0
        return dynamo_graph_call.wrap(info, compiled)

    return compiler


def make_backend(default_tags: Callable[[], int]) -> Callable:
    """A Dynamo backend; ``default_tags()`` gives the tags fragment id to use
    when no ``Dynamo.compile`` wrapper is active on the calling thread."""
    compile_events.install()  # torch's compile phases as cat "compile" events

    def dftracer_dynamo_backend(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any):
        compile_events.ours()  # a dftracer backend: no "other backend" note
        if torch_compat.aot_autograd is None or torch_compat.boxed_nop is None:
            return gm.forward  # torch_compat warned: Dynamo's graph runs as is, untraced
        if not tracing_enabled():
            return _uninstrumented(torch_compat.aot_eager(gm, example_inputs, **kwargs))
        graph_id = new_graph_id()
        t0 = time.perf_counter()
        record_graph_metadata(gm, graph_id)
        box = [graph_id, dynamo_modules.resolve_safely(gm)]
        if box[1] is not None:
            box[1].instance = dynamo_instances.find(box[1], example_inputs)
        compile_stats["instrument_s"] += time.perf_counter() - t0
        # aot_eager's partitioner, seen through dynamo_pairing (aot_autograd's
        # default one if torch_compat could not find it).
        partition = {"partition_fn": dynamo_pairing.partition} if torch_compat.min_cut_rematerialization_partition else {}
        cg = torch_compat.aot_autograd(
            fw_compiler=_make_compiler(FORWARD, box),
            bw_compiler=_make_compiler(BACKWARD, box),
            inference_compiler=_make_compiler(INFERENCE, box),
            keep_inference_input_mutations=True,
            **partition,
        )(gm, example_inputs, **kwargs)
        # aot_autograd returns its runtime wrapped in dynamo.disable; unwrap it
        # and re-wrap once around our entry so there is a single disable layer.
        inner = torch_compat.unwrap_disabled(cg)
        return torch.compiler.disable(dynamo_graph_call.enter(inner, default_tags),
                                      reason="dftracer: AOT-compiled graph")

    return dftracer_dynamo_backend


_warned: set[str] = set()


def _warn_once(what: str, msg: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warn(msg)


def _uninstrumented(compiled: Callable) -> Callable:
    """``compiled`` (plain aot_eager), warning once per process if it runs
    while tracing is on: its ops are silently missing from the trace
    otherwise."""
    inner = torch_compat.unwrap_disabled(compiled)

    def call_uninstrumented_graph(*args):
        if "uninstrumented" not in _warned and tracing_enabled():
            _warn_once("uninstrumented", "a graph compiled by dftracer_dynamo_backend while tracing was off "
                       "runs uninstrumented (the capture backend records none of its ops); start tracing before the "
                       "compiled model's first call, or call torch._dynamo.reset() after starting it")
        return inner(*args)

    return torch.compiler.disable(call_uninstrumented_graph, reason="dftracer: AOT-compiled graph (untraced)")


def warn_if_unavailable() -> None:
    if _core is None:
        warnings.warn(
            "dftracer: the _core extension has no dynamo hooks; torch.compile runs as aot_eager, untraced",
            RuntimeWarning,
            stacklevel=3,
        )
