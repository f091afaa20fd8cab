"""Training loops in the shapes users write, each timing its own iterations
with perf_counter, for the step tests (test_step_shapes.py). Run as a script:

    python step_shapes.py SHAPE OUT_DIR

traces into OUT_DIR/run-*.pfw and writes OUT_DIR/loop.times (JSON):
{"iterations": [[t0, t0b, t1a, t1, epoch], ...]} in perf_counter seconds:
each iteration's step begins (its region is entered, its mark written) between
t0 and t0b and its body ends (its region is left) between t1a and t1; `epoch`
counts the loop's epochs (one per shape without them). Brackets, not one time
each: a preempted thread between a perf_counter call and the event it brackets
(a loaded machine) moves the bracket's ends apart, not the event out of it.

Shapes:
  epoch_regions   an `epoch` region around `train_step` regions (capture backend)
  compile_update  torch.compile(m, backend=dftracer_dynamo_backend) and
                  dynamo.update(step=...), no regions
  dynamo_forward  Dynamo(...).compile(model.forward) and update(step=...), no regions
                  (docs/capture.md's pattern)
  dataloader      a DataLoader with two workers whose dataset's __getitem__ is a
                  region; two epochs of four `step` regions in `epoch` regions
"""
import json
import os
import sys
import time

STEPS = 4


def model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))


def work(torch, fwd, opt, x):
    opt.zero_grad()
    fwd(x).sum().backward()
    opt.step()
    time.sleep(0.01)  # untraced work in the iteration (logging, a host sync)


def epoch_regions(torch, out):
    from dftracer.python import dft_fn, dftracer_dynamo_backend
    m = model(torch)
    fwd = torch.compile(m, backend=dftracer_dynamo_backend)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    for epoch in range(2):
        with dft_fn("train", name="epoch"):
            for _ in range(STEPS):
                t0 = time.perf_counter()
                with dft_fn("train", name="train_step"):
                    t0b = time.perf_counter()
                    work(torch, fwd, opt, x)
                    t1a = time.perf_counter()
                out.append([t0, t0b, t1a, time.perf_counter(), epoch])
                time.sleep(0.002)  # between iterations: inside the step that ends here
            time.sleep(0.05)  # end-of-epoch work: outside every step


def compile_update(torch, out):
    from dftracer.python import dynamo, dftracer_dynamo_backend
    m = model(torch)
    fwd = torch.compile(m, backend=dftracer_dynamo_backend)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    for step in range(2 * STEPS):
        t0 = time.perf_counter()
        dynamo.update(step=step)
        t0b = time.perf_counter()
        dynamo.update(step=step, epoch=0)  # the same step again: no second mark
        work(torch, fwd, opt, x)
        t1 = time.perf_counter()
        out.append([t0, t0b, t1, t1, 0])
    time.sleep(0.05)  # after the loop: outside
    fwd(x)  # an evaluation after the loop still carries the last step's tag


def dynamo_forward(torch, out):
    from dftracer.python import Dynamo
    m = model(torch)
    d = Dynamo("train")
    m.forward = d.compile(m.forward)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    for step in range(2 * STEPS):
        t0 = time.perf_counter()
        d.update(step=step)
        t0b = time.perf_counter()
        work(torch, m, opt, x)
        t1 = time.perf_counter()
        out.append([t0, t0b, t1, t1, 0])
    time.sleep(0.05)


class Squares:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        from dftracer.python import dft_fn
        with dft_fn("data", name="Squares.__getitem__"):
            time.sleep(0.001)
            return torch.full((64,), float(i))


def dataloader(torch, out):
    from dftracer.python import dft_fn, dftracer_dynamo_backend
    m = model(torch)
    fwd = torch.compile(m, backend=dftracer_dynamo_backend)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(Squares(STEPS * 8), batch_size=8, num_workers=2)
    for epoch in range(2):
        with dft_fn("train", name="epoch"):
            for x in loader:
                t0 = time.perf_counter()
                with dft_fn("train", name="step"):
                    t0b = time.perf_counter()
                    work(torch, fwd, opt, x)
                    t1a = time.perf_counter()
                out.append([t0, t0b, t1a, time.perf_counter(), epoch])


def main():
    shape, out_dir = sys.argv[1], sys.argv[2]
    import torch
    from dftracer.python import dftracer
    log = dftracer.initialize_log(os.path.join(out_dir, "run"), None, -1)
    iterations = []
    globals()[shape](torch, iterations)
    log.finalize()
    with open(os.path.join(out_dir, "loop.times"), "w") as f:
        json.dump({"iterations": iterations}, f)


if __name__ == "__main__":
    main()
