"""A traced process for test_memory_compiled.py: a model compiled with the
capture backend (or our Inductor backend) trains a few SGD steps with memory
capture on from the environment (DFTRACER_ENABLE=1, DFTRACER_TRACE_EAGER=1,
DFTRACER_MEMORY=1), each step tagged `step` (dynamo.update); then one more
step runs under torch.profiler(profile_memory=True) (memory capture steps
aside for it), and the bytes torch.profiler saw allocated inside each op the
compiled graphs ran are written as the ground truth.

    python compiled_memory_job.py OUT_JSON {mlp,gpt2} {capture,inductor} STEPS

OUT_JSON: {"alloc": {"aten::addmm": bytes, ...}} for the profiled step: per op
name, the bytes of the CPU allocations reported while an op called directly
by a compiled graph (a child of CompiledFunction / CompiledFunctionBackward)
ran, its nested ops' included -- a graph node's bytes. Only the ops that are
nodes of the instrumented graphs: AOT's runtime wrappers call a few ops of
their own under those scopes (the zeros of an unused output's gradient),
which are no graph node's.
"""
import collections
import json
import sys

import torch

from dftracer.python import dftracer_dynamo_backend, dftracer_inductor_backend, dynamo
from dftracer.python.dynamo import instrumented_graphs

GRAPH_SCOPES = ("CompiledFunction", "CompiledFunctionBackward")


def build(which):
    torch.manual_seed(0)
    if which == "mlp":
        class MLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(64, 256)
                self.act = torch.nn.ReLU()
                self.fc2 = torch.nn.Linear(256, 10)

            def forward(self, x):
                return self.fc2(self.act(self.fc1(x)))

        model = MLP()
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        return model, lambda m: torch.nn.functional.cross_entropy(m(x), y)
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import transformers
    from gpt2_training import TINY

    size = dict(TINY)
    batch, tokens = size.pop("batch"), size.pop("tokens")
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False, **size))
    model.train()
    ids = torch.randint(0, size["vocab_size"], (batch, tokens), generator=torch.Generator().manual_seed(1))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def graph_op_allocs(prof):
    """Per op name: CPU bytes allocated inside the ops compiled graphs called
    directly (by time, on the thread: how torch.profiler attributes them)."""
    ops, mems = [], []
    for e in prof.profiler.kineto_results.events():
        if e.name() == "[memory]":
            if e.nbytes() > 0 and e.device_type() == torch.autograd.DeviceType.CPU:
                mems.append((e.start_thread_id(), e.start_ns(), e.nbytes()))
        else:
            ops.append((e.start_thread_id(), e.start_ns(), e.start_ns() + e.duration_ns(), e.name()))
    ops.sort(key=lambda o: (o[0], o[1], -o[2]))
    # The ops whose innermost enclosing event is a compiled graph's scope.
    top = []
    stack = []
    for tid, start, end, name in ops:
        while stack and (stack[-1][0] != tid or stack[-1][2] <= start):
            stack.pop()
        if stack and stack[-1][3] in GRAPH_SCOPES and name.startswith("aten::"):
            top.append((tid, start, end, name))
        stack.append((tid, start, end, name))
    alloc = collections.Counter()
    for tid, ts, nbytes in mems:
        for otid, start, end, name in top:
            if otid == tid and start <= ts < end:
                alloc[name] += nbytes
                break
    return alloc


def aten_name(event_name):
    """torch.profiler's name of a graph op event's op: function.addmm.default -> aten::addmm."""
    parts = event_name[len("function."):].split(".")
    return "aten::" + parts[0] if len(parts) <= 2 else parts[0] + "::" + parts[1]


def main():
    out, which, backend, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    model, loss_of = build(which)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    compiled = torch.compile(model, backend=dftracer_dynamo_backend if backend == "capture"
                             else dftracer_inductor_backend)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(compiled).backward()
        opt.step()

    for i in range(steps):
        dynamo.update(step=i)
        step()
    dynamo.update(step=steps)  # the profiled step's events (no memory args) apart
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    with open(out, "w") as f:
        nodes = {aten_name(n) for g in instrumented_graphs() for n in g.op_names}
        json.dump({"alloc": {k: v for k, v in graph_op_allocs(prof).items() if k in nodes}}, f)


if __name__ == "__main__":
    main()
