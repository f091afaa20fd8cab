"""The GPU checks of scripts/gpu_check.sh (which builds what they need first).

Each check runs in its own Python process (CUPTI is process-wide: our capture
and torch.profiler's Kineto never share one), traces with the CUDA capture
source as a user gets it: DFTRACER_CUDA=1, and initialize_log() starts
libdftracer_cuda.so (the package's own, beside its core library, or --lib)
into the process's trace file; finalize() stops it first (the core's
before_finalize), under trace_eager, reads the trace back with `dftracer-analyze device --format
json` and prints one JSON line: {"check", "ok", "detail", ...}. A check passes
only when every device event is linked to its launch call (correlation) and
to the op or kernel event that launched it (External id, pushed by the
observer and the capture backend's marks). The driver prints the pass/fail
table. NOT YET RUN ON A GPU: written without one.

    python3 scripts/gpu_check.py --analyze .gpu_venv/bin/dftracer-analyze --out /tmp/gpu_check \
        [--lib build-gpu/src/capture/cuda/libdftracer_cuda.so] [--only NAME] [--cpu]

--cpu: this script's own self-test, on a machine without a GPU. Every check
runs its workload on the CPU (smaller sizes, gloo for the all-reduce, no CUDA
capture, torch.profiler on the CPU only) through the same tracing, analysis
and comparison code, and passes when it ran to its end (its device figures
are 0 there): a typo or an API change in this script shows up without a GPU
(tests/python/test_gpu_check_script.py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEV = "cuda"  # "cpu" under --cpu (the self-test)
CHECKS = ["gpu", "eager", "capture_backend", "inductor", "copy", "amp_scaler", "nccl", "sigterm", "cuda_memory", "vs_kineto",
          "overhead"]


# ----------------------------------------------------------------- helpers (child side)

def sync(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def small(gpu_size, cpu_size):
    """A workload's size: the GPU's, or the self-test's on the CPU."""
    return gpu_size if DEV == "cuda" else cpu_size


def cuda_source():
    """The package's device source (dftracer.python.cuda), which initialize_log started."""
    from dftracer.python import cuda
    if not cuda.running():
        raise RuntimeError(f"the CUDA capture did not start with tracing ({cuda.library_path()}; DFTRACER_CUDA="
                           f"{os.environ.get('DFTRACER_CUDA')}): see the warning above")
    return cuda


def stopped_counts(cuda):
    """After finalize (whose before_finalize stopped the source): events written, records dropped."""
    if cuda.running():
        raise RuntimeError("the CUDA capture still runs after finalize (the core did not stop it)")
    return cuda._lib.dftracer_cuda_stop(), cuda._lib.dftracer_cuda_dropped()


def device_report(analyze, paths, by="op"):
    p = subprocess.run([analyze, "device", "--no-progress", "--format", "json", *paths],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"dftracer-analyze device: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def mlp(torch, width=1024):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width),
                               torch.nn.GELU(), torch.nn.Linear(width, 10)).to(DEV)


def train_steps(torch, model, steps, batch=64, width=1024):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=DEV)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        opt.step()
    sync(torch)


def traced(args, name, body, eager=True):
    """Runs body(torch) with dftracer tracing into out/name, the LibTorch observer on
    (eager: every op launching work is an event) and the CUDA capture writing into the
    same trace; returns the device report."""
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    import contextlib
    import torch
    from dftracer.python import dftracer, trace_eager
    log = dftracer.initialize_log(os.path.join(out, "run"), None, -1)
    cuda = cuda_source() if DEV == "cuda" else None
    with trace_eager() if eager else contextlib.nullcontext():
        body(torch)
        sync(torch)
    log.finalize()  # stops the CUDA capture first: its last buffers go into the trace
    events, dropped = stopped_counts(cuda) if cuda else (0, 0)
    traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith((".pfw", ".pfw.gz"))]
    if len(traces) != 1:
        raise RuntimeError(f"expected one trace file (CPU and device events together) in {out}, found {traces}")
    rep = device_report(args.analyze, traces)
    rep["_captured"] = events
    rep["_dropped"] = dropped
    return rep


def linked_result(rep, extra_ok=True, extra=""):
    """Every device event linked to its launch call and, by External id, to the event that launched it."""
    n = rep["device_events"]
    launch = rep["linked"]["launch"]
    by_id = rep["linked"]["op_by_external_id"]
    ok = n > 0 and launch == n and by_id == n and rep["_dropped"] == 0 and extra_ok
    detail = (f"{n} device events, {launch} linked to their launch call, {by_id} to their launching event "
              f"(External id), {rep['linked']['module']} with a module, {rep['_dropped']} dropped")
    return ok, detail + (f"; {extra}" if extra else "")


# ----------------------------------------------------------------- checks (child side)

def check_gpu(args):
    import torch
    if DEV == "cpu":
        return True, f"CPU self-test, torch {torch.__version__}, Python {sys.version.split()[0]}"
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False"
    return True, f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"


def check_eager(args):
    rep = traced(args, "eager", lambda torch: train_steps(torch, mlp(torch), 3))
    ops = [r["key"] for r in rep["op"] if r["events"]]
    return linked_result(rep, extra=f"kernels of {len(ops)} ops")


def compiled_steps(torch, backend, steps=3):
    compiled = torch.compile(mlp(torch), backend=backend)
    x = torch.randn(64, 1024, device=DEV)
    for _ in range(steps):
        compiled(x).sum().backward()


def check_capture_backend(args):
    from dftracer.python import dftracer_dynamo_backend
    return linked_result(traced(args, "capture_backend", lambda torch: compiled_steps(torch, dftracer_dynamo_backend)))


def check_inductor(args):
    from dftracer.python import dftracer_inductor_backend
    rep = traced(args, "inductor", lambda torch: compiled_steps(torch, dftracer_inductor_backend))
    triton = [r for r in rep["kernel"] if r["key"].startswith("triton_")]
    return linked_result(rep, bool(triton), f"{len(triton)} Triton kernels")


def check_copy(args):
    nbytes = small(64 << 20, 1 << 20)

    def body(torch):
        h = torch.empty(nbytes // 4, dtype=torch.float32)
        h = h.pin_memory() if DEV == "cuda" else h
        d = h.to(DEV, non_blocking=True)
        d.add_(1)
        d.cpu()
    rep = traced(args, "copy", body)
    copies = {r["key"]: r for r in rep["kernel"] if r["key"].startswith("Memcpy")}
    ok = "Memcpy HtoD" in copies and "Memcpy DtoH" in copies
    return linked_result(rep, ok, "copies: " + ", ".join(sorted(copies)))


def check_amp_scaler(args):
    """fp16 autocast with a GradScaler, the gradients of iteration 1 of 4 made
    to overflow (the scaler finds it on the device and skips that update):
    four steps, each ended by the scaler's event, the skipped one marked, and
    the scaler's kernels linked to their launches like every other."""
    skip = 1

    def body(torch):
        model = mlp(torch)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler(DEV, init_scale=1024.0)
        x = torch.randn(64, 1024, device=DEV)
        dtype = torch.float16 if DEV == "cuda" else torch.bfloat16
        for i in range(4):
            opt.zero_grad(set_to_none=True)
            with torch.autocast(DEV, dtype=dtype):
                loss = model(x).float().pow(2).mean()
            scaler.scale(loss).backward()
            if i == skip:
                with torch.no_grad():
                    model[0].weight.grad[0, 0] = float("inf")
            scaler.step(opt)
            scaler.update()
    rep = traced(args, "amp_scaler", body)
    out = os.path.join(args.out, "amp_scaler")
    traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith((".pfw", ".pfw.gz"))]
    p = subprocess.run([args.analyze, "summary", "--by", "step", "--format", "json", *traces],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"dftracer-analyze summary --by step: exit {p.returncode}: {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    procs = [q for q in doc["processes"] if q["steps"]]
    skipped = [json.loads(ln)["args"].get("skipped") for ln in trace_lines(traces[0])
               if ln.startswith("{") and '"GradScaler.step#' in ln]
    ok = (len(doc["steps"]) == 4 and len(procs) == 1 and procs[0]["region"] == "GradScaler.step#SGD.step"
          and skipped == [int(i == skip) for i in range(4)])
    return linked_result(rep, ok, f"{len(doc['steps'])} steps by {procs[0]['region'] if procs else 'nothing'}, "
                         f"scaler steps skipped {skipped}")


def check_nccl(args):
    def body(torch):
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("nccl" if DEV == "cuda" else "gloo", rank=0, world_size=1)
        t = torch.ones(1 << 20, device=DEV)
        for _ in range(3):
            dist.all_reduce(t)
        sync(torch)
        dist.destroy_process_group()
    rep = traced(args, "nccl", body)
    coll = [r for r in rep["category"] if r["key"] == "collective" and r["events"]]
    return linked_result(rep, bool(coll), f"{coll[0]['events'] if coll else 0} NCCL kernels")


SIGTERM_CHILD = """
import os, sys, torch
import dftracer  # DFTRACER_ENABLE=1, DFTRACER_CUDA=1: tracing and the CUDA capture start here
from dftracer.python import cuda, trace_eager
dev, n = sys.argv[1], int(sys.argv[2])
assert dev == "cpu" or cuda.running(), "the CUDA capture did not start"
a = torch.randn(n, n, device=dev)
with trace_eager():
    for i in range(1000000):
        a = torch.tanh(a @ a)
        if i == 50:
            if dev == "cuda":
                torch.cuda.synchronize()
            print("ready", flush=True)
"""


def trace_lines(path):
    import gzip
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return f.read().splitlines()


def check_sigterm(args):
    """SIGTERM in the middle of a traced GPU loop: the core's signal thread finalizes the
    trace without stopping the CUDA capture (it has none of the program's descriptors, and
    the interrupted thread may hold a lock CUPTI's flush needs), so the trace is complete
    and holds the CPU events; its device events are those CUPTI completed before the
    signal (the last buffers' are lost, docs/DESIGN.md), however many that is."""
    import signal
    out = os.path.join(args.out, "sigterm")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_CUDA="1" if DEV == "cuda" else "0",
               DFTRACER_LOG_FILE=os.path.join(out, "run"))
    p = subprocess.Popen([sys.executable, "-c", SIGTERM_CHILD, DEV, str(small(2048, 64))], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        return False, f"the traced child did not start: {p.communicate()[1].strip()[-200:]}"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith((".pfw", ".pfw.gz"))]
    if p.returncode != -signal.SIGTERM or len(traces) != 1:
        return False, f"exit {p.returncode}, traces {traces}: {err.strip()[-200:]}"
    lines = trace_lines(traces[0])
    complete = bool(lines) and lines[-1].strip() == "]"
    cpu = 0
    for text in lines:
        try:
            e = json.loads(text)
        except ValueError:
            continue
        cpu += isinstance(e, dict) and e.get("pid") == p.pid and e.get("ph") == "X"
    rep = device_report(args.analyze, traces)
    ok = complete and cpu > 0
    return ok, (f"died of SIGTERM; trace {'complete' if complete else 'NOT finalized'}, {cpu} CPU events; "
                f"{rep['device_events']} device events completed by CUPTI before the signal, "
                f"{rep['linked']['op_by_external_id']} linked to their op")


def check_cuda_memory(args):
    """CUDA's caching allocator through the memory capture (trace_eager(memory=True)):
    the cuda:0 series' peak equals torch.cuda.max_memory_allocated(), and what holds
    it (the block events' replay) sums to it."""
    import torch
    from dftracer.python import dftracer, trace_eager
    out = os.path.join(args.out, "cuda_memory")
    os.makedirs(out, exist_ok=True)
    log = dftracer.initialize_log(os.path.join(out, "run"), None, -1)
    sync(torch)
    if DEV == "cuda":
        torch.cuda.reset_peak_memory_stats()
    with trace_eager(memory=True):
        train_steps(torch, mlp(torch), 3)
    # The self-test on the CPU: the series' own peak stands in for the allocator's figure.
    expected = torch.cuda.max_memory_allocated() if DEV == "cuda" else None
    log.finalize()
    traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith((".pfw", ".pfw.gz"))]
    p = subprocess.run([args.analyze, "memory", "--no-progress", "--format", "json", *traces],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"dftracer-analyze memory: exit {p.returncode}: {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    want = "cuda:0" if DEV == "cuda" else "cpu"
    series = [s for s in doc["series"] if s["device"] == want]
    peaks = [c for c in doc["peaks"] if c["device"] == want]
    if not series or not peaks:
        return False, f"no {want} series or peak in the trace (devices: {[s['device'] for s in doc['series']]})"
    got, c = series[0]["peak_bytes"], peaks[0]
    expected = got if expected is None else expected
    held = c["traced_bytes"] + c["before_trace_bytes"]
    ok = got == expected and held == c["peak_bytes"] == got
    top = ", ".join(f"{r['key'] or '(none)'} {r['bytes']}" for r in c["by_op"][:3])
    return ok, (f"{want} peak {got} B, torch.cuda.max_memory_allocated() {expected} B; held at the peak: "
                f"{c['traced_bytes']} B in {c['blocks']} blocks + {c['before_trace_bytes']} B before trace; top ops {top}")


def kernel_times(rep):
    return {r["key"]: (r["events"], r["device_us"]) for r in rep["kernel"]}


def check_vs_kineto(args):
    """Per kernel, our device time against torch.profiler's for the same run in another process."""
    ours = json.loads(run_child(args, "_kineto_ours", timeout=180)["detail"])
    theirs = json.loads(run_child(args, "_kineto_theirs", timeout=180)["detail"])
    worst, worst_kernel, compared = 0.0, "", 0
    for k, (n, us) in theirs.items():
        if k not in ours or n < 10 or us / n < 20:  # kernels of at least 20 us, seen 10 times
            continue
        on, ous = ours[k]
        rel = abs(ous / on - us / n) / (us / n)
        compared += 1
        if rel >= worst:
            worst, worst_kernel = rel, f"{k[:48]}: {ous / on:.1f} vs {us / n:.1f} us"
    ok = compared > 0 and worst <= 0.05
    return ok, f"{compared} kernels compared, worst mean difference {100 * worst:.1f}% (target 5%): {worst_kernel}"


def _kineto_workload(torch):
    torch.manual_seed(0)
    n = small(4096, 128)
    a = torch.randn(n, n, device=DEV)
    b = torch.randn(n, n, device=DEV)
    for _ in range(30):
        c = a @ b
        a = torch.nn.functional.gelu(c) * 0.5
    sync(torch)


def check__kineto_ours(args):
    rep = traced(args, "vs_kineto_ours", _kineto_workload)
    return True, json.dumps(kernel_times(rep))


def check__kineto_theirs(args):
    import torch
    from torch.profiler import ProfilerActivity, profile
    out = os.path.join(args.out, "vs_kineto_theirs")
    os.makedirs(out, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])) as prof:
        _kineto_workload(torch)
    path = os.path.join(out, "kineto.json")
    prof.export_chrome_trace(path)
    return True, json.dumps(kernel_times(device_report(args.analyze, [path])))


def gpt2_model(torch):
    """GPT-2 small (124M) from a config: transformers' when importable, else the same shape in plain torch."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
        # The self-test's is a 2-layer GPT-2 of width 64 (the same code, minutes less on a CPU).
        shape = {} if DEV == "cuda" else {"n_layer": 2, "n_embd": 64, "n_head": 2}
        return GPT2LMHeadModel(GPT2Config(**shape)).to(DEV), True
    except ImportError:
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True, activation="gelu")

        class Gpt(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(50257, 768)
                self.pos = torch.nn.Embedding(1024, 768)
                self.body = torch.nn.TransformerEncoder(layer, 12)
                self.head = torch.nn.Linear(768, 50257, bias=False)

            def forward(self, ids):
                t = ids.shape[1]
                mask = torch.nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
                h = self.emb(ids) + self.pos(torch.arange(t, device=ids.device))
                return self.head(self.body(h, mask=mask, is_causal=True))
        return Gpt().to(DEV), False


def _gpt2_steps(torch, mode, steps=20, warmup=5):
    steps, warmup = small(steps, 2), small(warmup, 1)
    model, hf = gpt2_model(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 50257, small((8, 512), (1, 32)), device=DEV)

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(ids)
        logits = out.logits if hf else out
        logits.float().mean().backward()
        opt.step()
    for _ in range(warmup):
        step()
    sync(torch)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(torch)
    return (time.perf_counter() - t0) / steps


def check__overhead_untraced(args):
    import torch
    return True, json.dumps(_gpt2_steps(torch, "untraced"))


def check__overhead_traced(args):
    result = {}

    def body(torch):
        result["s"] = _gpt2_steps(torch, "traced")
    traced(args, "overhead_traced", body)
    return True, json.dumps(result["s"])


def check__overhead_profiler(args):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])):
        s = _gpt2_steps(torch, "profiler")
    return True, json.dumps(s)


def check_overhead(args):
    t = {m: json.loads(run_child(args, f"_overhead_{m}", timeout=200)["detail"])
         for m in ("untraced", "traced", "profiler")}
    traced_x = t["traced"] / t["untraced"]
    prof_x = t["profiler"] / t["untraced"]
    ok = traced_x <= 1.03 and t["traced"] < t["profiler"]
    return ok, (f"GPT-2 small training step: untraced {1e3 * t['untraced']:.1f} ms, traced {traced_x:.3f}x, "
                f"torch.profiler {prof_x:.3f}x (target: traced <= 1.03x and below torch.profiler)")


# ----------------------------------------------------------------- driver side

def run_child(args, name, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--analyze", args.analyze, "--out", args.out]
    cmd += ["--cpu"] if args.cpu else []
    # The CUDA capture as a user turns it on; --lib: a library other than the package's own.
    env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_CUDA="1")
    if args.lib:
        env["DFTRACER_CUDA_LIB"] = args.lib
    if name.startswith("_overhead_untraced") or name == "_kineto_theirs" or name == "_overhead_profiler" or args.cpu:
        env["DFTRACER_CUDA"] = "0"  # Kineto needs CUPTI to itself; untraced runs load nothing
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"check": name, "ok": False, "detail": f"timed out after {timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{\"check\"")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise_detail = f"exit {p.returncode}: {tail[:200]}"
        return {"check": name, "ok": False, "detail": raise_detail}
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=None, help="libdftracer_cuda.so to use (default: the package's own)")
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", action="append")
    ap.add_argument("--child")
    ap.add_argument("--cpu", action="store_true", help="self-test of this script on the CPU (no GPU needed)")
    args = ap.parse_args()
    global DEV
    DEV = "cpu" if args.cpu else "cuda"
    unknown = [n for n in args.only or [] if "check_" + n not in globals()]
    if unknown:
        ap.error(f"no check named {', '.join(unknown)} (checks: {', '.join(CHECKS)})")
    args.out = args.out or tempfile.mkdtemp(prefix="gpu_check-")
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        try:
            ok, detail = globals()["check_" + args.child](args)
            ok = ok or args.cpu  # the self-test: it ran to its end
        except Exception as e:  # noqa: BLE001 - reported as the check's failure
            ok, detail = False, f"{type(e).__name__}: {e}"
        print(json.dumps({"check": args.child, "ok": bool(ok), "detail": detail}), flush=True)
        return 0
    results = []
    for name in args.only or CHECKS:
        t0 = time.time()
        r = run_child(args, name, timeout=420 if name in ("overhead", "vs_kineto") else 180)
        if name == "gpu" and r["ok"] and not args.cpu:
            from dftracer.python import cuda
            where = args.lib or cuda.library_path()
            if not os.path.exists(where):
                r = {"check": "gpu", "ok": False, "detail": f"{where} missing: the package was built without "
                     "-DDFTRACER_CUDA=ON"}
        r["seconds"] = time.time() - t0
        results.append(r)
        print(json.dumps(r), flush=True)
        if name == "gpu" and not r["ok"]:
            break  # nothing else can run
    json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
