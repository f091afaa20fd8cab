"""What an op event holds besides the op: the graph's Python glue per node.

    python bench/dynamo/bench_glue.py [--nodes 400] [--calls 50]

An op event of the capture backend runs from its node's mark to the next
mark, so it holds everything the graph's generated Python does between two
ops: the mark call itself, building the op's arguments, the Python call of
the OpOverload and torch's argument parsing before the dispatcher. This
benchmark measures that, on graphs compiled by aot_eager's compiler
(boxed_nop) as the capture backend does, tracing on, ns timestamps:

* "empty" graph: every node calls the builtin ``abs(1)`` (no ATen op, no
  tensor): its events' p50 is the glue floor of one node;
* "view" graph: every node is ``aten.view.default(x, [4])``: p50 of our
  ``function.view.default`` events, against torch.profiler's ``aten::view``
  (RecordFunction inside the dispatcher) on the same graph uninstrumented,
  and against the plain graph's time per node (no marks, no profiler).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.fx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))


def build(n, kind):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    for _ in range(n):
        if kind == "view":
            x = g.call_function(torch.ops.aten.view.default, (x, [4]))
        else:
            g.call_function(abs, (1,))
    g.output(x)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    for node in gm.graph.nodes:
        node.meta["val"] = torch.empty(4) if node.target is not abs else 1
    return gm


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=400)
    p.add_argument("--calls", type=int, default=50)
    a = p.parse_args()
    os.environ["DFTRACER_TIME_RESOLUTION"] = "ns"
    torch.set_num_threads(1)
    from dftracer import _core
    from dftracer.python import dftracer
    from dftracer.python.compile import dynamo_backend as db
    from dftracer.python.torch_compat import boxed_nop
    import trace_reader

    tmp = tempfile.mkdtemp(prefix="dft-glue-")
    log = dftracer.initialize_log(os.path.join(tmp, "glue"), None, -1, enable=True)
    x = torch.randn(4)
    begin, end = _core.dynamo_begin, _core.dynamo_end
    for kind, gid in (("empty", 10**6), ("view", 10**6 + 1)):
        gm = build(a.nodes, kind)
        info = db.instrument(gm, db.INFERENCE, gid)
        f = boxed_nop(gm, [])
        for _ in range(a.calls):
            begin(info.slot, 0, 0)
            f([x])
            end()
    log.finalize()
    events = [e for path in trace_reader.trace_files(tmp, "glue-*.pfw*") for e in trace_reader.read_trace(path)]
    durs = {}
    for e in events:
        if e.get("ph") == "X" and e["name"] in ("function.abs", "function.view.default"):
            durs.setdefault(e["name"], []).append(e["dur"] * 1000)  # us (ns resolution) -> ns

    plain = boxed_nop(build(a.nodes, "view"), [])
    best = float("inf")
    for _ in range(a.calls):
        t = time.perf_counter_ns()
        plain([x])
        best = min(best, time.perf_counter_ns() - t)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(a.calls):
            plain([x])
    prof_view = [e.time_range.elapsed_us() * 1000 for e in prof.events() if e.name == "aten::view"]

    med = statistics.median
    print(f"{a.nodes} nodes x {a.calls} calls, p50 ns per event")
    print(f"empty node (abs(1)), our event:        {med(durs['function.abs']):8.0f}  <- glue floor per node")
    print(f"view, our event:                       {med(durs['function.view.default']):8.0f}")
    print(f"view, torch.profiler aten::view:       {med(prof_view):8.0f}")
    print(f"view, plain graph per node (no marks): {best / a.nodes:8.0f}  (best call / nodes)")


if __name__ == "__main__":
    main()
