"""A small CNN traced with the torch.compile capture backend, training then inference.

    DFTRACER_ENABLE=1 DFTRACER_LOG_FILE=traces/cnn python examples/python/cnn.py
    -> traces/cnn-<app>-<pid>.pfw.gz

Every ATen op of the forward, backward and inference graphs becomes an event
(cat "dynamo", name "function.<op>") whose args say which layer it belongs to
(module), the shapes it saw, its FLOPs and bytes, the phase and the grad mode;
the loss, the backward call and the optimizer step are app regions around them.
Without DFTRACER_ENABLE the script runs untraced (pass --trace-prefix to trace
anyway).
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from dftracer.python import Dynamo, dft_fn, dftracer


class ConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.fc1 = nn.Linear(32 * 12 * 12, 64)
        self.dropout = nn.Dropout(0.25)
        self.fc2 = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(F.relu(self.fc1(torch.flatten(x, 1))))
        return self.fc2(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--trace-prefix", default=None, help="trace file prefix (starts tracing without DFTRACER_ENABLE)")
    a = p.parse_args()

    log = dftracer.initialize_log(a.trace_prefix, None, -1) if a.trace_prefix else None
    torch.manual_seed(0)
    model = ConvNet()
    tracer = Dynamo("cnn", epoch=0, step=0, image_size=(28, 28))
    model.forward = tracer.compile(model.forward)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(a.batch, 1, 28, 28)
    y = torch.randint(0, 10, (a.batch,))

    model.train()
    for step in range(a.steps):
        tracer.update(step=step)
        with dft_fn("app", name="train_step"):
            opt.zero_grad()
            out = model(x)  # forward graph: one event per ATen op
            with dft_fn("app", name="loss"):
                loss = F.cross_entropy(out, y)
            with dft_fn("app", name="backward"):
                loss.backward()  # backward graph: one event per ATen op
            with dft_fn("app", name="optimizer.step"):
                opt.step()
        print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)  # inference graph
    print("predictions", pred.tolist())
    if log is not None:
        log.finalize()
    path = os.environ.get("DFTRACER_LOG_FILE") or a.trace_prefix
    if path:
        print("trace:", path + "-*.pfw*")


if __name__ == "__main__":
    main()
