"""A graph break leaves eager ATen ops between two compiled graphs; all of them
land in one trace.

    DFTRACER_ENABLE=1 DFTRACER_LOG_FILE=traces/eager python examples/python/eager_graph_break.py
    -> traces/eager-<app>-<pid>.pfw.gz

The model's forward is compiled with the capture backend, but its middle
(`normalize`, a function Dynamo is told not to compile) runs eagerly, so
Dynamo makes two graphs with eager code between them. With `trace_eager()`
on, the trace holds:

- the ops of both compiled graphs, forward and backward (cat "dynamo",
  "function.<op>", with module, shapes, FLOPs ...), recorded once, by the
  capture backend;
- the eager ops between them and their backward (cat "aten", "aten::<op>",
  and cat "autograd" for the autograd nodes), recorded by the LibTorch
  observer -- not the graphs' ops a second time;
- the app regions "train_step" and "inference" around each step.

Pass --trace-prefix PREFIX to trace without DFTRACER_ENABLE; --shapes to
record the eager ops' input shapes too.
"""
import argparse
import collections

import torch
import torch.nn as nn

from dftracer.python import dft_fn, dftracer, dftracer_dynamo_backend
from dftracer.python.eager import trace_eager


@torch._dynamo.disable
def normalize(h):
    # Eager on purpose: everything here runs between the two graphs.
    mean = h.mean(dim=1, keepdim=True)
    std = h.std(dim=1, keepdim=True)
    return (h - mean) / (std + 1e-5)


class TwoGraphs(nn.Module):
    def __init__(self, d=32, classes=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, 64))
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        return self.head(normalize(self.encoder(x)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace-prefix", help="trace to PREFIX-<app>-<pid>.pfw.gz")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--shapes", action="store_true", help="record eager ops' input shapes")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")

    log = dftracer.initialize_log(args.trace_prefix, None, -1) if args.trace_prefix else None
    torch.manual_seed(0)
    model = TwoGraphs()
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))

    with trace_eager(shapes=args.shapes):
        for step in range(args.steps):
            with dft_fn("app", name="train_step"):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(compiled(x), y)
                loss.backward()
                opt.step()
            print(f"step {step} loss {loss.item():.4f}")
        with torch.no_grad(), dft_fn("app", name="inference"):
            compiled(x)

    path = dftracer.get_instance().trace_path  # None when tracing is off
    (log or dftracer.get_instance()).finalize()
    if path:
        summarize(path)
    else:
        print("tracing was off (set DFTRACER_ENABLE=1 or pass --trace-prefix)")


def summarize(path):
    """Counts the events of the trace by category, read back from the file."""
    import gzip
    import json

    opener = gzip.open if path.endswith(".gz") else open
    cats = collections.Counter()
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("ph") == "X":
                    cats[e["cat"]] += 1
    print(f"{path}: " + ", ".join(f"{n} {c}" for c, n in sorted(cats.items())))


if __name__ == "__main__":
    main()
