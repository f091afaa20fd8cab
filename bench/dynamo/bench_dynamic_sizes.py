"""Per-node cost of dynamic-shape calls: compile-time table vs per-size tables.

    python bench/dynamo/bench_dynamic_sizes.py [--nodes 200] [--rounds 30] [--reps 200]

Compiles one model of `--nodes` cheap ATen ops (add, mul on a (2, s)
tensor) twice with the capture backend, dynamic=True, tracing on: "before",
with the per-size tables switched off (every call recorded with the
compile-time table, as before dynamo_sizes), and "after" (each call's
sizes read from its inputs and looked up among the sizes seen). Both run at
two sequence lengths in alternation, after a warm-up that has seen both,
interleaved round by round; prints the best run's calling-thread CPU and
wall ns per node of each, side by side, and the difference. Then the slot
lookup alone, before (the previous lookup) and after (the current one), per
node of a 1, 2, 4 and 200-node graph, and with per-instance tables
(dynamo_instances).
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
    lookups(graphs[-1], xs[0], a.rounds)


MODES = ("one slot", "slots[args[i0]]", "slots[args[i0]][args[i1]]", "slots[args[i0]][args[i1]][args[i2]]",
         "pick(args)")


def _timed_loop(expr, scope, n=1000):
    """A function evaluating `expr` n times (unrolled 10x): the loop's own
    cost is the same for every expression, so differences are the expression's."""
    body = "\n".join(f"        s = {expr}" for _ in range(10))
    src = f"def loop(args):\n    for _ in range({n // 10}):\n{body}\n"
    exec(compile(src, "<bench>", "exec"), scope)
    return scope["loop"]


def lookups(info, x, rounds):
    """The added work alone, which the whole-call difference cannot resolve
    below its noise: what a call at seen sizes evaluates to find its slot,
    "before" (the previous per-call lookup: a method reading the sizes with
    an itemgetter, then dict.get and a None check) and "after" (what
    dynamo_graph_call.wrap's run evaluates now), both less the static
    graph's (its one slot). Also a graph run for several module instances
    (dynamo_instances: one data_ptr() and one dict lookup more)."""
    import operator

    from dftracer.python.dynamo_graph_call import _slot_choice

    sized = info.sized
    reads = list(sized.sizes.sources)
    args = [x]
    if all(d < 0 for _, d in reads):  # the graph takes its sizes as SymInt inputs: the ints
        args = [None] * (1 + max(i for i, _ in reads))
        for i, _ in reads:
            args[i] = x.shape[1]
    mode, slots, i0, i1, i2, pick = _slot_choice(info)
    sized.pick(args)  # seen

    class Before:  # the lookup as it was, on the same dict
        def __init__(self):
            self.read = operator.itemgetter(*[k for k, _ in reads]) if all(d < 0 for _, d in reads) \
                else sized.read
            self.slots = {self.read(args): info.slot}

        def pick(self, args):
            key = self.read(args)
            slot = self.slots.get(key)
            return slot if slot is not None else -1

    # what dynamo_graph_call.wrap's run evaluates
    expr = ("slot if mode == 0 else slots[args[i0]] if mode == 1 else slots[args[i0]][args[i1]] if mode == 2 "
            "else slots[args[i0]][args[i1]][args[i2]] if mode == 3 else pick(args)")
    scope = {"slot": info.slot, "slots": slots, "i0": i0, "i1": i1, "i2": i2, "pick": pick}
    loops = {
        "static": _timed_loop(expr, {**scope, "mode": 0}),
        "before": _timed_loop("slot if pick is None else pick(args)",
                              {"slot": info.slot, "pick": Before().pick}),
        "after": _timed_loop(expr, {**scope, "mode": mode}),
    }
    instances = _instances_pick(info, args)
    if instances is not None:
        loops["instances"] = _timed_loop(expr, {**scope, "mode": 4, "pick": instances})
    best = best_times({k: (lambda f=f: f(args)) for k, f in loops.items()}, rounds, 1)
    added = {k: (best[k, "cpu"] - best["static", "cpu"]) / 1000 for k in loops if k != "static"}
    print(f"slot lookup of a call at seen sizes, ns CPU per graph call added to a static graph's "
          f"(mode {mode}: {MODES[mode]})")
    print(f"{'':22} {'before':>8} {'after':>8}" + (f" {'instances':>10}" if "instances" in added else ""))
    for nodes in (1, 2, 4, 200):
        row = f"{f'per node, {nodes}-node graph':22} {added['before'] / nodes:8.1f} {added['after'] / nodes:8.1f}"
        if "instances" in added:
            row += f" {added['instances'] / nodes:10.1f}"
        print(row)


def _instances_pick(info, args):
    """A dynamo_instances.InstanceSlots.pick over this graph's own slot, as a
    child frame's graph has it, keyed on a parameter passed at args[len]."""
    from dftracer.python import dynamo_instances

    p = torch.nn.Parameter(torch.zeros(2))
    key = dynamo_instances.InstanceInput(len(args), "weight", "blocks.0", (2,), [], None)
    slots = dynamo_instances.InstanceSlots(key, len(args), p, lambda a: info.slot, lambda rename: None)
    args.append(p)
    slots.pick(args)
    _instances_pick.keep = p
    return slots.pick


if __name__ == "__main__":
    main()
