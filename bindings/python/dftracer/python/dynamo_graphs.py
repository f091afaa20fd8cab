"""The books of instrumented graphs: one GraphInfo per graph the pass
instrumented, the Dynamo graph ids, and the compile-time counter."""

from __future__ import annotations

import threading

from . import dynamo_nodes


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
_next_graph_id = 0
# Seconds spent in our compile-time work (node tables, hook insertion, the
# recompile of the instrumented graph, graph metadata): what instrumentation
# adds to aot_eager's compile time. For the benchmark.
compile_stats = {"instrument_s": 0.0}


def instrumented_graphs() -> list[GraphInfo]:
    """Every graph instrumented in this process so far, in compile order."""
    with _lock:
        return list(_graphs)


def add_graph(info: GraphInfo) -> None:
    with _lock:
        _graphs.append(info)


def new_graph_id() -> int:
    global _next_graph_id
    with _lock:
        gid = _next_graph_id
        _next_graph_id += 1
        return gid
