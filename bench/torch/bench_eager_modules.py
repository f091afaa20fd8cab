"""Cost of eager module attribution (args.module on eager ops), side by side in one run.

    python bench/torch/bench_eager_modules.py [--iters 20] [--repeats 5] [--calls 20000]

1. ns per module call: a loop over `--calls` calls of a module whose forward
   runs no op (nn.Identity), with eager tracing on, module hooks off vs on;
   and the same with torch's global hooks registered as no-op Python
   functions (the part of the cost that is torch's slow `_call_impl` path
   plus calling two Python hooks, before any work of ours).
2. A small GPT-2 (transformers GPT2LMHeadModel from a config, random
   weights, CPU) eager training step (forward, loss, backward, SGD step):
     untraced
     traced, no modules      trace_eager(), DFTRACER_EAGER_MODULES=0's state
     traced, modules         trace_eager() (module hooks on)
     torch.profiler          profile(activities=[CPU], with_modules=True, with_stack=True)
                             (its stop and event collection timed apart)
   Configurations are interleaved, `--repeats` rounds; the median round
   counts. CPU time of the stepping thread and of the process (the writer
   thread included) beside wall time.
3. `--instructions`: the three configurations but torch.profiler, each in a
   child under valgrind's callgrind, instructions per step of the stepping
   thread (the same on every run, loaded or not).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn

from dftracer.python import dftracer
from dftracer.python.eager import _load as eager_ext
from dftracer.python.eager import modules as eager_modules
from dftracer.python.eager import trace_eager


def clocks():
    return time.thread_time_ns(), time.process_time_ns(), time.perf_counter_ns()


def since(c0):
    c1 = clocks()
    return tuple(b - a for a, b in zip(c0, c1))


# ----------------------------------------------------------- per module call


def call_loop(m, x, n):
    c0 = clocks()
    for _ in range(n):
        m(x)
    return since(c0)


def bench_calls(calls, repeats):
    ext = eager_ext()
    m, x = nn.Identity(), torch.zeros(1)
    from torch.nn.modules import module as nn_module

    def noop_pre(mod, args):
        return None

    def noop_post(mod, args, out):
        return None

    results = {k: [] for k in ("no hooks", "no-op hooks", "dftracer hooks")}
    for _ in range(repeats):
        eager_modules.uninstall()
        results["no hooks"].append(call_loop(m, x, calls))
        hs = (nn_module.register_module_forward_pre_hook(noop_pre),
              nn_module.register_module_forward_hook(noop_post, always_call=True))
        results["no-op hooks"].append(call_loop(m, x, calls))
        for h in hs:
            h.remove()
        eager_modules.install(ext)
        results["dftracer hooks"].append(call_loop(m, x, calls))
        eager_modules.uninstall()
    base = statistics.median(r[0] for r in results["no hooks"]) / calls
    print(f"per module call, nn.Identity, {calls} calls, median of {repeats} (thread CPU ns; wall ns):")
    for k, rs in results.items():
        cpu = statistics.median(r[0] for r in rs) / calls
        wall = statistics.median(r[2] for r in rs) / calls
        print(f"  {k:16s} {cpu:8.0f} CPU  {wall:8.0f} wall   above no hooks: {cpu - base:7.0f} ns CPU")


# ------------------------------------------------------------------ GPT-2


def make_gpt2(layers, width, heads, vocab, ctx):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, n_positions=ctx,
                     attn_implementation="eager")
    return GPT2LMHeadModel(cfg)


def train_step(model, opt, ids):
    opt.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()


def run_steps(model, opt, ids, iters):
    c0 = clocks()
    for _ in range(iters):
        train_step(model, opt, ids)
    return since(c0)


def count_module_calls(model, opt, ids):
    from torch.nn.modules import module as nn_module

    n = [0]

    def count(mod, args):
        n[0] += 1

    h = nn_module.register_module_forward_pre_hook(count)
    train_step(model, opt, ids)
    h.remove()
    return n[0]


def bench_gpt2(args):
    model = make_gpt2(args.layers, args.width, args.heads, args.vocab, args.seq)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq))
    for _ in range(3):
        train_step(model, opt, ids)  # warm up outside every configuration
    ext = eager_ext()
    n_modules = sum(1 for _ in model.modules())
    calls = count_module_calls(model, opt, ids)
    tmp = tempfile.mkdtemp(prefix="bench_eager_modules_")

    def untraced():
        return run_steps(model, opt, ids, args.iters), (0, 0, 0)

    def traced(with_modules):
        def run():
            log = dftracer.initialize_log(os.path.join(tmp, f"t{time.monotonic_ns()}"), None, -1, enable=True)
            with trace_eager():
                if not with_modules:
                    eager_modules.uninstall()
                loop = run_steps(model, opt, ids, args.iters)
            c0 = clocks()
            log.finalize()
            return loop, since(c0)
        return run

    def profiler():
        from torch.profiler import ProfilerActivity, profile

        p = profile(activities=[ProfilerActivity.CPU], with_modules=True, with_stack=True)
        p.__enter__()
        loop = run_steps(model, opt, ids, args.iters)
        c0 = clocks()
        p.__exit__(None, None, None)
        p.events()  # its events collected, as a trace export or a table needs
        return loop, since(c0)

    configs = {"untraced": untraced, "traced, no modules": traced(False), "traced, modules": traced(True),
               "torch.profiler(modules, stack)": profiler}
    results = {k: [] for k in configs}
    for _ in range(args.repeats):
        for k, fn in configs.items():
            results[k].append(fn())
    ms = 1e6 * args.iters
    print(f"\nGPT-2 {args.layers} layers, n_embd {args.width}, {args.heads} heads, vocab {args.vocab}, "
          f"batch {args.batch} x {args.seq} tokens, {n_modules} modules; SGD training step; "
          f"{args.iters} steps per round, median of {args.repeats} rounds; {calls} module calls per step; ms per step:")
    print(f"  {'configuration':32s} {'thread CPU':>10s} {'process CPU':>11s} {'wall':>8s} "
          f"{'stop (proc CPU)':>15s} {'x untraced (proc CPU, stop incl.)':>34s}")
    base = None
    thread = {}
    for k, rs in results.items():
        th = statistics.median(r[0][0] for r in rs) / ms
        pr = statistics.median(r[0][1] for r in rs) / ms
        wa = statistics.median(r[0][2] for r in rs) / ms
        st = statistics.median(r[1][1] for r in rs) / ms
        if base is None:
            base = pr
        print(f"  {k:32s} {th:10.2f} {pr:11.2f} {wa:8.2f} {st:15.2f} {(pr + st) / base:34.3f}")
        thread[k] = th
    # Paired by round (the two ran back to back): less of the load's drift.
    diffs = sorted((a[0][0] - b[0][0]) / ms for a, b in zip(results["traced, modules"], results["traced, no modules"]))
    extra = statistics.median(diffs)
    q1, q3 = diffs[len(diffs) // 4], diffs[(3 * len(diffs)) // 4]
    print(f"  module calls per step: {calls}; modules over no modules, per round (thread CPU): median "
          f"{extra * 1e3:+.0f} us per step ({extra * 1e6 / calls:+.0f} ns per module call), quartiles "
          f"{q1 * 1e3:+.0f} .. {q3 * 1e3:+.0f} us")


# ------------------------------------------------------------ instructions
#
# CPU time on a shared 2-vCPU machine moves by more than the hooks cost per
# GPT-2 step; instructions (callgrind, stepping thread, counted steps only:
# bench_eager_instructions.py's starmap_next toggle) read the same on every run.

INSTR_CONFIGS = ("untraced", "traced, no modules", "traced, modules")


def instr_child(args):
    import itertools

    model = make_gpt2(args.layers, args.width, args.heads, args.vocab, args.seq)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq))

    def run():
        for _ in range(2):
            train_step(model, opt, ids)
        list(itertools.starmap(train_step, itertools.repeat((model, opt, ids), args.steps)))

    if args.child == "untraced":
        run()
        return
    log = dftracer.initialize_log(os.path.join(args.trace_dir, "count"), None, -1, enable=True)
    with trace_eager():
        if args.child == "traced, no modules":
            eager_modules.uninstall()
        run()
    log.finalize()


def bench_instructions(args):
    import re
    import subprocess

    tmp = tempfile.mkdtemp(prefix="bench_eager_modules_cg_")
    got = {}
    for config in INSTR_CONFIGS:
        out = os.path.join(tmp, "cg." + config.replace(" ", "_").replace(",", ""))
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
               sys.executable, os.path.abspath(__file__), "--child", config, "--trace-dir", tmp,
               "--steps", str(args.steps)] + [f"--{k}={getattr(args, k)}" for k in
                                              ("layers", "width", "heads", "vocab", "batch", "seq")]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or m is None:
            raise SystemExit(f"{config} failed under valgrind (exit {r.returncode}):\n{r.stderr[-2000:]}")
        got[config] = int(m.group(1)) / args.steps
    model = make_gpt2(args.layers, args.width, args.heads, args.vocab, args.seq)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    calls = count_module_calls(model, opt, torch.randint(0, args.vocab, (args.batch, args.seq)))
    print(f"\ninstructions per GPT-2 training step (callgrind, stepping thread, {args.steps} steps after 2):")
    for k, v in got.items():
        print(f"  {k:20s} {v:14,.0f}  x untraced {v / got['untraced']:.4f}")
    extra = got["traced, modules"] - got["traced, no modules"]
    print(f"  modules over no modules: {extra:+,.0f} per step, {extra / calls:+,.0f} per module call ({calls} calls)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--trace-dir", help=argparse.SUPPRESS)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.child:
        instr_child(args)
        return
    if args.instructions:
        bench_instructions(args)
        return
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, load {os.getloadavg()}")
    bench_calls(args.calls, args.repeats)
    bench_gpt2(args)


if __name__ == "__main__":
    main()
