"""Dynamic shapes: a graph's FLOPs, bytes and shapes at the sizes each call ran with.

A graph compiled with dynamic sizes (``dynamic=True``, or a recompile that
marked a dimension dynamic) has symbolic sizes (``s0``); its node table is
built once, at the compile-time size hints. For such a graph
``GraphSizes(gm)`` finds, for each size symbol, a graph input that holds it
(a SymInt input, else a tensor input's dimension) and renames the symbol
after it (``a3``: input 3; ``a5_1``: dimension 1 of input 5), so a node's
FLOPs and bytes become expressions in its inputs (``expr``), the same in
every process (Inductor's saved kernel tables keep them as text).

At run time (``SizedSlots``) a call reads those inputs (one itemgetter for
SymInt inputs), and the first call at a size not seen before registers the
graph's table again with every args fragment evaluated at that size: a
size variant (src/capture/compile/graph_table.h: a forward variant's calls
wait where the base forward's backward looks); the table registered at
compile time (symbolic shapes, FLOPs and bytes at the hints) is used only
when a variant cannot be built. A call at a seen size costs
one read of its inputs and one dict subscript (no Python call when the
graph's one size symbol is a SymInt input). Past MAX_VARIANTS sizes a graph
records further new sizes with the compile-time table (one warning).
"""

from __future__ import annotations

import operator
import threading
from typing import Any, Callable

import sympy
import torch

from ..diagnostics import warn

MAX_VARIANTS = 256


def _symbol_of(x: Any) -> Any:
    if isinstance(x, torch.SymInt):
        e = x.node.expr
        if isinstance(e, sympy.Symbol):
            return e
    return None


class GraphSizes:
    """The size symbols of one ATen graph and the inputs that hold them."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.canon: dict = {}  # shape-env symbol -> input-named symbol
        self.sources: list[tuple[int, int]] = []  # per input-named symbol: (input index, dim or -1)
        self.shape_env = None
        later = []
        for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
            v = n.meta.get("val")
            if isinstance(v, torch.SymInt):
                self._add(_symbol_of(v), i, -1, v)
            elif isinstance(v, torch.Tensor):
                later.extend((s, i, d) for d, s in enumerate(v.shape))
        for s, i, d in later:  # SymInt inputs first: reading them is cheapest
            self._add(_symbol_of(s), i, d, s)
        self.symbols = [sympy.Symbol(f"a{i}" if d < 0 else f"a{i}_{d}") for i, d in self.sources]

    def _add(self, sym: Any, i: int, d: int, x: Any) -> None:
        if sym is None or sym in self.canon:
            return
        self.canon[sym] = sympy.Symbol(f"a{i}" if d < 0 else f"a{i}_{d}")
        self.sources.append((i, d))
        self.shape_env = self.shape_env or x.node.shape_env

    def __bool__(self) -> bool:
        return bool(self.sources)

    def expr(self, x: Any) -> Any:
        """`x` (int, SymInt or sympy expression) in input-named symbols: an
        int when it has no symbol."""
        if isinstance(x, torch.SymInt):
            x = x.node.expr
        if isinstance(x, sympy.Basic):
            x = x.xreplace(self.canon)
            return int(x) if x.is_number else x
        return x

    def guarded(self) -> Any:
        """A context where sizes compare without adding guards to the compile."""
        import contextlib

        return self.shape_env.suppress_guards() if self.shape_env is not None else contextlib.nullcontext()

    def key_reader(self) -> Callable[[list], Any]:
        """args -> the sizes of this call (a value or a tuple, one per symbol)."""
        if all(d < 0 for _, d in self.sources):
            return operator.itemgetter(*[i for i, _ in self.sources])
        sources = tuple(self.sources)
        if len(sources) == 1:
            i, d = sources[0]
            return lambda args: args[i].shape[d]
        return lambda args: tuple(args[i] if d < 0 else args[i].shape[d] for i, d in sources)

    def env(self, key: Any) -> dict:
        values = key if len(self.symbols) > 1 else (key,)
        return dict(zip(self.symbols, (sympy.Integer(int(v)) for v in values)))


def evaluate(x: Any, env: dict, fallback: Any) -> Any:
    """`x` (an int, a sympy expression in input-named symbols, or the text
    of one) at `env`; `fallback` when a symbol is not in env."""
    if isinstance(x, str):
        x = sympy.sympify(x, locals={str(s): s for s in env})
    if isinstance(x, sympy.Basic):
        x = x.xreplace(env)
        return int(x) if not isinstance(x, sympy.Basic) or x.is_number else fallback
    return x


def as_text(x: Any) -> Any:
    """An expression as text for a saved table; ints as they are."""
    return str(x) if isinstance(x, sympy.Basic) else x


MAX_INLINE = 3  # most SymInt size inputs looked up by subscripts alone


class _SlotsBySize(dict):
    """size -> slot; for a graph that takes d > 1 size symbols as SymInt
    inputs (d <= MAX_INLINE), one level per symbol: first size -> {second
    size -> ... slot}. A size not seen before builds its table
    (``__missing__``): a hit is plain dict subscripts, no Python call."""

    __slots__ = ("owner", "prefix")

    def __init__(self, owner: "SizedSlots", prefix: tuple = ()):
        super().__init__()
        self.owner = owner
        self.prefix = prefix

    def __missing__(self, key: Any) -> Any:
        if len(self.prefix) + 1 < self.owner.depth:
            return self.setdefault(key, _SlotsBySize(self.owner, self.prefix + (key,)))
        return self.owner.new(self.prefix + (key,) if self.owner.depth > 1 else key, self)


class SizedSlots:
    """Per call: the slot of the graph's table at this call's sizes.

    The lookup, by how the graph takes its sizes: up to MAX_INLINE SymInt
    inputs at ``indices``: ``slots[args[i]]``, ``slots[args[i]][args[j]]``,
    ...; else ``slots[read(args)]`` (sizes read from a tensor input's shape,
    or more symbols). ``pick(args)`` does whichever applies, with one Python
    call more; dynamo_graph_call.wrap inlines the subscripts."""

    def __init__(self, sizes: GraphSizes, base_slot: int, register_at: Callable[[dict], int],
                 on_new_slot: Callable[[int], None]):
        self.sizes = sizes
        self.read = sizes.key_reader()
        by_index = all(d < 0 for _, d in sizes.sources) and len(sizes.sources) <= MAX_INLINE
        self.indices = tuple(i for i, _ in sizes.sources) if by_index else ()
        self.depth = max(len(self.indices), 1)
        self.slots = _SlotsBySize(self)
        self._count = 0
        self._base = base_slot
        self._register_at = register_at
        self._on_new_slot = on_new_slot
        self._lock = threading.Lock()

    def pick(self, args: list) -> int:
        if not self.indices:
            return self.slots[self.read(args)]
        d = self.slots
        for i in self.indices:
            d = d[args[i]]
        return d

    def new(self, key: Any, where: dict) -> int:
        """The slot at sizes `key` not seen before (its last size is a key of
        `where`): its table is built and registered (once; a dict stays
        readable while another thread adds)."""
        last = key[-1] if self.depth > 1 else key
        with self._lock:
            slot = dict.get(where, last)
            if slot is not None:
                return slot
            if self._count >= MAX_VARIANTS:
                warn(f"a dynamic-shape graph ran at more than {MAX_VARIANTS} distinct sizes: the calls at further "
                     "sizes are recorded with the compile-time flops/bytes/shapes")
                slot = self._base
            else:
                try:
                    slot = self._register_at(self.sizes.env(key))
                    self._on_new_slot(slot)
                except Exception as e:  # never fail the user's call
                    warn(f"a dynamic-shape graph's table at sizes {key} could not be built ({e}): "
                         "its calls there are recorded with the compile-time flops/bytes/shapes")
                    slot = self._base
            self._count += 1
            where[last] = slot
            return slot
