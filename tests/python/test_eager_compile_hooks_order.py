"""DFTRACER_TRACE_EAGER=1 with a plain torch.compile, dftracer imported before
or after torch: both waits for torch._dynamo's import (the eager observer's
compile pause and the compile/optimizer hooks) run, whatever the order. The
trace has the compile phases, and no aten op inside them (the fake-tensor ops
Dynamo and AOT autograd run while compiling are not the program's)."""
import os

import pytest

torch = pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

import trace_reader  # noqa: E402

SNIPPET = """
{first}
{second}
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
f = torch.compile(m, backend="aot_eager")
x = torch.randn(8, 16)
for _ in range(3):
    f(x).sum().backward()
from dftracer.python import dftracer
dftracer.get_instance().finalize()
"""


@pytest.mark.parametrize("order", ["dftracer_first", "torch_first"])
def test_compile_events_and_no_compile_ops_either_import_order(run_python, trace_dir, order):
    first, second = "import dftracer.python", "import torch"
    if order == "torch_first":
        first, second = second, first
    run_python(SNIPPET.format(first=first, second=second),
               env={"DFTRACER_LOG_FILE": os.path.join(trace_dir, "run"), "DFTRACER_TRACE_EAGER": "1",
                    "DFTRACER_DISABLE_IO": "1"}, timeout=300)
    events = [e for p in trace_reader.trace_files(trace_dir) for e in trace_reader.read_trace(p)]
    compile_windows = trace_reader.complete_events(events, cat="compile")
    assert compile_windows, "no compile event"
    ops = trace_reader.complete_events(events, cat="aten")
    assert ops, "no aten event"
    inside = [a for a in ops if any(c["tid"] == a["tid"] and c["ts"] <= a["ts"] <= c["ts"] + c["dur"]
                                    for c in compile_windows)]
    assert not inside, f"{len(inside)} aten events inside compile windows, e.g. {inside[0]['name']}"
