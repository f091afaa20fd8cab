"""Module attribution end to end: a small CNN compiled with the capture
backend (a module called twice, ModuleList blocks called in reverse order,
ops in the model's own forward), two training steps and an inference call,
against the ATen graphs' own module stacks.

The ground truth comes from a second process that compiles the same model
with aot_autograd and the same partitioner (aot_eager's, inference input
mutations kept) and counts, per graph call, each op node by phase and by
the innermost module of its ``nn_module_stack`` (``fwd_nn_module_stack``
for backward nodes): the same graphs, read without dftracer.

- The model's own ops (outside any submodule: its ``mean``, ``relu``, the
  BatchNorm buffer updates) are the "(root)" module, never "(none)" with the
  compile events and regions (`summary --by module`, the tree).
- A gradient accumulation (the weight gradients of the linear called twice)
  belongs to that linear, not to the module of the forward's last op.
"""
import json
import os
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import trace_files

pytest.importorskip("torch")

MODEL = """
import torch


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(self.conv(x)).relu() + x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = torch.nn.ModuleList([Block(8), Block(8)])
        self.shared = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        x = self.stem(x)
        for b in reversed(self.blocks):
            x = b(x)
        x = x.mean((2, 3))
        x = self.shared(self.shared(x).relu())
        return self.head(x)
"""

RUN = MODEL + """
import json, os, sys
torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(2, 3, 8, 8)
if os.environ["MODE"] == "trace":
    from dftracer.python import dftracer, dftracer_dynamo_backend
    log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
    backend = dftracer_dynamo_backend
else:
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    counts = {}

    def module_of(node):
        stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack")
        return None if not stack else list(stack.values())[-1][0].split(".", 1)[-1].replace("[", ".").replace("]", "")

    def counting(phase):
        def compiler(gm, example_inputs):
            nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
            keys = []
            for n in nodes:
                if n.meta.get("is_gradient_acc"):
                    # Accumulates into one tensor's gradient: the module of the
                    # ops that produced both parts, when they agree.
                    mods = {module_of(a) for a in n.all_input_nodes if a.op == "call_function"}
                    keys.append(phase + "|acc|" + (mods.pop() if len(mods) == 1 and None not in mods else "?"))
                else:
                    keys.append(phase + "|op|" + str(module_of(n)))

            def run(args):
                for k in keys:
                    counts[k] = counts.get(k, 0) + 1
                return gm(*args)
            run._boxed_call = True
            return run
        return compiler

    backend = aot_autograd(fw_compiler=counting("forward"), bw_compiler=counting("backward"),
                           inference_compiler=counting("inference"),
                           partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=True)
compiled = torch.compile(model, backend=backend)
for _ in range(2):
    opt.zero_grad()
    compiled(x).square().mean().backward()
    opt.step()
with torch.no_grad():
    compiled(x)
if os.environ["MODE"] == "trace":
    log.finalize()
else:
    json.dump(counts, open(os.environ["OUT"], "w"))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(trace file, ground-truth counts {"phase|op|module" or "phase|acc|module": n})."""
    from conftest import run_python_in

    base = tmp_path_factory.mktemp("attr")
    d = base / "trace"
    d.mkdir()
    run_python_in(str(base), RUN, env={"MODE": "trace", "TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1"}, timeout=300)
    out = base / "counts.json"
    run_python_in(str(base), RUN, env={"MODE": "count", "OUT": str(out)}, timeout=300)
    files = trace_files(str(d))
    assert len(files) == 1, files
    with open(out) as f:
        return files[0], json.load(f)


def cli_json(*args):
    p = subprocess.run([analyzer_exe(), *args, "--format", "json", "--no-progress"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def counts_by(truth, phase, kind, module):
    return truth.get(f"{phase}|{kind}|{module}", 0)


def test_the_models_own_ops_are_its_root_module(runs):
    path, truth = runs
    rows = {(r["module"], r["phase"]): r["count"] for r in cli_json("summary", path, "--by", "module,phase")["rows"]}
    for phase in ("forward", "inference"):
        # Ops with no module stack in a forward graph are the model's own.
        assert counts_by(truth, phase, "op", None) > 0, truth
        assert rows.get(("(root)", phase)) == counts_by(truth, phase, "op", None), rows

    tree = cli_json("summary", path, "--by", "module", "--tree")
    roots = {r["path"]: r for r in tree["roots"]}
    root_ops = sum(n for (m, _), n in rows.items() if m == "(root)")
    assert roots["(root)"]["count"] == root_ops and roots["(root)"]["children"] == []
    # The tree holds every op event: the ground truth's ops, all phases.
    assert sum(r["count"] for r in tree["roots"]) == sum(truth.values())
    assert tree["unattributed_events"] == rows_total(rows) - sum(truth.values())


def rows_total(rows):
    return sum(rows.values())


def test_a_gradient_accumulation_belongs_to_the_module_called_twice(runs):
    path, truth = runs
    rows = {(r["module"], r["phase"]): r["count"] for r in cli_json("summary", path, "--by", "module,phase")["rows"]}
    # The linear called twice: its weight and bias gradients are accumulated
    # from its two calls' backward ops.
    acc = counts_by(truth, "backward", "acc", "shared")
    assert acc > 0, truth
    assert rows.get(("shared", "backward")) == counts_by(truth, "backward", "op", "shared") + acc, rows
    # The forward's last module keeps its own backward ops, nothing more.
    assert rows.get(("head", "backward")) == counts_by(truth, "backward", "op", "head"), rows
    for module in ("stem", "blocks.0.conv", "blocks.1.conv", "blocks.0.bn", "blocks.1.bn"):
        assert rows.get((module, "backward")) == counts_by(truth, "backward", "op", module), (module, rows)
