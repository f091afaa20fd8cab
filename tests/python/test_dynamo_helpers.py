"""Helpers shared by the torch.compile capture tests (test_dynamo*.py); no
tests of its own (named test_dynamo_* to live with the files that use it).

Tracing is started per test with the package API (initialize_log to a
temporary prefix) and finalized at the end; the events are then read back
from the real file with trace_reader.
"""
import collections
import contextlib
import json
import os

import trace_reader


@contextlib.contextmanager
def traced(tmp_path, name="dyn"):
    """Traces the body into a fresh file; yields a list filled with the
    file's events after finalize."""
    from dftracer.python import dftracer

    prefix = os.path.join(str(tmp_path), name)
    log = dftracer.initialize_log(prefix, None, -1, enable=True)  # in the test process: no DFTRACER_ENABLE
    events = []
    try:
        yield events
    finally:
        log.finalize()
        files = trace_reader.trace_files(str(tmp_path), f"{name}-*.pfw*")
        assert files, f"no trace file for prefix {prefix}"
        for f in files:
            events.extend(trace_reader.read_trace(f))


def op_events(events, phase=None, graph=None):
    out = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "dynamo" or not e["name"].startswith("function."):
            continue
        a = e["args"]
        if phase is not None and a["phase"] != phase:
            continue
        if graph is not None and a["graph"] != graph:
            continue
        out.append(e)
    return out


def graph_calls(events, phase=None):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "dynamo"
            and e["name"].startswith("graph.") and (phase is None or e["args"]["phase"] == phase)]


def metadata(events, key):
    """Values (parsed JSON) of our metadata events named `key`."""
    return [json.loads(e["args"]["value"]) for e in events if e.get("ph") == "M" and e.get("name") == key]


def check_counts(events, graphs):
    """Every (graph, phase) that ran: op events == calls x op nodes, and the
    op names are the graph's node names in order, call after call."""
    from dftracer.python.dynamo import instrumented_graphs

    # A call may run a graph compiled earlier (Dynamo reuses a cached graph
    # for a new instance of the same module class), so look in all of them.
    by_key = {(g.graph, g.phase): g for g in list(graphs) + instrumented_graphs()}
    calls = collections.Counter((e["args"]["graph"], e["args"]["phase"]) for e in graph_calls(events))
    assert calls, "no graph calls traced"
    phases = ("forward", "backward", "inference")
    for (gid, phase), n_calls in calls.items():
        info = by_key[(gid, phases.index(phase))]
        ops = op_events(events, phase, gid)
        assert len(ops) == n_calls * len(info.op_names), (gid, phase, len(ops), n_calls, len(info.op_names))
        # File order is record order within a thread: node order, call after call.
        names = [e["name"] for e in ops]
        assert names == info.op_names * n_calls
        nodes = [e["args"]["node"] for e in ops]
        assert nodes == list(range(len(info.op_names))) * n_calls
    return calls
