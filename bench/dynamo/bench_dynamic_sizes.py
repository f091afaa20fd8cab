"""Per-node cost of dynamic-shape calls: compile-time table vs per-size tables.

    python bench/dynamo/bench_dynamic_sizes.py [--nodes 200] [--rounds 30] [--reps 200]

Compiles one model of `--nodes` cheap ATen ops (add, mul on a (2, s)
tensor) twice with the capture backend, dynamic=True, tracing on: "before",
with the per-size tables switched off (every call recorded with the
compile-time table, as before dynamo_sizes), and "after" (each call's
sizes read from its inputs and looked up among the sizes seen). Both run at
two sequence lengths in alternation, after a warm-up that has seen both,
interleaved round by round; prints the best run's calling-thread CPU and
wall ns per node of each, side by side, and the difference.
"""
import argparse
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_hook import best_times  # noqa: E402


def chain(n):
    """A function of n cheap ops with a code object of its own (Dynamo's
    compile cache is per code object)."""
    src = "def chain(x):\n" + "    x = (x + 1) * 0.5\n" * (n // 2) + "    return x\n"
    scope = {}
    exec(compile(src, f"<chain {id(scope)}>", "exec"), scope)
    return scope["chain"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    os.environ.setdefault("DFTRACER_ENABLE", "1")
    from dftracer.python import dftracer
    from dftracer.python.compile import dynamo_graph_pass
    from dftracer.python.dynamo import dftracer_dynamo_backend
    from dftracer.python.compile.dynamo_graphs import instrumented_graphs

    tmp = tempfile.mkdtemp()
    log = dftracer.initialize_log(os.path.join(tmp, "bench"), None, -1)
    xs = [torch.randn(2, 16), torch.randn(2, 32)]
    compiled = {}
    make_sized = dynamo_graph_pass.make_sized
    for name in ("before", "after"):
        dynamo_graph_pass.make_sized = make_sized if name == "after" else (lambda *args: None)
        f = torch.compile(chain(a.nodes), backend=dftracer_dynamo_backend, dynamic=True)
        with torch.no_grad():
            for x in xs:
                f(x)
        compiled[name] = f
    dynamo_graph_pass.make_sized = make_sized
    graphs = instrumented_graphs()
    assert [g.sized is not None for g in graphs[-2:]] == [False, True], graphs
    nodes = len(graphs[-1].op_names)

    def run(f):
        def call():
            with torch.no_grad():
                f(xs[0])
                f(xs[1])
        return call

    best = best_times({k: run(f) for k, f in compiled.items()}, a.rounds, a.reps)
    log.finalize()
    print(f"{nodes} op nodes per call, best of {a.rounds} rounds x {a.reps}, ns per node (two calls per run)")
    print(f"{'':6} {'before':>10} {'after':>10} {'after-before':>13}")
    for what in ("cpu", "wall"):
        b, c = (best[k, what] / (2 * nodes) for k in ("before", "after"))
        print(f"{what:6} {b:10.1f} {c:10.1f} {c - b:13.1f}")
    # The added work alone, which the difference above cannot resolve below
    # its noise: the size lookup of a call at a seen size.
    pick, args = graphs[-1].sized.pick, [xs[0]]
    reads = [(i, d) for i, d in graphs[-1].sized._sizes.sources]
    if all(d < 0 for _, d in reads):  # the graph takes its sizes as SymInt inputs: the ints
        args = [None] * (1 + max(i for i, _ in reads))
        for i, _ in reads:
            args[i] = 16
    pick(args)
    best = best_times({"pick": lambda: [pick(args) for _ in range(1000)]}, a.rounds, 1)
    per_call = best["pick", "cpu"] / 1000
    print(f"size lookup alone: {per_call:.0f} ns CPU per call, {per_call / nodes:.2f} ns per node "
          f"of this graph, {per_call / 4:.0f} ns per node of a 4-node graph")


if __name__ == "__main__":
    main()
