"""The hook alone: per-node cost of the instrumentation inside a graph.

    python bench/dynamo/bench_hook.py [--nodes 1000] [--rounds 60] [--memory]

Builds one FX graph of `--nodes` cheap ATen ops (add, view) three times:
plain; instrumented by the capture backend (`dynamo_backend.instrument`,
tracing on, events recorded); and with the same hook statements calling a
trivial builtin (`abs`) instead, which isolates the cost of the statements
themselves from the hook's work. Each is compiled by aot_eager's own
compiler (boxed_nop, what the backend delegates to), interleaved round by
round; the best run's calling-thread CPU
time per node is reported, then its wall time, with the differences to the
plain graph.

--memory: memory capture on (the allocation reports of dftracer._eager,
without the op observer), so each `add` node allocates and frees a block
that is reported: the hook's figure then includes what counting those bytes
on the node costs (the capture backend's memory probe, where the build has
one; a build without it gives them to no op).
"""
import argparse
import os
import tempfile
import time

import torch
import torch.fx


def build(n):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    for _ in range(n // 2):
        x = g.call_function(torch.ops.aten.add.Tensor, (x, 1))
        x = g.call_function(torch.ops.aten.view.default, (x, [-1]))
    g.output(x)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    for node in gm.graph.nodes:
        node.meta["val"] = torch.empty(4)
    return gm


def memory_capture(on):
    """Memory capture on or off on this thread (dftracer._eager's allocation
    reports, without the op observer), with the build's graph memory probe
    where it has one (a build without one gives graph nodes' bytes to no op)."""
    from dftracer import _core, _eager

    _eager.enable_memory(on)
    if on and hasattr(_eager, "set_graph_memory_probe"):
        _eager.set_graph_memory_probe(_core.dynamo_memory_fn)


def instrumented(n, graph_id, x):
    """build(n) instrumented by the capture backend (inference), compiled by
    aot_eager's compiler: a callable running one traced call on [x]."""
    from dftracer import _core
    from dftracer.python.compile import dynamo_backend as db
    from dftracer.python.torch_compat import boxed_nop

    gm = build(n)
    info = db.instrument(gm, db.INFERENCE, graph_id)
    graph = boxed_nop(gm, [])
    begin, end = _core.dynamo_begin, _core.dynamo_end

    def run():
        begin(info.slot, 0, 0)
        graph([x])
        end()

    return run


def best_times(runs, rounds, reps):
    """Runs each callable of `runs` reps times a round, interleaved, for
    `rounds` rounds; returns {(name, "cpu"|"wall"): best ns of one run}
    (calling-thread CPU time, wall time)."""
    best = {}
    for _ in range(rounds):
        for k, r in runs.items():
            for _ in range(reps):
                c, w = time.thread_time_ns(), time.perf_counter_ns()
                r()
                w, c = time.perf_counter_ns() - w, time.thread_time_ns() - c
                best[k, "cpu"] = min(best.get((k, "cpu"), 1e18), c)
                best[k, "wall"] = min(best.get((k, "wall"), 1e18), w)
    return best


def main():
    # Imported here, not at the top: bench_hook_ab.py imports build() from
    # this file next to two other builds of dftracer._core.
    from dftracer.python import dftracer
    from dftracer.python.compile import dynamo_backend as db
    from dftracer.python.torch_compat import boxed_nop

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--memory", action="store_true", help="memory capture on (allocation reports)")
    a = p.parse_args()
    torch.set_num_threads(1)
    log = dftracer.initialize_log(os.path.join(tempfile.mkdtemp(prefix="dft-hook-"), "hook"), None, -1, enable=True)

    x = torch.randn(4)
    plain = boxed_nop(build(a.nodes), [])
    run_hooked = instrumented(a.nodes, 10**6, x)
    gm_abs = build(a.nodes)
    db.instrument(gm_abs, db.INFERENCE, 10**6 + 1)
    trivial = boxed_nop(gm_abs, [])
    type(gm_abs).forward.__globals__["dftracer__core_dynamo_mark"] = abs  # same statements, no work

    if a.memory:
        memory_capture(True)
    runs = {"plain": lambda: plain([x]), "instrumented": run_hooked, "abs-hooks": lambda: trivial([x])}
    best = best_times(runs, a.rounds, 5)
    if a.memory:
        memory_capture(False)
    log.finalize()
    n = a.nodes
    for clock, what in (("cpu", "calling-thread CPU"), ("wall", "wall")):
        plain = best["plain", clock]
        print(f"plain {plain / n:.0f} ns/node | hook {(best['instrumented', clock] - plain) / n:.0f} ns/node"
              f" | statements alone (abs) {(best['abs-hooks', clock] - plain) / n:.0f} ns/node  ({what})")


if __name__ == "__main__":
    main()
