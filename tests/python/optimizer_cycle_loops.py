"""Training loops whose optimizer steps are not one per iteration, for
test_optimizer_cycles.py. Run as a script:

    python optimizer_cycle_loops.py SHAPE OUT_DIR

traces into OUT_DIR/run-*.pfw and writes OUT_DIR/loop.json:
{"iterations": [[t0, t0b, t1a, t1], ...]} in perf_counter seconds (t0 before the
iteration's first call, t1 after its last; with a region, t0b once it is
entered and t1a before it is left, else t0b = t0 and t1a = t1).

Shapes (no compile, no eager op tracing: the optimizer hooks record the steps):
  gan          two optimizers per iteration (discriminator, then generator)
  gan_eager    the same with eager op tracing (the test sets
               DFTRACER_TRACE_EAGER=1): the LibTorch observer records torch's
               optimizer step scopes, numbered by the hooks
  gan_region   the same in a `train_step` region
  skip_region  one optimizer, `train_step` region, no optimizer step in the
               first two iterations (a GradScaler skipping on overflow)
  update       one optimizer, its step alone in an `update` region
"""
import json
import os
import sys
import time

STEPS = 6


def main():
    shape, out_dir = sys.argv[1], sys.argv[2]
    import torch
    from dftracer.python import dft_fn, dftracer
    log = dftracer.initialize_log(os.path.join(out_dir, "run"), None, -1)
    torch.manual_seed(0)
    G = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
    D = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    x = torch.randn(32, 64)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    its = []
    time.sleep(0.02)
    for i in range(STEPS):
        t0 = time.perf_counter()
        region = dft_fn("app", "train_step") if shape.endswith("_region") else None
        if region:
            region.__enter__()
        t0b = time.perf_counter()
        if shape.startswith("gan"):
            opt_d.zero_grad()
            D(G(x).detach()).sum().backward()
            opt_d.step()
            opt_g.zero_grad()
            D(G(x)).sum().backward()
            opt_g.step()
        else:
            opt_g.zero_grad()
            G(x).sum().backward()
            time.sleep(0.005)  # the rest of the iteration's work, untraced
            if shape == "update":
                with dft_fn("app", "update"):
                    opt_g.step()
            elif not (shape == "skip_region" and i in (0, 1)):
                opt_g.step()
        t1a = time.perf_counter()
        if region:
            region.__exit__(None, None, None)
        its.append([t0, t0b, t1a, time.perf_counter()])
        time.sleep(0.002)
    time.sleep(0.02)
    log.finalize()
    with open(os.path.join(out_dir, "loop.json"), "w") as f:
        json.dump({"iterations": its}, f)


main()
