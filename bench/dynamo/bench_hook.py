"""The hook alone: per-node cost of the instrumentation inside a graph.

    python bench/dynamo/bench_hook.py [--nodes 1000] [--rounds 60]

Builds one FX graph of `--nodes` cheap ATen ops (add, view) three times:
plain; instrumented by the capture backend (`dynamo_backend.instrument`,
tracing on, events recorded); and with the same hook statements calling a
trivial builtin (`abs`) instead, which isolates the cost of the statements
themselves from the hook's work. Each is compiled by aot_eager's own
compiler (boxed_nop, what the backend delegates to), interleaved round by round; the best round's calling-thread CPU
time per node is reported, and the differences to the plain graph.
"""
import argparse
import os
import tempfile
import time

import torch
import torch.fx

from dftracer import _core
from dftracer.python import dftracer
from dftracer.python import dynamo_backend as db
from dftracer.python.torch_compat import boxed_nop


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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=60)
    a = p.parse_args()
    torch.set_num_threads(1)
    log = dftracer.initialize_log(os.path.join(tempfile.mkdtemp(prefix="dft-hook-"), "hook"), None, -1)

    plain = boxed_nop(build(a.nodes), [])
    gm = build(a.nodes)
    info = db.instrument(gm, db.INFERENCE, 10**6)
    hooked = boxed_nop(gm, [])
    gm_abs = build(a.nodes)
    db.instrument(gm_abs, db.INFERENCE, 10**6 + 1)
    trivial = boxed_nop(gm_abs, [])
    type(gm_abs).forward.__globals__["dftracer__core_dynamo_mark"] = abs  # same statements, no work

    x = torch.randn(4)
    begin, end = _core.dynamo_begin, _core.dynamo_end

    def run_hooked():
        begin(info.slot, 0, 0)
        hooked([x])
        end()

    runs = {"plain": lambda: plain([x]), "instrumented": run_hooked, "abs-hooks": lambda: trivial([x])}
    best = {}
    for _ in range(a.rounds):
        for k, r in runs.items():
            for _ in range(5):
                t = time.thread_time_ns()
                r()
                best[k] = min(best.get(k, 1e18), time.thread_time_ns() - t)
    log.finalize()
    n = a.nodes
    print(f"plain {best['plain'] / n:.0f} ns/node | hook {(best['instrumented'] - best['plain']) / n:.0f} ns/node"
          f" | statements alone (abs) {(best['abs-hooks'] - best['plain']) / n:.0f} ns/node  (calling-thread CPU)")


if __name__ == "__main__":
    main()
