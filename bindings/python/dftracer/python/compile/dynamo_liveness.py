"""Planned memory of an ATen graph: a static liveness pass over its FX nodes.

Computed once per graph at compile time from the fake tensors in
``node.meta["val"]``; the numbers go into the node table's args fragments
(dynamo_nodes.OpEntry.planned), so a call costs nothing more. They are what
the graph's code allocates if every op allocates exactly its outputs and
every buffer is freed right after its last use -- what aot_eager's generated
code does (it drops each value after its last use) -- and are marked
"planned" in the trace, never mixed with the measured bytes of memory
capture (docs/torch.md).

* A buffer is one storage (fake tensors of views share their base's
  storage): an op node allocates the storages of its outputs not seen
  before (views, ``getitem``, in-place ops allocate nothing), of
  ``untyped_storage().nbytes()`` bytes (numel * itemsize for a fresh tensor).
* A buffer is freed after the last op node that reads it or a view of it;
  one no node reads is freed right after the node that made it. Graph
  inputs (parameters, saved activations, tangents) are not the graph's:
  never allocated or freed here. Buffers the graph returns (outputs, saved
  activations) live to its end.
* Per op node i: ``planned_alloc_bytes`` (allocated by i),
  ``planned_free_bytes`` (freed after i), ``planned_live_bytes`` (the
  graph's own buffers live after i, its frees done). The graph's peak is
  during a node: the buffers live before it plus its outputs (its inputs
  are freed only after it), ``planned_peak_bytes`` at node
  ``planned_peak_node``, with the modules whose nodes allocated what is
  live there (``planned_peak_modules``, the largest 5).

Not planned: an op's own temporaries (workspaces, intermediate buffers inside
a kernel) and allocator rounding; docs/torch.md compares with the measured peak.

Dynamic shapes: buffer sizes are expressions of the graph's input-named size
symbols (dynamo_sizes); ``at(env)`` gives the numbers at the sizes of a
variant's table.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_flatten

from . import dynamo_sizes
from ..torch_compat import size_hint

PEAK_MODULES = 5  # modules listed at the peak


def _int(x: Any) -> int:
    return int(size_hint(x)) if isinstance(x, torch.SymInt) else int(x)


def _tensors(val: Any) -> list:
    return [t for t in tree_flatten(val)[0] if isinstance(t, torch.Tensor)]


def _storage(t: torch.Tensor) -> tuple[Any, Any]:
    """(key, nbytes) of a tensor's storage; (None, numel*itemsize) when it has
    none that can be read (a tensor subclass without storage)."""
    try:
        s = t.untyped_storage()
        return s._cdata, s.nbytes()
    except Exception:
        return None, t.numel() * t.element_size()


@dataclass
class NodePlan:
    alloc: int
    free: int
    live: int

    def members(self) -> dict:
        return {"planned_alloc_bytes": self.alloc, "planned_free_bytes": self.free, "planned_live_bytes": self.live}


@dataclass
class GraphPlan:
    nodes: list  # NodePlan per op node
    peak_bytes: int
    peak_node: int  # op node index, -1: the graph allocates nothing
    peak_modules: dict  # module -> bytes live at the peak that its nodes allocated

    def members(self, op_names: list) -> dict:
        d = {"planned_peak_bytes": self.peak_bytes, "planned_peak_node": self.peak_node}
        if self.peak_node >= 0:
            d["planned_peak_op"] = op_names[self.peak_node]
        d["planned_peak_modules"] = self.peak_modules
        return d

    def fragment(self, op_names: list) -> str:
        """The graph-call event's planned members, as JSON members (leading comma)."""
        return "," + json.dumps(self.members(op_names), separators=(",", ":"))[1:-1]


class Liveness:
    """The buffers of one graph and where each is allocated and freed."""

    def __init__(self, gm: torch.fx.GraphModule, ops: list, modules: list,
                 sizes: "dynamo_sizes.GraphSizes | None" = None):
        self.modules = modules  # per op node: its module path ("" none)
        self.sizes: list = []  # per buffer: bytes at the compile-time hints
        self.exprs: list = []  # per buffer: bytes in input-named size symbols (an int when static)
        self.owner: list = []  # per buffer: the op node that allocates it
        self.last: list = []  # per buffer: the op node after which it is freed; len(ops): never
        index = {n: i for i, n in enumerate(ops)}
        buffer_of: dict = {}  # storage key -> buffer
        inputs: set = set()  # storage keys of graph inputs
        refs: dict = {}  # node -> buffers its value refers to
        end = len(ops)

        def new_buffer(nbytes: Any, i: int) -> int:
            self.sizes.append(_int(nbytes))
            e = nbytes
            if sizes:
                with sizes.guarded():
                    e = sizes.expr(nbytes)
            self.exprs.append(e if not isinstance(e, torch.SymInt) else self.sizes[-1])
            self.owner.append(i)
            self.last.append(i)
            return len(self.sizes) - 1

        for n in gm.graph.nodes:
            if n.op == "placeholder":
                for t in _tensors(n.meta.get("val")):
                    key, _ = _storage(t)
                    if key is not None:
                        inputs.add(key)
                continue
            if n.op == "output":
                for a in n.all_input_nodes:
                    for b in refs.get(a, ()):
                        self.last[b] = end
                continue
            i = index.get(n)
            if i is None:  # get_attr and the like: no op event
                continue
            mine = []
            for t in _tensors(n.meta.get("val")):
                key, nbytes = _storage(t)
                if key is not None and key in inputs:
                    continue  # a view of (or in-place write to) an input
                b = buffer_of.get(key) if key is not None else None
                if b is None:
                    b = new_buffer(nbytes, i)
                    if key is not None:
                        buffer_of[key] = b
                mine.append(b)
            refs[n] = mine
            # A getitem reads only the element it selects (its own value).
            reads = [mine] if n.target is operator.getitem else [refs.get(a, ()) for a in n.all_input_nodes]
            for bs in reads:
                for b in bs:
                    if self.last[b] != end:
                        self.last[b] = max(self.last[b], i)

    def plan(self, sizes: list | None = None) -> GraphPlan:
        """The numbers with these buffer sizes (default: at the hints)."""
        sizes = self.sizes if sizes is None else sizes
        n = len(self.modules)
        alloc = [0] * n
        free = [0] * n
        for b, nbytes in enumerate(sizes):
            alloc[self.owner[b]] += nbytes
            if self.last[b] < n:
                free[self.last[b]] += nbytes
        nodes, live, peak, peak_node = [], 0, 0, -1
        for i in range(n):
            if live + alloc[i] > peak:
                peak, peak_node = live + alloc[i], i
            live += alloc[i] - free[i]
            nodes.append(NodePlan(alloc[i], free[i], live))
        held: dict = {}
        if peak_node >= 0:
            for b, nbytes in enumerate(sizes):  # live during the peak node: made by it or before, freed after it or later
                if nbytes and self.owner[b] <= peak_node <= self.last[b]:
                    m = self.modules[self.owner[b]]
                    held[m] = held.get(m, 0) + nbytes
        top = dict(sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))[:PEAK_MODULES])
        return GraphPlan(nodes, peak, peak_node, top)

    def dynamic(self) -> bool:
        return any(not isinstance(e, int) for e in self.exprs)

    def at(self, env: dict) -> GraphPlan:
        """The numbers at sizes `env` (input-named symbol -> value)."""
        if not self.dynamic():
            return self.plan()
        return self.plan([dynamo_sizes.evaluate(e, env, s) for e, s in zip(self.exprs, self.sizes)])
