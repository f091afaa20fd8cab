"""Eager FLOPs (trace_eager(flops=True), DFTRACER_EAGER_FLOPS=1): the
LibTorch observer writes args.flops on the ops FlopCounterMode counts, with
its formulas, so that an eager run has an efficiency table.

A real training step (forward and backward) is traced and its file read
back: the FLOPs per op name are FlopCounterMode's for the same step (the
capture backend's table, EXTRA_FLOP_FORMULAS, added: the CPU attention
kernels), no op is counted twice (aten::linear and the aten::addmm in it,
aten::convolution and the aten::_convolution in it), and
`dftracer-analyze summary --efficiency` has rows for them.
"""
import collections
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

import trace_reader  # noqa: E402
from dftracer.python.compile.dynamo_nodes import EXTRA_FLOP_FORMULAS  # noqa: E402
from dftracer.python.eager import trace_eager  # noqa: E402
from test_dynamo_helpers import traced  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


class ConvMlp(nn.Module):
    """Convolutions (2-d, 1-d, transposed, grouped, strided), linears, a bmm
    and CPU attention: the conv, matmul and attention formulas and their
    backward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=(1, 2), dilation=(1, 2), groups=4, bias=False)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.conv1d = nn.Conv1d(4, 6, 5, padding=2)
        self.fc1 = nn.Linear(6 * 16 * 16, 32)
        self.fc2 = nn.Linear(32, 10, bias=False)

    def forward(self, x):
        x = torch.relu(self.grouped(torch.relu(self.conv(x))))
        x = self.up(x)                               # 2 x 4 x 16 x 16
        x = self.conv1d(x.flatten(2))                # 2 x 6 x 256
        x = torch.relu(self.fc1(x.flatten(1)))
        y = self.fc2(x)
        q = x.view(2, 2, 4, 4)  # batch x heads x tokens x head size
        att = nn.functional.scaled_dot_product_attention(q, q, q).sum((1, 2, 3)).unsqueeze(1)
        return y + att + torch.bmm(x.unsqueeze(1), x.unsqueeze(2)).squeeze(2)  # a bmm of its own


def conv_step():
    torch.manual_seed(0)
    model, x = ConvMlp(), torch.randn(2, 3, 16, 16)

    def step():
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()

    return step


def gpt2_step():
    pytest.importorskip("transformers")
    from gpt2_training import TINY, gpt2_train_step

    return gpt2_train_step(TINY)


def flop_counter_by_op(step):
    """FlopCounterMode's FLOPs per op for one step, keyed as our event names."""
    with FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS) as counter:
        step()
    counts = counter.get_flop_counts()["Global"]
    return {"aten::" + str(op).split(".", 1)[1]: n for op, n in counts.items() if n}


def ours_by_op(events):
    got = collections.Counter()
    for e in trace_reader.complete_events(events):
        if "flops" in e.get("args", {}):
            got[e["name"]] += e["args"]["flops"]
    return {k: v for k, v in got.items() if v}


@pytest.mark.parametrize("make_step", [conv_step, gpt2_step], ids=["conv_mlp", "gpt2"])
def test_eager_flops_equal_flop_counter_modes(tmp_path, make_step):
    step = make_step()
    step()  # warm up: lazy initialisation runs once
    with traced(tmp_path, "flops") as events:
        with trace_eager(flops=True):
            step()
    ours = ours_by_op(events)
    theirs = flop_counter_by_op(step)
    assert theirs and ours == theirs
    # Each counted op is the one FlopCounterMode sees: never the composite
    # around it nor the kernel op inside it.
    flops_on = collections.Counter(e["name"] for e in trace_reader.complete_events(events) if "flops" in e["args"])
    for wrapper in ("aten::linear", "aten::matmul", "aten::conv2d", "aten::_convolution", "aten::conv_transpose2d"):
        assert wrapper not in flops_on
    assert any(e["name"] == "aten::linear" for e in trace_reader.complete_events(events))


def test_no_flops_unless_asked_and_env_turns_them_on(tmp_path, run_python):
    step = conv_step()
    step()
    with traced(tmp_path, "plain") as events:
        with trace_eager():
            step()
    assert not any("flops" in e.get("args", {}) for e in events)

    code = """
import os, torch
from dftracer.python import dftracer
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "env"), None, -1)
a, b = torch.randn(4, 8), torch.randn(8, 3)
torch.mm(a, b)
log.finalize()
"""
    trace_dir = str(tmp_path / "env")
    os.makedirs(trace_dir)
    run_python(code, env={"TRACE_DIR": trace_dir, "DFTRACER_ENABLE": "1", "DFTRACER_TRACE_EAGER": "1",
                          "DFTRACER_EAGER_FLOPS": "1"})
    (f,) = trace_reader.trace_files(trace_dir)
    mm = [e for e in trace_reader.complete_events(trace_reader.read_trace(f)) if e["name"] == "aten::mm"]
    assert [e["args"]["flops"] for e in mm] == [4 * 3 * 2 * 8]


def test_summary_efficiency_has_rows_for_an_eager_run(tmp_path):
    from test_analyze_self_time import analyzer_exe

    step = conv_step()
    step()
    with traced(tmp_path, "eff"):
        with trace_eager(flops=True):
            step()
    (f,) = trace_reader.trace_files(str(tmp_path), "eff-*.pfw*")
    out = subprocess.run([analyzer_exe(), "summary", "--efficiency", "--format", "json", f],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    rows = {r["name"]: r for r in json.loads(out)["rows"]}
    for op in ("aten::addmm", "aten::convolution", "aten::convolution_backward", "aten::mm", "aten::bmm",
               "aten::_scaled_dot_product_flash_attention_for_cpu",
               "aten::_scaled_dot_product_flash_attention_for_cpu_backward"):
        assert op in rows, (op, sorted(rows))
        assert rows[op]["flops"] > 0 and rows[op]["gflops"] > 0
