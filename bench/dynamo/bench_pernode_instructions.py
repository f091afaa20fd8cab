"""The capture backend's per-node hook path in instructions (callgrind): the
`dynamo_mark(i)` statements an instrumented graph runs between its ops, and
the op events dynamo_end records from them, on a graph of cheap nodes.

    python bench/dynamo/bench_pernode_instructions.py [--nodes 1000] [--calls 20] [--top 20]

The graph is Python code of the shape FX generates for an instrumented ATen
graph (`dynamo_mark_k = dftracer__core_dynamo_mark(k);  dynamo_mark_k =
None` before each op), with `abs(x)` as the op so that no torch is needed and
the op's own cost is tiny and the same in both configurations:

* "plain": the graph without marks (what aot_eager runs);
* "traced": with marks, bracketed by dynamo_begin / dynamo_end of a
  registered node table, tracing on (the op events are recorded).

Each runs in a child under `valgrind --tool=callgrind
--toggle-collect=starmap_next`: the child warms up outside any
`itertools.starmap`, then runs the counted calls through one, so only those
calls' instructions on the calling thread are counted (the writer thread
never enters starmap_next). Prints instructions per node of both, their
difference (the hook path per node), and the functions that differ most.
Instructions are not time; unlike a CPU-time figure, they read the same at
any load. The whole-model figure in time is `bench_dynamo.py --micro`.
"""
import argparse
import concurrent.futures
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile


def graph_source(n, marks):
    """FX-style code of an n-node graph, with or without the hook calls."""
    lines = ["def forward(x):"]
    for i in range(n):
        if marks:
            name = "dynamo_mark" if i == 0 else f"dynamo_mark_{i}"
            lines.append(f"    {name} = dftracer__core_dynamo_mark({i});  {name} = None")
        lines.append(f"    abs_{i} = abs(x);  x = None" if i == 0 else f"    abs_{i} = abs(abs_{i - 1});  abs_{i - 1} = None")
    if marks:
        lines.append(f"    dynamo_mark_{n} = dftracer__core_dynamo_mark({n});  dynamo_mark_{n} = None")
    lines.append(f"    return (abs_{n - 1},)")
    return "\n".join(lines)


def child(config, nodes, calls, trace_dir):
    from dftracer import _core
    from dftracer.python import dftracer

    scope = {"dftracer__core_dynamo_mark": _core.dynamo_mark}
    exec(graph_source(nodes, config == "traced"), scope)
    forward = scope["forward"]
    if config == "traced":
        log = dftracer.initialize_log(os.path.join(trace_dir, "count"), None, -1, enable=True)
        names = ["function.abs.default"] * nodes
        fragments = [f'"phase":"inference","graph":0,"node":{i},"shape":[[4]]' for i in range(nodes)]
        slot = _core.dynamo_register_graph("graph.inference", '"phase":"inference","graph":0', 2, names, fragments,
                                           [-1] * nodes, 0, -1)
        begin, end = _core.dynamo_begin, _core.dynamo_end

        def call(x):
            begin(slot, 0, 0)
            try:
                return forward(x)
            finally:
                end()
    else:
        def call(x):
            return forward(x)

    for _ in range(20):  # past CPython's warm-up (quickening, specialization)
        call(-1)
    list(itertools.starmap(call, itertools.repeat((-1,), calls)))
    if config == "traced":
        log.finalize()


def count(config, nodes, calls, trace_dir):
    """(total instructions, {function: exclusive instructions}) of the counted calls."""
    out = os.path.join(trace_dir, "callgrind.out." + config)
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
           sys.executable, os.path.abspath(__file__), "--child", config, "--nodes", str(nodes),
           "--calls", str(calls), "--trace-dir", trace_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        tail = "\n".join(r.stderr.splitlines()[-15:])
        raise SystemExit(f"bench_pernode_instructions: {config} failed under valgrind (exit {r.returncode}):\n{tail}")
    ann = subprocess.run(["callgrind_annotate", "--threshold=100", out], capture_output=True, text=True).stdout
    per_fn = {}
    for line in ann.splitlines():
        mm = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if mm and ":" in mm.group(2):
            name = mm.group(2).split(":", 1)[1].split(" [")[0].strip()
            per_fn[name] = per_fn.get(name, 0) + int(mm.group(1).replace(",", ""))
    return int(m.group(1)), per_fn


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=1000, help="op nodes of the graph")
    p.add_argument("--calls", type=int, default=20, help="counted graph calls per configuration")
    p.add_argument("--top", type=int, default=20, help="functions to list")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--trace-dir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.calls < 1 or a.nodes < 1:
        p.error("--calls and --nodes must be >= 1")
    if a.child:
        child(a.child, a.nodes, a.calls, a.trace_dir)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_pernode_instructions: valgrind not found (apt-get install valgrind)")
    trace_dir = tempfile.mkdtemp(prefix="bench_pernode_instr_")
    configs = ("plain", "traced")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            res = dict(zip(configs, pool.map(lambda c: count(c, a.nodes, a.calls, trace_dir), configs)))
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)
    total = a.nodes * a.calls
    plain, traced = res["plain"][0] / total, res["traced"][0] / total
    print(f"callgrind, calling thread; {a.nodes}-node graph, {a.calls} counted calls")
    print(f"plain {plain:.1f} instr/node, traced {traced:.1f}: the hook path adds {traced - plain:.1f} instr/node")
    fb, fo = res["plain"][1], res["traced"][1]
    diff = [((fo.get(k, 0) - fb.get(k, 0)) / total, k) for k in set(fb) | set(fo)]
    diff.sort(key=lambda t: -abs(t[0]))
    print(f"{'instr/node':>10s}  function (exclusive, traced - plain)")
    for d, k in diff[:a.top]:
        if abs(d) >= 0.05:
            print(f"{d:10.1f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
