"""Cost of eager module attribution (args.module on eager ops), side by side in one run.

    python bench/torch/bench_eager_modules.py [--iters 20] [--repeats 5] [--calls 20000] [--calls-only]

1. ns per module call: a loop over `--calls` calls of a module whose forward
   runs no op (nn.Identity), with eager tracing on, module hooks off vs on;
   and the same with torch's global hooks registered as no-op Python
   functions (the part of the cost that is torch's slow `_call_impl` path
   plus calling two Python hooks, before any work of ours).
   Then an nn.Identity called from a module's forward: registered under
   it, held but not registered (reused), or made in the forward (a new
   object each call), hooks off vs on; and loss.backward() of a one-op
   graph with and without the wrapper that makes the seed gradient backward.
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


# ------------------------------------------- module kinds inside a forward


class _Caller(nn.Module):
    """Calls one inner module `n` times per forward: registered under it,
    held but not registered (object.__setattr__), or made in the forward."""

    def __init__(self, kind, n):
        super().__init__()
        self.kind, self.n = kind, n
        if kind == "registered":
            self.inner = nn.Identity()
        else:
            object.__setattr__(self, "inner", nn.Identity())

    def forward(self, x):
        for _ in range(self.n):
            m = nn.Identity() if self.kind == "made in forward" else self.inner
            m(x)
        return x


def bench_kinds(calls, repeats):
    ext = eager_ext()
    x = torch.zeros(1)
    kinds = ("registered", "not registered", "made in forward")
    per = 100  # inner calls per outer call
    results = {(k, on): [] for k in kinds for on in (False, True)}
    for _ in range(repeats):
        for k in kinds:
            m = _Caller(k, per)
            for on in (False, True):
                if on:
                    eager_modules.install(ext)
                m(x)  # a first call outside the count: caches filled
                results[(k, on)].append(call_loop(m, x, calls // per))
                eager_modules.uninstall()
    print(f"\nper inner module call (nn.Identity called from a module's forward, {calls} calls), "
          f"median of {repeats} (thread CPU ns; wall ns):")
    for k in kinds:
        off = statistics.median(r[0] for r in results[(k, False)]) / calls
        on = statistics.median(r[0] for r in results[(k, True)]) / calls
        won = statistics.median(r[2] for r in results[(k, True)]) / calls
        print(f"  {k:16s} hooks off {off:7.0f} CPU   hooks on {on:7.0f} CPU {won:7.0f} wall   "
              f"hooks cost {on - off:6.0f} ns CPU")


# ------------------------------------------------------ per backward() call


def bench_backward(calls, repeats):
    """loss.backward() of the smallest graph (one op to a scalar), eager
    tracing on, with and without the wrapper around Tensor.backward
    that makes its seed gradient backward work."""
    from dftracer.python.eager import backward_phase

    ext = eager_ext()
    w = torch.ones(4, requires_grad=True)
    n = max(calls // 10, 1)

    def loop():
        c0 = clocks()
        for _ in range(n):
            w.sum().backward()
        return since(c0)

    tmp = tempfile.mkdtemp(prefix="bench_eager_backward_")
    log = dftracer.initialize_log(os.path.join(tmp, "t"), None, -1, enable=True)
    results = {"no wrapper": [], "wrapper": []}
    with trace_eager():
        for _ in range(repeats):
            backward_phase.uninstall()
            results["no wrapper"].append(loop())
            backward_phase.install(ext)
            results["wrapper"].append(loop())
    log.finalize()
    print(f"\nper loss.backward() (w.sum().backward(), {n} calls, eager tracing on), median of {repeats} "
          f"(thread CPU ns; wall ns):")
    base = statistics.median(r[0] for r in results["no wrapper"]) / n
    for k, rs in results.items():
        cpu = statistics.median(r[0] for r in rs) / n
        wall = statistics.median(r[2] for r in rs) / n
        print(f"  {k:16s} {cpu:8.0f} CPU  {wall:8.0f} wall   above no wrapper: {cpu - base:6.0f} ns CPU")
    # The wrapper alone, around a function that does nothing: what it adds
    # to a backward() call without the backward's own variation.
    def nothing(*args, **kwargs):
        return None

    wrapped = backward_phase._wrap(nothing, ext.set_in_backward, torch.compiler.is_compiling)
    alone = {"bare": [], "wrapped": []}
    for _ in range(repeats):
        for k, fn in (("bare", nothing), ("wrapped", wrapped)):
            c0 = clocks()
            for _ in range(calls):
                fn(w, None, None, False, inputs=None)
            alone[k].append(since(c0))
    d = (statistics.median(r[0] for r in alone["wrapped"]) - statistics.median(r[0] for r in alone["bare"])) / calls
    print(f"  the wrapper alone (around a no-op function, {calls} calls): {d:.0f} ns CPU per call")


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
    print(f"callgrind outputs and traces in {tmp}", flush=True)
    got, misses = {}, {}
    # The children run at once (each is single-threaded: one intra-op thread).
    children = {}
    for config in INSTR_CONFIGS[1:] if args.traced_only else INSTR_CONFIGS:
        out = os.path.join(tmp, "cg." + config.replace(" ", "_").replace(",", ""))
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", f"--callgrind-out-file={out}"]
        cmd += ["--cache-sim=yes"] if args.cache_sim else []
        cmd += [sys.executable, os.path.abspath(__file__), "--child", config, "--trace-dir", tmp,
                "--steps", str(args.steps)] + [f"--{k}={getattr(args, k)}" for k in
                                               ("layers", "width", "heads", "vocab", "batch", "seq")]
        children[config] = (out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                  env=dict(os.environ, OMP_NUM_THREADS="1")))
    for config, (out, p) in children.items():
        _, stderr = p.communicate()
        m = re.search(r"Collected\s*:\s*(\d+)", stderr)
        if p.returncode != 0 or m is None:
            raise SystemExit(f"{config} failed under valgrind (exit {p.returncode}):\n{stderr[-2000:]}")
        got[config] = int(m.group(1)) / args.steps
        if args.cache_sim:
            misses[config] = cache_misses(stderr, out, args.steps)
    model = make_gpt2(args.layers, args.width, args.heads, args.vocab, args.seq)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    calls = count_module_calls(model, opt, torch.randint(0, args.vocab, (args.batch, args.seq)))
    print(f"\ninstructions per GPT-2 training step (callgrind, stepping thread, {args.steps} steps after 2):")
    for k, v in got.items():
        print(f"  {k:20s} {v:14,.0f}" + (f"  x untraced {v / got['untraced']:.4f}" if "untraced" in got else ""))
    extra = got["traced, modules"] - got["traced, no modules"]
    print(f"  modules over no modules: {extra:+,.0f} per step, {extra / calls:+,.0f} per module call ({calls} calls)")
    if args.cache_sim:
        stores = seq_module_stores(tmp, args.steps + 2)
        print("\ncache misses per step (callgrind --cache-sim=yes, its D1/LL model of this CPU; "
              "stepping thread; D1mw/DLmw: write misses):")
        print(f"  {'configuration':20s} {'D1mr':>10s} {'D1mw':>10s} {'DLmr':>9s} {'DLmw':>9s}   "
              f"{'on_start D1mw':>13s} {'on_start DLmw':>13s}")
        for k, v in misses.items():
            print(f"  {k:20s} {v['D1mr']:10,.0f} {v['D1mw']:10,.0f} {v['DLmr']:9,.0f} {v['DLmw']:9,.0f}   "
                  f"{v['on_start D1mw']:13,.0f} {v['on_start DLmw']:13,.0f}")
        on, off = misses["traced, modules"], misses["traced, no modules"]
        print(f"  seq->module table stores per step (forward ops with a seq_nr and a module): {stores:,.0f}; "
              f"on_start's write misses with modules over without: D1 {on['on_start D1mw'] - off['on_start D1mw']:+,.0f}, "
              f"LL {on['on_start DLmw'] - off['on_start DLmw']:+,.0f} per step")


def cache_misses(stderr, out, steps):
    """Per step: the collected D1/LL read and write misses, and on_start's
    own (exclusive) write misses, where the seq->module store is inlined."""
    import re
    import subprocess

    names = re.search(r"Events\s*:\s*([\w ]+)\n", stderr).group(1).split()
    values = [int(x) for x in re.search(r"Collected\s*:\s*([\d ]+)\n", stderr).group(1).split()]
    values += [0] * (len(names) - len(values))  # callgrind leaves trailing zero counts out
    got = {k: v / steps for k, v in zip(names, values) if k in ("D1mr", "D1mw", "DLmr", "DLmw")}
    ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--show=D1mw,DLmw", "--threshold=100", out],
                         capture_output=True, text=True).stdout
    d1 = dl = 0
    for line in ann.splitlines():
        if "torch_observer" in line and "on_start" in line:
            nums = [0 if x == "." else int(x.replace(",", "")) for x in line.split()[:2]]  # ".": none
            d1 += nums[0]
            dl += nums[1]
    got["on_start D1mw"], got["on_start DLmw"] = d1 / steps, dl / steps
    return got


def seq_module_stores(trace_dir, steps):
    """Forward ATen ops with a seq_nr and a module per step, read back from
    the 'traced, modules' child's trace: the table's stores."""
    import glob
    import gzip
    import json

    n = 0
    for path in glob.glob(os.path.join(trace_dir, "count*.pfw*")):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                line = line.strip().rstrip(",")
                if not line.startswith("{"):
                    continue
                e = json.loads(line)
                a = e.get("args") or {}
                if e.get("cat") == "aten" and "seq_nr" in a and "module" in a and a.get("phase") != "backward":
                    n += 1
    return n / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--traced-only", action="store_true", help="with --instructions: no untraced child")
    ap.add_argument("--cache-sim", action="store_true", help="with --instructions: D1/LL misses too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--trace-dir", help=argparse.SUPPRESS)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--calls-only", action="store_true", help="the per-call figures only, no GPT-2 step")
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
    bench_kinds(args.calls, args.repeats)
    bench_backward(args.calls, args.repeats)
    if args.calls_only:
        return
    bench_gpt2(args)


if __name__ == "__main__":
    main()
