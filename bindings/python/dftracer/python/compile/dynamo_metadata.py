"""Metadata events for each Dynamo graph: where it came from, why it ended,
how many graphs its user function was cut into, and graph breaks that made
no graph. Read from Dynamo's internals through torch_compat."""

from __future__ import annotations

import collections
import json
import os
import threading

import torch.fx

from .. import torch_compat
from .dynamo_hooks import _core

_lock = threading.Lock()
_frame_graphs: collections.Counter = collections.Counter()
_reported_breaks: set[str] = set()


def _root_frame() -> str | None:
    """``fn (file.py:line)`` of the user frame Dynamo is compiling, resume
    functions mapped back to the function they were cut from, so all graphs
    of one user function count together."""
    code = torch_compat.root_frame_code()
    if code is None:
        return None
    return f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def _root_frame_name(code_name: str) -> str:
    # Resume functions after a break are named torch_dynamo_resume_in_<fn>_at_<line>.
    prefix = "torch_dynamo_resume_in_"
    if code_name.startswith(prefix):
        rest = code_name[len(prefix):]
        return rest.rsplit("_at_", 1)[0]
    return code_name


def record_graph_metadata(gm: torch.fx.GraphModule, graph_id: int) -> None:
    """Metadata for one Dynamo graph: where it came from, why it ended, and
    the graph count of its (root) frame; plus any break Dynamo counted that
    ended a frame without a graph."""
    reason, graph_break, fn_name, file, line = torch_compat.compile_reason(gm)
    frame = torch_compat.current_compile_id()
    root = _root_frame() or (_root_frame_name(fn_name) if fn_name else "?")
    with _lock:
        _frame_graphs[root] += 1
        count = _frame_graphs[root]
    info = {
        "graph": graph_id,
        "compile_id": frame,
        "frame": root,
        "code": fn_name,
        "file": file,
        "line": line,
        "ops": sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")),
        "graph_break": graph_break,
        "reason": reason,
    }
    _core.metadata("dynamo.graph", json.dumps(info))
    _core.metadata("dynamo.graphs_per_frame", json.dumps({"frame": root, "graphs": count}))
    if graph_break:
        _core.metadata(
            "dynamo.graph_break",
            json.dumps({"graph": graph_id, "frame": root, "file": file, "line": line, "reason": reason}),
        )
    # Breaks that produced no graph of their own still show up in Dynamo's counters.
    for msg, n in torch_compat.graph_break_counts().items():
        with _lock:
            if msg in _reported_breaks:
                continue
            _reported_breaks.add(msg)
        _core.metadata("dynamo.graph_break_reason", json.dumps({"reason": msg, "count": n}))
