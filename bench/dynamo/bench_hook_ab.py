"""Per-node hook cost of two builds of dftracer._core, side by side in ONE process.

    python bench/dynamo/bench_hook_ab.py A=/path/to/a/dftracer/_core*.so B=/path/to/b/... \
        [--nodes 1000] [--rounds 150]

For comparing a change to the capture hot path with the commit before it
(build each with `pip install --no-deps --target DIR .`). Both extensions are
loaded under their own package names (their init function is the same,
PyInit__core); they share one libdftracer_core (same SONAME, loaded once), so
only the capture code differs, and both run in the same process, machine
state and interleaving. bench_hook.py's graph of cheap ATen ops is built
plain, with each build's dynamo_mark before every op node (as the capture
backend inserts it), and with the builtin `abs` there instead (the Python
call alone). Runs are interleaved round by round; the best run of each is
reported per node over the plain graph, calling-thread CPU then wall time.
Graph-to-graph differences of a few tens of ns/node remain (the order the
builds are given in moved the result by up to ~30 ns/node on a loaded
2-core machine): run it several times with the builds in both orders and
compare the means.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_hook import best_times, build  # noqa: E402


def load(tag, path):
    name = f"{tag}._core"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(mod)
    return mod


def hooked(n, hook):
    """The graph with hook(i) before op node i and hook(n) before the output."""
    gm = build(n)
    ops = [nd for nd in gm.graph.nodes if nd.op == "call_function"]
    for i, nd in enumerate(ops):
        with gm.graph.inserting_before(nd):
            gm.graph.call_function(hook, (i,))
    with gm.graph.inserting_before(next(nd for nd in gm.graph.nodes if nd.op == "output")):
        gm.graph.call_function(hook, (len(ops),))
    gm.recompile()
    return gm, len(ops)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("builds", nargs=2, metavar="TAG=PATH", help="a name and the _core*.so of a build")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=150)
    a = p.parse_args()
    torch.set_num_threads(1)
    mods = {t: load(t, path) for t, path in (b.split("=", 1) for b in a.builds)}
    first = next(iter(mods.values()))
    first.init(os.path.join(tempfile.mkdtemp(prefix="dft-hook-ab-"), "ab"), None, -1)

    plain = build(a.nodes)
    runs = {}
    for tag, m in mods.items():
        gm, n = hooked(a.nodes, m.dynamo_mark)
        slot = m.dynamo_register_graph("graph.inference", "", 2, ["function.op"] * n, [""] * n, [-1] * n, 0, -1)

        def run(gm=gm, m=m, slot=slot):
            m.dynamo_begin(slot, 0, 0)
            gm(x)
            m.dynamo_end()

        runs[tag] = run
    gm_abs, _ = hooked(a.nodes, abs)
    x = torch.randn(4)
    runs = {"plain": lambda: plain(x), **runs, "abs": lambda: gm_abs(x)}

    best = best_times(runs, a.rounds, 3)
    first.finalize()
    for clock in ("cpu", "wall"):
        base = best["plain", clock]
        extra = " | ".join(f"{k} +{(best[k, clock] - base) / a.nodes:.1f}" for k in runs if k != "plain")
        print(f"{clock:4s}: plain {base / a.nodes:.0f} ns/node | {extra} ns/node")


if __name__ == "__main__":
    main()
