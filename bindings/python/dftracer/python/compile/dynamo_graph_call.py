"""What runs at each call of an instrumented graph, around the compiled code.

``wrap`` brackets a compiled graph (boxed calling convention: one list of
arguments) with ``dynamo_begin(slot, grad, tags[, key])`` /
``dynamo_end([key])``, which also record the graph-call event.

``grad_enabled`` must be the caller's grad mode: inside the AOT forward it is
always off. So the callable Dynamo calls (one per Dynamo graph) is wrapped by
``enter``: it notes ``torch.is_grad_enabled()`` and the active tags before
AOT's runtime switches grad off, and the forward/inference graph reads them.
"""

from __future__ import annotations

import threading
from typing import Callable

import torch

from .dynamo_graphs import GraphInfo
from .dynamo_hooks import BACKWARD, FORWARD, _core


class _Entry(threading.local):
    """What the Dynamo-level wrapper saw at the entry of the compiled region."""

    grad = 0
    tags = 0


class _ActiveTags(threading.local):
    """Tags fragment id of the innermost Dynamo.compile call on this thread (None: none active)."""

    tags = None


_entry = _Entry()
_active_tags = _ActiveTags()


def _slot_choice(info: GraphInfo) -> tuple:
    """How a call finds its table's slot: (mode, slots, i0, i1, i2, pick).
    mode 0: the graph's one slot; 1, 2, 3: a dynamic-shape graph taking its
    1, 2 or 3 size symbols as SymInt inputs at i0, i1, i2: ``slots[args[i0]]``,
    ``slots[args[i0]][args[i1]]``, ... (plain subscripts, no Python call);
    4: ``pick(args)`` (sizes read from tensor inputs or more symbols,
    dynamo_sizes; a graph run for several module instances, dynamo_instances)."""
    if info.instances is not None:
        return 4, None, -1, -1, -1, info.instances.pick
    sized = info.sized
    if sized is None:
        return 0, None, -1, -1, -1, None
    if sized.indices:
        i, j, k = (list(sized.indices) + [-1, -1])[:3]
        return len(sized.indices), sized.slots, i, j, k, None
    return 4, None, -1, -1, -1, sized.pick


def wrap(info: GraphInfo, compiled: Callable) -> Callable:
    """`compiled` (boxed) with the graph-call hooks of `info` around it."""
    begin, end, slot = _core.dynamo_begin, _core.dynamo_end, info.slot
    # The slot of this call's table: the graph's, or the one at this call's
    # sizes / for this call's module instance (_slot_choice).
    mode, slots, i0, i1, i2, pick = _slot_choice(info)
    key = info.key_index
    Tensor = torch.Tensor
    if info.phase == BACKWARD:
        is_grad_enabled = torch.is_grad_enabled

        def run(args):
            # Tags come from the paired forward call (C++ side); grad mode
            # is the backward's own (on only under create_graph=True).
            k = args[key] if key >= 0 else None
            begin(slot if mode == 0 else slots[args[i0]] if mode == 1 else slots[args[i0]][args[i1]] if mode == 2
                  else slots[args[i0]][args[i1]][args[i2]] if mode == 3 else pick(args),
                  is_grad_enabled(), 0, k.data_ptr() if type(k) is Tensor else 0)
            try:
                return compiled(args)
            finally:
                end()

    elif info.phase == FORWARD:
        entry = _entry

        def run(args):
            begin(slot if mode == 0 else slots[args[i0]] if mode == 1 else slots[args[i0]][args[i1]] if mode == 2
                  else slots[args[i0]][args[i1]][args[i2]] if mode == 3 else pick(args), entry.grad, entry.tags)
            k = 0
            try:
                outs = compiled(args)
                if key >= 0:
                    o = outs[key]
                    k = o.data_ptr() if type(o) is Tensor else 0
                return outs
            finally:
                end(k)

    else:
        entry = _entry

        def run(args):
            begin(slot if mode == 0 else slots[args[i0]] if mode == 1 else slots[args[i0]][args[i1]] if mode == 2
                  else slots[args[i0]][args[i1]][args[i2]] if mode == 3 else pick(args), entry.grad, entry.tags)
            try:
                return compiled(args)
            finally:
                end()

    run._boxed_call = True
    # What the AOT autograd cache stores when it bundles artifacts: it
    # follows __wrapped__ to the compiler's OutputCode (boxed_nop's
    # AOTEagerOutputCode); a cache hit later runs that without this wrapper.
    run.__wrapped__ = compiled
    # The wrapper owns its GraphInfo: the tables of dynamo_graphs and
    # dynamo_pairing hold it weakly, so it lives exactly as long as the
    # compiled graph can run.
    run._dftracer_graph = info
    return run


def enter(inner: Callable, default_tags: Callable[[], int]) -> Callable:
    """The callable Dynamo calls for one compiled Dynamo graph: notes the
    caller's grad mode and tags, then runs AOT's runtime `inner`."""
    entry = _entry
    is_grad_enabled = torch.is_grad_enabled

    def call_compiled_graph(*args):
        entry.grad = is_grad_enabled()
        active = _active_tags.tags
        entry.tags = active if active is not None else default_tags()
        return inner(*args)

    return call_compiled_graph
