"""Training loops with nothing that marks a step (no region around an
iteration, no update(step=...)): only the optimizer's steps say where an
iteration ends. For test_optimizer_steps.py. Run as a script:

    python optimizer_loops.py SHAPE OUT_DIR

traces into OUT_DIR/run-*.pfw and writes OUT_DIR/loop.json:
{"iterations": [[t0, t_fwd, t_opt, t1, eval_after], ...], "backward_s": ...,
"forward_s": ..., "forward_inside_s": ...} in perf_counter seconds: the iteration begins at t0 (its
first traced call is made after it), its first forward has returned by t_fwd,
its optimizer step is called after t_opt and has returned by t1; eval_after
says an evaluation (no_grad forwards) ran after it. backward_s / forward_s
sum the brackets around the loop's backward / forward calls (and their
regions, shape ai), *_inside_s the brackets inside those regions.

Every other iteration of compile, gradacc(_preempt), eager and eager_eval begins with
4 ms of untraced work.

Shapes:
  compile   torch.compile(m, backend=dftracer_dynamo_backend), AdamW, an
            evaluation of three no_grad forwards after iteration 2
  gradacc   the same, four micro-batches per optimizer step, no evaluation
  eager_gradacc_preempt  eager with gradacc's four micro-batches, the first
            iteration kept off the model for 25 ms (a sleep) before its
            second micro-batch: longer than any later step
  eager     no compile (the LibTorch observer: DFTRACER_TRACE_EAGER=1), the
            model built and a batch made before the loop
  eager_eval  eager with the compile shape's evaluation after iteration 2 (10 ms
            of untraced batch reading before each forward), and
            two no_grad blocks inside every iteration: a metric on the
            forward's output before the backward, an EMA of the weights after
            the optimizer step
  eager_eval_scope  eager_eval with the evaluation inside a record_function
            scope opened before its no_grad
  eager_eval_short  eager_eval with its evaluation's batch at hand: the
            evaluation's three forwards make the wait after iteration 2
            hardly longer than the usual one
  eager_eval_zg, eager_eval_short_zg  eager_eval, eager_eval_short with
            the optimizer's zero_grad() right after its step() (and its
            evaluation after that), not at the iteration's start
  eager_eval_prep, eager_eval_short_prep  eager_eval, eager_eval_short with
            an evaluation that opens with grad-on ops, as transformers'
            Trainer's does: a loader's seed drawn, then each batch copied
            before its no_grad forward
  ai        eager, dft_ai's compute.forward / compute.backward around the calls
  eager_closure  eager with `opt.step(closure)` (LBFGS's form; PyTorch
            Lightning's automatic optimization passes `closure=`, as every
            other iteration here does): zero_grad, the forward and the
            backward run inside the optimizer's step
  eager_preempt, compile_preempt  eager, compile with no evaluation, 10
            iterations, and the process kept off the model for 25 ms at
            the start of iterations 3 (a sleep) and 7 (a busy wait in
            Python): each step's wait longer than the usual wait plus a step,
            with nothing traced in it
  eager_eval_every  eager_eval over 10 iterations, the evaluation after
            every fourth (1, 5, 9) and iterations 3 and 7 kept off as in
            eager_preempt
  eager_scaler, compile_scaler  eager, compile with no evaluation, a
            GradScaler around the backward and the optimizer step, and the
            gradients made to overflow in iterations 0 and 3: the scaler
            skips their optimizer steps
  untraced  eager without the observer: only the optimizer's steps are traced
            (the capture writes them once dftracer.python.dynamo is imported),
            each iteration's untraced work (k + 1) * 3 ms long
"""
import contextlib
import json
import os
import sys
import time

STEPS = 5
PREEMPTED = ("eager_preempt", "compile_preempt", "eager_eval_every")
SCALED = ("eager_scaler", "compile_scaler")
OVERFLOWS = (0, 3)  # SCALED's iterations whose gradients overflow


def preempt(i):
    """Iterations 3 and 7 wait 25 ms before any traced call, untraced: a
    sleep, then a busy wait (the process descheduled, or busy in Python)."""
    if i == 3:
        time.sleep(0.025)
    elif i == 7:
        t = time.perf_counter()
        while time.perf_counter() - t < 0.025:
            pass


def main():
    shape, out_dir = sys.argv[1], sys.argv[2]
    import torch
    from dftracer.python import dftracer
    log = dftracer.initialize_log(os.path.join(out_dir, "run"), None, -1)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    x = torch.randn(32, 64)
    if shape in ("compile", "gradacc", "compile_preempt", "compile_scaler"):
        from dftracer.python import dftracer_dynamo_backend
        fwd = torch.compile(m, backend=dftracer_dynamo_backend)
    else:
        fwd = m
    if shape == "untraced":
        import dftracer.python.dynamo  # noqa: F401  (the optimizer step events)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0) if shape in SCALED else None
    ema = [p.detach().clone() for p in m.parameters()]
    micro = 4 if shape in ("gradacc", "eager_gradacc_preempt") else 1
    if shape == "ai":
        from dftracer.python import ai
        fwd_ctx, bwd_ctx = ai.compute.forward, ai.compute.backward
    else:
        fwd_ctx = bwd_ctx = contextlib.nullcontext()
    its, fwd_s, bwd_s, fwd_in, bwd_in = [], 0.0, 0.0, 0.0, 0.0
    time.sleep(0.02)  # setup before the loop: outside every step
    for i in range(10 if shape in PREEMPTED else STEPS):
        t0 = time.perf_counter()
        if shape in PREEMPTED:
            preempt(i)
        if shape in ("compile", "gradacc", "eager", "eager_gradacc_preempt", "eager_closure") or shape.startswith("eager_eval"):
            time.sleep(0.004 * (i % 2))  # untraced work before the first traced call (a batch read)
        if shape == "eager_closure":
            seen = {}

            def closure():
                opt.zero_grad()
                loss = fwd(x).sum()
                seen["t_fwd"] = time.perf_counter()
                loss.backward()
                return loss

            t_opt = time.perf_counter()
            if i % 2:
                opt.step(closure=closure)  # as Lightning passes it
            else:
                opt.step(closure)
            its.append([t0, seen["t_fwd"], t_opt, time.perf_counter(), False])
            continue
        zero_grad_after = shape.endswith("_zg")
        if not zero_grad_after:
            opt.zero_grad()
        t_fwd = None
        for k in range(micro):
            if shape == "eager_gradacc_preempt" and i == 0 and k == 1:
                time.sleep(0.025)
            a = time.perf_counter()
            with fwd_ctx:
                a1 = time.perf_counter()
                y = fwd(x)
                b1 = time.perf_counter()
            b = time.perf_counter()
            t_fwd = t_fwd or b
            if shape.startswith("eager_eval"):
                with torch.no_grad():
                    (y.argmax(1) == 0).float().mean()  # a metric
            with bwd_ctx:
                b2 = time.perf_counter()
                if scaler:
                    scaler.scale(y.sum()).backward()
                else:
                    y.sum().backward()
                c1 = time.perf_counter()
            c = time.perf_counter()
            fwd_s += b - a
            bwd_s += c - b
            fwd_in += b1 - a1
            bwd_in += c1 - b2
        if shape == "untraced":
            time.sleep((i + 1) * 0.003)
        if scaler and i in OVERFLOWS:
            with torch.no_grad():
                m[0].weight.grad[0, 0] = float("inf")  # an overflow: the scaler skips this step
        t_opt = time.perf_counter()
        if scaler:
            scaler.step(opt)
        else:
            opt.step()
        t1 = time.perf_counter()
        if scaler:
            scaler.update()
        if zero_grad_after:
            opt.zero_grad()
        if shape.startswith("eager_eval"):
            with torch.no_grad():
                torch._foreach_lerp_(ema, list(m.parameters()), 0.1)  # an EMA of the weights
        if shape == "eager_eval_every":
            ev = i % 4 == 1
        else:
            ev = (shape == "compile" or shape.startswith("eager_eval")) and i == 2
        its.append([t0, t_fwd, t_opt, t1, ev])
        if ev:
            # eager_eval_scope: a record_function scope opened with grad on
            # around the no_grad evaluation
            scope = torch.autograd.profiler.record_function("eval") if shape == "eager_eval_scope" else None
            prep = torch.enable_grad() if shape.endswith("_prep") else None
            with scope or contextlib.nullcontext(), torch.no_grad():
                if prep:
                    with prep:
                        torch.empty((), dtype=torch.int64).random_().item()  # the loader's seed
                for _ in range(3):
                    if shape.startswith("eager_eval") and not shape.startswith("eager_eval_short"):
                        time.sleep(0.01)  # the evaluation's batch, read untraced
                    xb = x
                    if prep:
                        with prep:
                            xb = x.clone()  # the batch moved to the device
                    fwd(xb)
        time.sleep(0.002)  # untraced work between iterations (logging)
    time.sleep(0.02)  # after the loop: outside every step
    log.finalize()
    with open(os.path.join(out_dir, "loop.json"), "w") as f:
        json.dump({"scale": scaler.get_scale() if scaler else None, "iterations": its, "forward_s": fwd_s, "backward_s": bwd_s, "forward_inside_s": fwd_in,
                   "backward_inside_s": bwd_in}, f)


if __name__ == "__main__":
    main()
