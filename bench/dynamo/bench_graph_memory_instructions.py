"""Memory capture inside a compiled graph, in instructions (callgrind): what
an instrumented graph's node costs on the calling thread with memory capture
off and on, for one or more builds side by side.

    python bench/dynamo/bench_graph_memory_instructions.py [--python NAME=PYTHON ...] [--nodes 1000] [--calls 10]

The graph is bench_hook.py's: `--nodes` cheap ATen nodes, half `add` (each
allocates a 16-byte tensor, and the value before it is freed) and half
`view`, instrumented by the capture backend and run by aot_eager's compiler,
tracing on. "on" turns on memory capture (dftracer._eager's allocation
reports, without the op observer; the build's graph memory probe when it has
one), so each `add` node's allocation and free are reported: torch's own
reporting (the CPU allocator's mutex and size map), ours (the bytes counted
on the node, the alloc/free block events, the counter track) and the node
event's memory args. Each configuration runs in a child under `valgrind
--tool=callgrind --toggle-collect=starmap_next` (warm-up outside the
counted `itertools.starmap`). Prints instructions per node, off and on, and
on - off, per build. Instructions read the same at any load.
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

HERE = os.path.dirname(os.path.abspath(__file__))


def child(memory, nodes, calls, trace_dir):
    import torch

    sys.path.insert(0, HERE)
    from bench_hook import instrumented, memory_capture
    from dftracer.python import dftracer

    torch.set_num_threads(1)
    log = dftracer.initialize_log(os.path.join(trace_dir, f"mem{int(memory)}"), None, -1, enable=True)
    call = instrumented(nodes, 10**6, torch.randn(4))
    if memory:
        memory_capture(True)
    for _ in range(5):
        call()
    list(itertools.starmap(call, itertools.repeat((), calls)))
    if memory:
        memory_capture(False)
    log.finalize()


def count(python, memory, nodes, calls, trace_dir):
    out = os.path.join(trace_dir, f"callgrind.out.{abs(hash(python))}.{int(memory)}")
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", f"--callgrind-out-file={out}", python,
           os.path.abspath(__file__), "--child", str(int(memory)), "--nodes", str(nodes), "--calls", str(calls),
           "--trace-dir", trace_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        tail = "\n".join(r.stderr.splitlines()[-15:])
        raise SystemExit(f"bench_graph_memory_instructions: {python} failed under valgrind (exit {r.returncode}):\n{tail}")
    return int(m.group(1)) / (nodes * calls)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--python", action="append", default=[], metavar="NAME=PYTHON",
                   help="a build: a Python with that build's dftracer installed (repeat; default: this Python)")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--trace-dir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        child(a.child == "1", a.nodes, a.calls, a.trace_dir)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_graph_memory_instructions: valgrind not found")
    builds = [b.split("=", 1) if "=" in b else (b, b) for b in a.python] or [("this", sys.executable)]
    trace_dir = tempfile.mkdtemp(prefix="bench_graph_memory_")
    jobs = [(name, py, mem) for name, py in builds for mem in (False, True)]
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            res = list(pool.map(lambda j: count(j[1], j[2], a.nodes, a.calls, trace_dir), jobs))
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)
    got = {(j[0], j[2]): r for j, r in zip(jobs, res)}
    print(f"callgrind, calling thread; {a.nodes}-node graph ({a.nodes // 2} allocating adds), {a.calls} counted calls")
    for name, _ in builds:
        off, on = got[name, False], got[name, True]
        print(f"{name}: memory off {off:.1f} instr/node, on {on:.1f}: on - off {on - off:.1f} instr/node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
