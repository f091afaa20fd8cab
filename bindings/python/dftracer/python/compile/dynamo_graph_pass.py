"""The graph pass: instruments one ATen graph (forward, backward or
inference) in place, before a compiler turns it into code.

* a static node table (``dynamo_nodes``) is registered with the C++ side of
  the hooks (``_core.dynamo_register_graph``) and gets a slot;
* before op node i the graph calls ``dynamo_mark(i)``, before the output
  ``dynamo_mark(n)``; a mark closes the previous node's event in C++.

The pass knows nothing about the compiler that runs next: the capture
backend hands the graph to aot_eager's ``boxed_nop``; another compiler (for
example Inductor) can take the same instrumented graph, as long
as its code calls the hooks in graph order and the call is bracketed by
``dynamo_graph_call.wrap`` (``dynamo_begin``/``dynamo_end``).
"""

from __future__ import annotations

import json

import torch
import torch.fx

from dataclasses import replace

from ..diagnostics import warn
from . import dynamo_instances, dynamo_liveness, dynamo_nodes, dynamo_pairing, dynamo_sizes
from .dynamo_graphs import GraphInfo, add_graph, make_sized
from .dynamo_hooks import BACKWARD, FORWARD, _core


def op_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The nodes that become op events: every call_function node."""
    return [n for n in gm.graph.nodes if n.op == "call_function"]


_liveness_warned = False


def _plan(gm, ops, entries, sizes):
    """(Liveness, its plan at the hints), or (None, None) when the liveness
    pass fails on this graph: then its events go without planned memory
    (one warning a process), never without their graph's instrumentation."""
    global _liveness_warned
    try:
        liveness = dynamo_liveness.Liveness(gm, ops, [e.module or "" for e in entries], sizes)
        return liveness, liveness.plan()
    except Exception as e:  # noqa: BLE001 -- any bug there must not cost the op events
        if not _liveness_warned:
            _liveness_warned = True
            warn(f"the planned-memory pass failed on a compiled graph ({type(e).__name__}: {e}): "
                 "its op events are recorded without planned memory")
        return None, None


class _Fragments(list):
    """A table's node fragments, with the graph-call fragment that goes with
    them (its planned peak is at the same sizes): ``graph``."""

    graph = ""


def instrument(gm: torch.fx.GraphModule, phase: int, graph_id: int) -> GraphInfo:
    """Registers gm's node table and inserts the hook nodes. Returns its GraphInfo."""
    ops = op_nodes(gm)
    fw_info, module_of_seq = dynamo_pairing.find_forward(ops) if phase == BACKWARD else (None, {})
    if fw_info is not None:
        graph_id = fw_info.graph  # forward and backward share the Dynamo graph id

    sizes = dynamo_sizes.GraphSizes(gm)
    modules: dict = {}  # op node -> its module path, for the gradient accumulations after it
    entries = []
    for i, n in enumerate(ops):
        entries.append(dynamo_nodes.describe_node(n, i, module_of_seq.get, sizes, modules.get))
        modules[n] = entries[-1].module
    flows, flow_groups = dynamo_pairing.flow_groups(phase, entries, fw_info)

    phase_name = dynamo_nodes.PHASES[phase]
    # An optimizer step's graph (every op node of it: torch.compile(opt.step))
    # is named and categorized as such; the C++ phase stays the graph's.
    graph_phase = "optimizer" if entries and all(e.optimizer for e in entries) else phase_name
    graph_fragment = json.dumps(
        {"phase": graph_phase, "graph": graph_id, "ops": len(ops)}, separators=(",", ":")
    )[1:-1]

    # Planned memory (dynamo_liveness): per node in its fragment, the peak in the graph-call event's.
    liveness, planned = _plan(gm, ops, entries, sizes)
    if planned is not None:
        entries = [replace(e, planned=p) for e, p in zip(entries, planned.nodes)]
    names = [e.name for e in entries]

    def table(env: dict | None = None, rename=None) -> _Fragments:
        """The node fragments at sizes `env` (None: the compile-time hints),
        module paths through `rename` (an instance's, dynamo_instances)."""
        plan = None if liveness is None else planned if env is None else liveness.at(env)
        out = _Fragments()
        for i, e in enumerate(entries):
            e = e if env is None else e.at(env)
            p = None if plan is None else plan.nodes[i]
            e = replace(e, planned=p) if rename is None else replace(e, planned=p, module=rename(e.module))
            out.append(e.fragment(phase_name, graph_id))
        if plan is None:
            out.graph = graph_fragment
            return out
        if rename is not None:
            held: dict = {}
            for m, b in plan.peak_modules.items():
                held[rename(m) or ""] = held.get(rename(m) or "", 0) + b
            plan = replace(plan, peak_modules=held)
        out.graph = graph_fragment + plan.fragment(names)
        return out

    def register(fragments: list, pair_slot: int) -> int:
        return _core.dynamo_register_graph(f"graph.{graph_phase}", getattr(fragments, "graph", graph_fragment), phase,
                                           names, fragments, flows, len(flow_groups), pair_slot)

    slot = register(table(), fw_info.slot if fw_info is not None else -1)
    key_name, key_index = dynamo_pairing.pairing_key(gm, phase, fw_info)
    info = GraphInfo(graph_id, phase, slot, names, entries, flow_groups, key_name, key_index)
    info.planned = planned
    add_graph(info, fw_info)
    make_sized(info, sizes, entries, table, register)

    def fragments(rename, env):  # an instance's table (dynamo_instances)
        return table(env, rename)

    dynamo_instances.make_instances(info, gm, phase, dynamo_instances.current(), fragments, register)
    if phase == FORWARD:
        dynamo_pairing.note_forward(info)

    g = gm.graph
    mark = _core.dynamo_mark
    for i, n in enumerate(ops):
        with g.inserting_before(n):
            g.call_function(mark, (i,))
    out = next(n for n in reversed(g.nodes) if n.op == "output")
    with g.inserting_before(out):
        g.call_function(mark, (len(ops),))
    return info
