"""Forward/backward pairing at compile time.

Backward graphs are compiled lazily at the first ``.backward()``. Their nodes
carry the ``seq_nr`` of the forward node they differentiate; seq_nrs of
different graphs never overlap (one global counter), so the backward graph
finds its forward graph by them (``find_forward``). Forward and backward
nodes of the same seq_nr are linked with flow events (arrows in Perfetto);
which seq_nrs the backward will have is known at forward compile time from
the partitioner, whose output ``partition`` looks at. At run time the C++
hooks pair each backward call with its forward call by ``pairing_key``.
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import TYPE_CHECKING

import torch
import torch.fx

from .. import torch_compat
from .dynamo_hooks import BACKWARD, FORWARD

if TYPE_CHECKING:
    from .dynamo_graphs import GraphInfo
    from .dynamo_nodes import OpEntry

_lock = threading.RLock()  # re-entrant: the weakref callback may run in a GC while it is held
# seq_nr -> (weak reference to the forward GraphInfo, module path): how
# backward graphs find their forward. Weak, like dynamo_graphs' table: a
# forward graph that can no longer run has no backward left to compile, and
# its seq_nrs leave this table when its GraphInfo is collected.
_fw_by_seq: dict[int, tuple["weakref.ref[GraphInfo]", str | None]] = {}
_tls_partition = threading.local()


def partition(joint_module, joint_inputs, **kwargs):
    """aot_eager's partitioner; notes which seq_nrs the backward graph has so
    the forward compiler (called next, same thread) starts flows only there."""
    fw, bw = torch_compat.min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
    _tls_partition.bw_seqs = {
        n.meta.get("seq_nr") for n in bw.graph.nodes if n.op == "call_function" and n.meta.get("seq_nr") is not None
    }
    return fw, bw


def find_forward(ops: list[torch.fx.Node]) -> tuple["GraphInfo | None", dict[int, str | None]]:
    """The forward graph most of a backward graph's nodes came from (by
    seq_nr), and the module path of each forward seq_nr found."""
    votes: collections.Counter = collections.Counter()
    by_id: dict[int, "GraphInfo"] = {}
    module_of_seq: dict[int, str | None] = {}
    for n in ops:
        hit = _fw_by_seq.get(n.meta.get("seq_nr"))
        fw = hit[0]() if hit is not None else None
        if fw is not None:
            votes[id(fw)] += 1
            by_id[id(fw)] = fw
            module_of_seq[n.meta["seq_nr"]] = hit[1]
    fw_info = by_id[votes.most_common(1)[0][0]] if votes else None
    return fw_info, module_of_seq


def flow_groups(phase: int, entries: list["OpEntry"], fw_info: "GraphInfo | None") -> tuple[list[int], dict[int, int]]:
    """Per node, the flow group it starts (forward) or finishes (backward),
    -1 for none; and (forward) the seq_nr -> group map. One group per seq_nr
    shared by a forward node and a backward node."""
    flows = [-1] * len(entries)
    groups: dict[int, int] = {}
    if phase == FORWARD:
        bw_seqs = getattr(_tls_partition, "bw_seqs", None)
        _tls_partition.bw_seqs = None
        for i, e in enumerate(entries):
            if e.seq_nr < 0 or e.seq_nr in groups:
                continue
            if bw_seqs is not None and e.seq_nr not in bw_seqs:
                continue
            groups[e.seq_nr] = len(groups)
            flows[i] = groups[e.seq_nr]
    elif phase == BACKWARD and fw_info is not None:
        seen: set[int] = set()
        for i, e in enumerate(entries):
            g = fw_info.flow_groups.get(e.seq_nr)
            if g is not None and e.seq_nr not in seen:
                seen.add(e.seq_nr)
                flows[i] = g
    return flows, groups


def note_forward(info: "GraphInfo") -> None:
    """Makes a forward graph findable by the seq_nrs of its nodes, for as
    long as the graph lives."""
    seqs = sorted({e.seq_nr for e in info.entries if e.seq_nr >= 0})

    def forget(ref: weakref.ref) -> None:
        with _lock:
            for s in seqs:
                hit = _fw_by_seq.get(s)
                if hit is not None and hit[0] is ref:
                    del _fw_by_seq[s]

    ref = weakref.ref(info, forget)
    with _lock:
        for e in info.entries:
            if e.seq_nr >= 0:
                _fw_by_seq.setdefault(e.seq_nr, (ref, e.module))


def table_sizes() -> dict[str, int]:
    """Sizes of the pairing tables (for tests: they shrink when graphs die)."""
    with _lock:
        return {"fw_by_seq": len(_fw_by_seq)}


def pairing_key(gm: torch.fx.GraphModule, phase: int, fw_info: "GraphInfo | None") -> tuple[str | None, int]:
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
