"""The torch.compile backend: aot_eager plus hook nodes around every ATen op.

``make_backend(tags_source)`` returns a Dynamo backend built from
``torch._dynamo.backends.common.aot_autograd`` -- the in-tree ``aot_eager``
backend is the template: same partitioner, same boxed calling convention --
with forward, backward and inference compilers that each instrument their
graph once:

* a static node table (``dynamo_nodes``) is registered with the C++ side of
  the hooks (``dftracer._core.dynamo_register_graph``) and gets a slot;
* before op node i the graph calls ``dynamo_mark(i)``, before the output
  ``dynamo_mark(n)``; a mark closes the previous node's event in C++;
* the compiled callable brackets the graph with ``dynamo_begin(slot, grad,
  tags)`` / ``dynamo_end()``, which also record the graph-call event.

``grad_enabled`` must be the caller's grad mode: inside the AOT forward it is
always off. So the callable Dynamo calls (one per Dynamo graph) is wrapped:
the wrapper notes ``torch.is_grad_enabled()`` and the active tags before AOT's
runtime switches grad off, and the forward/inference graph reads them.

Backward graphs are compiled lazily at the first ``.backward()``. Their nodes
carry the ``seq_nr`` of the forward node they differentiate; seq_nrs of
different graphs never overlap (one global counter), so the backward graph
finds its forward graph by them. Forward and backward nodes of the same
seq_nr are linked with flow events (arrows in Perfetto); which seq_nrs the
backward will have is known at forward compile time from the partitioner,
whose output we look at through a thin ``partition_fn`` wrapper.

With tracing off at compile time the backend is ``aot_eager`` behind one
check per graph call: a graph compiled while tracing was off stays
uninstrumented (re-instrumenting it would mean keeping its example inputs
alive to re-trace), so when tracing is on by the time such a graph runs, one
line on stderr says so and how to get its ops traced.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
import warnings
from typing import Any, Callable

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import aot_eager
from functorch.compile import min_cut_rematerialization_partition

from . import dynamo_nodes
from .diagnostics import warn

FORWARD, BACKWARD, INFERENCE = 0, 1, 2


def _load_core():
    try:
        from dftracer import _core
    except ImportError:
        return None
    if not hasattr(_core, "dynamo_mark"):
        return None
    return _core


_core = _load_core()
if _core is not None:
    # The hook nodes have no users; registering them as side-effecting keeps
    # every dead-code elimination pass from removing them.
    torch.fx.node.has_side_effect(_core.dynamo_mark)


def tracing_enabled() -> bool:
    return _core is not None and bool(_core.dynamo_enabled())


# ----------------------------------------------------------- per-thread state


class _Entry(threading.local):
    """What the Dynamo-level wrapper saw at the entry of the compiled region."""

    grad = 0
    tags = 0


_entry = _Entry()


# --------------------------------------------------------------- graph books


class GraphInfo:
    """One instrumented graph, for tests and for pairing backward to forward."""

    __slots__ = ("graph", "phase", "slot", "op_names", "entries", "flow_groups", "key_name", "key_index")

    def __init__(self, graph, phase, slot, op_names, entries, flow_groups, key_name=None, key_index=-1):
        self.graph = graph
        self.phase = phase
        self.slot = slot
        self.op_names = op_names
        self.entries = entries
        self.flow_groups = flow_groups  # seq_nr -> flow group index (forward)
        # Pairing key (see dynamo_hooks.cc): forward: the output that is a
        # saved activation; backward: the input that receives it. -1: none.
        self.key_name = key_name
        self.key_index = key_index

    def __repr__(self) -> str:
        return f"GraphInfo(graph={self.graph}, phase={dynamo_nodes.PHASES[self.phase]}, ops={len(self.op_names)})"


_lock = threading.Lock()
_graphs: list[GraphInfo] = []
# Seconds spent in our compile-time work (node tables, hook insertion, the
# recompile of the instrumented graph, graph metadata): what instrumentation
# adds to aot_eager's compile time. For the benchmark.
compile_stats = {"instrument_s": 0.0}
# seq_nr -> (forward GraphInfo, module path): how backward graphs find their forward.
_fw_by_seq: dict[int, tuple[GraphInfo, str | None]] = {}
_next_graph_id = 0
_tls_partition = threading.local()


def instrumented_graphs() -> list[GraphInfo]:
    """Every graph instrumented in this process so far, in compile order."""
    with _lock:
        return list(_graphs)


def _new_graph_id() -> int:
    global _next_graph_id
    with _lock:
        gid = _next_graph_id
        _next_graph_id += 1
        return gid


# ----------------------------------------------------------- instrumentation


def _op_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function"]


def instrument(gm: torch.fx.GraphModule, phase: int, graph_id: int) -> GraphInfo:
    """Registers gm's node table and inserts the hook nodes. Returns its GraphInfo."""
    ops = _op_nodes(gm)
    fw_info: GraphInfo | None = None
    module_of_seq: dict[int, str | None] = {}
    if phase == BACKWARD:
        votes: collections.Counter = collections.Counter()
        by_id: dict[int, GraphInfo] = {}
        for n in ops:
            hit = _fw_by_seq.get(n.meta.get("seq_nr"))
            if hit is not None:
                votes[id(hit[0])] += 1
                by_id[id(hit[0])] = hit[0]
                module_of_seq[n.meta["seq_nr"]] = hit[1]
        if votes:
            fw_info = by_id[votes.most_common(1)[0][0]]
        if fw_info is not None:
            graph_id = fw_info.graph  # forward and backward share the Dynamo graph id

    entries = [dynamo_nodes.describe_node(n, i, module_of_seq.get) for i, n in enumerate(ops)]

    # Flow groups: one per seq_nr shared by a forward node and a backward node.
    flows = [-1] * len(ops)
    flow_groups: dict[int, int] = {}
    if phase == FORWARD:
        bw_seqs = getattr(_tls_partition, "bw_seqs", None)
        _tls_partition.bw_seqs = None
        for i, e in enumerate(entries):
            if e.seq_nr < 0 or e.seq_nr in flow_groups:
                continue
            if bw_seqs is not None and e.seq_nr not in bw_seqs:
                continue
            flow_groups[e.seq_nr] = len(flow_groups)
            flows[i] = flow_groups[e.seq_nr]
    elif phase == BACKWARD and fw_info is not None:
        seen: set[int] = set()
        for i, e in enumerate(entries):
            g = fw_info.flow_groups.get(e.seq_nr)
            if g is not None and e.seq_nr not in seen:
                seen.add(e.seq_nr)
                flows[i] = g

    phase_name = dynamo_nodes.PHASES[phase]
    graph_fragment = json.dumps(
        {"phase": phase_name, "graph": graph_id, "ops": len(ops)}, separators=(",", ":")
    )[1:-1]
    slot = _core.dynamo_register_graph(
        f"graph.{phase_name}",
        graph_fragment,
        phase,
        [e.name for e in entries],
        [e.fragment(phase_name, graph_id) for e in entries],
        flows,
        len(flow_groups),
        fw_info.slot if fw_info is not None else -1,
    )
    key_name, key_index = _pairing_key(gm, phase, fw_info)
    info = GraphInfo(graph_id, phase, slot, [e.name for e in entries], entries, flow_groups, key_name, key_index)
    with _lock:
        _graphs.append(info)
        if phase == FORWARD:
            for e in entries:
                if e.seq_nr >= 0:
                    _fw_by_seq.setdefault(e.seq_nr, (info, e.module))

    g = gm.graph
    mark = _core.dynamo_mark
    for i, n in enumerate(ops):
        with g.inserting_before(n):
            g.call_function(mark, (i,))
    out = next(n for n in reversed(g.nodes) if n.op == "output")
    with g.inserting_before(out):
        g.call_function(mark, (len(ops),))
    return info


def _pairing_key(gm: torch.fx.GraphModule, phase: int, fw_info: GraphInfo | None) -> tuple[str | None, int]:
    """Which tensor identifies a forward call to its backward: the last
    forward output computed by the graph itself (AOT orders the outputs as
    user outputs, then activations saved for backward), found again among the
    backward graph's inputs by name (the partitioner keeps node names).
    (None, -1) when there is none: pairing then falls back to LIFO."""
    if phase == FORWARD:
        out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        flat = out.args[0] if isinstance(out.args[0], (list, tuple)) else [out.args[0]]
        for i in range(len(flat) - 1, -1, -1):
            n = flat[i]
            if isinstance(n, torch.fx.Node) and n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor):
                return n.name, i
        return None, -1
    if phase == BACKWARD and fw_info is not None and fw_info.key_name is not None:
        for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
            if n.name == fw_info.key_name:
                return n.name, i
    return None, -1


def _boxed_forward(gm: torch.fx.GraphModule) -> Callable:
    """gm.forward with the boxed calling convention (one list, cleared as the
    graph consumes it), as aot_eager's boxed_nop sets it up."""
    from torch.fx.graph import _BoxedCodeGen

    gm.graph.set_codegen(_BoxedCodeGen())
    gm.recompile()
    return gm.forward


def _make_compiler(phase: int, graph_id_box: list) -> Callable:
    def compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        t0 = time.perf_counter()
        info = instrument(gm, phase, graph_id_box[0])
        fwd = _boxed_forward(gm)
        compile_stats["instrument_s"] += time.perf_counter() - t0
        begin, end, slot = _core.dynamo_begin, _core.dynamo_end, info.slot

        key = info.key_index
        Tensor = torch.Tensor
        if phase == BACKWARD:
            is_grad_enabled = torch.is_grad_enabled

            def run(args):
                # Tags come from the paired forward call (C++ side); grad mode
                # is the backward's own (on only under create_graph=True).
                k = args[key] if key >= 0 else None
                begin(slot, is_grad_enabled(), 0, k.data_ptr() if type(k) is Tensor else 0)
                try:
                    return fwd(args)
                finally:
                    end()

        elif phase == FORWARD:
            entry = _entry

            def run(args):
                begin(slot, entry.grad, entry.tags)
                k = 0
                try:
                    outs = fwd(args)
                    if key >= 0:
                        o = outs[key]
                        k = o.data_ptr() if type(o) is Tensor else 0
                    return outs
                finally:
                    end(k)

        else:
            entry = _entry

            def run(args):
                begin(slot, entry.grad, entry.tags)
                try:
                    return fwd(args)
                finally:
                    end()

        run._boxed_call = True
        return run

    return compiler


def _partition(joint_module, joint_inputs, **kwargs):
    """aot_eager's partitioner; notes which seq_nrs the backward graph has so
    the forward compiler (called next, same thread) starts flows only there."""
    fw, bw = min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
    _tls_partition.bw_seqs = {
        n.meta.get("seq_nr") for n in bw.graph.nodes if n.op == "call_function" and n.meta.get("seq_nr") is not None
    }
    return fw, bw


# ------------------------------------------------------------ graph breaks


_frame_graphs: collections.Counter = collections.Counter()
_reported_breaks: set[str] = set()


def _root_frame() -> str | None:
    """``fn (file.py:line)`` of the user frame Dynamo is compiling, with resume
    functions (the code after a graph break) mapped back to the function they
    were cut from, so all graphs of one user function count together."""
    try:
        from torch._dynamo.resume_execution import ContinueExecutionCache
        from torch._dynamo.symbolic_convert import InstructionTranslator

        code = InstructionTranslator.current_tx().f_code
        for _ in range(64):  # resume functions of resume functions
            meta = ContinueExecutionCache.generated_code_metadata.get(code)
            if meta is None:
                break
            code = meta.code
        return f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    except Exception:  # Dynamo internals moved: fall back to the name in the reason
        return None


def _root_frame_name(code_name: str) -> str:
    # Resume functions after a break are named torch_dynamo_resume_in_<fn>_at_<line>.
    prefix = "torch_dynamo_resume_in_"
    if code_name.startswith(prefix):
        rest = code_name[len(prefix):]
        return rest.rsplit("_at_", 1)[0]
    return code_name


def _record_graph_metadata(gm: torch.fx.GraphModule, graph_id: int) -> None:
    """Metadata for one Dynamo graph: where it came from, why it ended, and
    the graph count of its (root) frame; plus any break Dynamo counted that
    ended a frame without a graph."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    frame = fn_name = file = ""
    line = -1
    if reason is not None and reason.user_stack:
        fs = reason.user_stack[-1]
        fn_name, file, line = fs.name, fs.filename, fs.lineno or -1
    try:
        from torch._guards import CompileContext

        frame = str(CompileContext.current_compile_id() or "")
    except Exception:
        frame = ""
    root = _root_frame() or (_root_frame_name(fn_name) if fn_name else "?")
    with _lock:
        _frame_graphs[root] += 1
        count = _frame_graphs[root]
    graph_break = bool(reason is not None and reason.graph_break)
    info = {
        "graph": graph_id,
        "compile_id": frame,
        "frame": root,
        "code": fn_name,
        "file": file,
        "line": line,
        "ops": sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")),
        "graph_break": graph_break,
        "reason": reason.reason if reason is not None else "",
    }
    _core.dynamo_metadata("dynamo.graph", json.dumps(info))
    _core.dynamo_metadata("dynamo.graphs_per_frame", json.dumps({"frame": root, "graphs": count}))
    if graph_break:
        _core.dynamo_metadata(
            "dynamo.graph_break",
            json.dumps({"graph": graph_id, "frame": root, "file": file, "line": line, "reason": reason.reason}),
        )
    # Breaks that produced no graph of their own still show up in Dynamo's counters.
    try:
        from torch._dynamo.utils import counters

        for msg, n in list(counters["graph_break"].items()):
            if msg not in _reported_breaks:
                _reported_breaks.add(msg)
                _core.dynamo_metadata("dynamo.graph_break_reason", json.dumps({"reason": msg, "count": n}))
    except Exception:
        pass


# ------------------------------------------------------------------ backend


def make_backend(default_tags: Callable[[], int]) -> Callable:
    """A Dynamo backend; ``default_tags()`` gives the tags fragment id to use
    when no ``Dynamo.compile`` wrapper is active on the calling thread."""

    def dftracer_dynamo_backend(gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any):
        if not tracing_enabled():
            return _uninstrumented(aot_eager(gm, example_inputs, **kwargs))
        graph_id = _new_graph_id()
        t0 = time.perf_counter()
        _record_graph_metadata(gm, graph_id)
        compile_stats["instrument_s"] += time.perf_counter() - t0
        box = [graph_id]
        cg = aot_autograd(
            fw_compiler=_make_compiler(FORWARD, box),
            bw_compiler=_make_compiler(BACKWARD, box),
            inference_compiler=_make_compiler(INFERENCE, box),
            partition_fn=_partition,
            keep_inference_input_mutations=True,
        )(gm, example_inputs, **kwargs)
        # aot_autograd returns its runtime wrapped in dynamo.disable; unwrap it
        # and re-wrap once around our entry so there is a single disable layer.
        inner = getattr(cg, "_torchdynamo_orig_callable", cg)
        entry = _entry
        is_grad_enabled = torch.is_grad_enabled

        def call_compiled_graph(*args):
            entry.grad = is_grad_enabled()
            active = _active_tags.tags
            entry.tags = active if active is not None else default_tags()
            return inner(*args)

        return torch._dynamo.disable(call_compiled_graph, reason="dftracer: AOT-compiled graph")

    return dftracer_dynamo_backend


_uninstrumented_warned = False


def _uninstrumented(compiled: Callable) -> Callable:
    """``compiled`` (plain aot_eager), warning once per process if it runs
    while tracing is on: its ops are silently missing from the trace
    otherwise."""
    inner = getattr(compiled, "_torchdynamo_orig_callable", compiled)

    def call_uninstrumented_graph(*args):
        global _uninstrumented_warned
        if not _uninstrumented_warned and tracing_enabled():
            _uninstrumented_warned = True
            warn("a graph compiled by dftracer_dynamo_backend while tracing was off "
                 "runs uninstrumented (the capture backend records none of its ops); start tracing before the compiled "
                 "model's first call, or call torch._dynamo.reset() after starting it")
        return inner(*args)

    return torch._dynamo.disable(call_uninstrumented_graph, reason="dftracer: AOT-compiled graph (untraced)")


class _ActiveTags(threading.local):
    """Tags fragment id of the innermost Dynamo.compile call on this thread (None: none active)."""

    tags = None


_active_tags = _ActiveTags()


def warn_if_unavailable() -> None:
    if _core is None:
        warnings.warn(
            "dftracer: the _core extension has no dynamo hooks; torch.compile runs as aot_eager, untraced",
            RuntimeWarning,
            stacklevel=3,
        )
