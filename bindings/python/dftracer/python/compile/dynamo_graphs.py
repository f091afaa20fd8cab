"""The books of instrumented graphs: one GraphInfo per graph the pass
instrumented, the Dynamo graph ids, and the compile-time counter.

The table holds GraphInfos weakly: the compiled graph's wrapper
(dynamo_graph_call.wrap) owns its GraphInfo, so a graph dropped by Dynamo
(a recompile evicting it, torch._dynamo.reset(), a model that is gone)
leaves the table at the next garbage collection, and a long run with
recompiles keeps only the graphs that can still run.

The C++ side (_core.dynamo_register_graph) has 65536 graph slots, read by
the hot path with one atomic load and no lock, so a table must outlive any
call that could still read it: a finalizer on the GraphInfo frees its slot
(_core.dynamo_unregister_graph) when the GraphInfo dies, that is when the
wrapper that calls the graph is gone, and a backward GraphInfo holds its
forward one (the backward takes the forward's pending calls). Recompiles
and torch._dynamo.reset() therefore never use the slots up; past 65536
graphs alive at once the graph pass raises and the backend compiles that
graph uninstrumented (one warning).
"""

from __future__ import annotations

import threading
import weakref

from . import dynamo_nodes


class GraphInfo:
    """One instrumented graph, for tests and for pairing backward to forward."""

    __slots__ = ("graph", "phase", "slot", "op_names", "entries", "flow_groups", "key_name", "key_index", "serial",
                 "forward", "sized", "instances", "planned", "__weakref__")

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
        self.serial = -1  # position in compile order, set by add_graph
        self.forward = None  # backward: its forward's GraphInfo, kept registered while this one lives
        self.sized = None  # dynamic sizes: dynamo_sizes.SizedSlots (the slot of each call's sizes)
        # a graph run for several instances of a module class: dynamo_instances.InstanceSlots
        self.instances = None
        self.planned = None  # the capture backend's planned memory (dynamo_liveness.GraphPlan) at the hints

    def __repr__(self) -> str:
        return f"GraphInfo(graph={self.graph}, phase={dynamo_nodes.PHASES[self.phase]}, ops={len(self.op_names)})"


_lock = threading.Lock()
# serial -> GraphInfo, weakly (see the module comment).
_graphs: "weakref.WeakValueDictionary[int, GraphInfo]" = weakref.WeakValueDictionary()
_count = [0]  # graphs instrumented so far (the next serial)
_next_graph_id = 0
# Seconds spent in our compile-time work (node tables, hook insertion, the
# recompile of the instrumented graph, graph metadata): what instrumentation
# adds to aot_eager's compile time. For the benchmark. lowered_again: Inductor
# graphs lowered a second time to build their kernel table (an FX graph cache
# hit with no saved table for it).
compile_stats = {"instrument_s": 0.0, "lowered_again": 0}


def instrumented_graphs(since: int = 0) -> list[GraphInfo]:
    """The instrumented graphs that can still run, in compile order; with
    `since` (a graph_count() taken earlier), only those compiled after it."""
    with _lock:
        live = [(k, g) for k, g in _graphs.items() if k >= since]
    return [g for _, g in sorted(live, key=lambda kg: kg[0])]


def graph_count() -> int:
    """How many graphs were instrumented so far, live or not."""
    return _count[0]


def add_graph(info: GraphInfo, forward: GraphInfo | None = None) -> None:
    """Books a registered graph; `forward`: a backward graph's forward."""
    info.forward = forward
    # The C++ slot is freed when the GraphInfo dies (its wrapper is gone);
    # not at interpreter exit, when other threads may still run graphs.
    weakref.finalize(info, _free_slot, info.slot).atexit = False
    with _lock:
        info.serial = _count[0]
        _count[0] += 1
        _graphs[info.serial] = info


def make_sized(info: GraphInfo, sizes, entries: list, fragments_at, register) -> None:
    """Gives a dynamic-shape graph (``sizes``: its dynamo_sizes.GraphSizes)
    its per-size tables: ``register(fragments, pair_slot)`` registers one,
    ``fragments_at(env)`` are its entries' fragments at sizes ``env``. A
    variant's slot is freed with the graph's."""
    from . import dynamo_sizes
    from .dynamo_hooks import FORWARD

    if not sizes or not any(getattr(e, "sym", None) for e in entries):
        return
    pair = info.slot if info.phase == FORWARD else (info.forward.slot if info.forward is not None else -1)
    ref = weakref.ref(info)

    def on_new_slot(slot: int) -> None:
        owner = ref()
        if owner is not None:
            free_with(owner, slot)

    info.sized = dynamo_sizes.SizedSlots(sizes, info.slot, lambda env: register(fragments_at(env), pair),
                                         on_new_slot)


def free_with(info: GraphInfo, slot: int) -> None:
    """Frees `slot` (a variant of `info`'s table) when `info` dies."""
    weakref.finalize(info, _free_slot, slot).atexit = False


def _free_slot(slot: int) -> None:
    from .dynamo_hooks import _core  # imported late: dynamo_hooks imports this module's users

    if _core is not None:
        _core.dynamo_unregister_graph(slot)


def new_graph_id() -> int:
    global _next_graph_id
    with _lock:
        gid = _next_graph_id
        _next_graph_id += 1
        return gid
