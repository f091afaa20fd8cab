"""The payload of a traced blocking one-tensor collective on a real gloo
group: a plain tensor's byte count and dtype are read through LibTorch
(dftracer._eager's reader, before the call), anything else through its
`nbytes` and `dtype`; the recorded args are the tensor's own `nbytes` and
dtype name either way.
"""
import pytest

from test_collectives_c_path import SETUP
from test_collectives_fast_path import STAND_INS
from test_region_with_protocol import run_traced

pytest.importorskip("torch.distributed")


def test_recorded_bytes_and_dtype_are_the_tensors_own(run_python, trace_dir):
    events, proc = run_traced(run_python, trace_dir, SETUP + """
class Sub(torch.Tensor):             # a subclass: its own getters, read as attributes
    pass

base = torch.arange(64, dtype=torch.float32)
cases = [
    torch.ones(256),                                  # float32
    torch.ones(3, 5, dtype=torch.float64),
    torch.ones(7, dtype=torch.int8),
    torch.ones(9, dtype=torch.bool),
    torch.ones(8, 4, dtype=torch.bfloat16),
    torch.ones(6, dtype=torch.float16),
    torch.ones(5, dtype=torch.int64),
    torch.tensor(3.0),                                # 0-dim
    torch.ones(0),                                    # empty
    base[8:24],                                       # a view with an offset
    torch.nn.Parameter(torch.ones(12)),
    torch.ones(10).as_subclass(Sub),
    torch.ones(6, dtype=torch.float32),               # float32 again: the cached dtype name
]
expected = []
for i, t in enumerate(cases):
    op = dist.broadcast if i % 2 else dist.all_reduce
    with torch.no_grad():
        op(t, 0, group=sub) if op is dist.broadcast else op(t, group=sub)
    expected.append([op.__name__, t.nbytes, str(t.dtype).replace("torch.", "")])
import json
print(json.dumps(expected))
dist.destroy_process_group()
""")
    import json
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    comm = [e for e in sorted(events, key=lambda e: e["ts"]) if e.get("cat") == "comm"]
    got = [[e["name"], e["args"]["bytes"], e["args"]["dtype"]] for e in comm]
    assert got == expected, (got, expected)
    assert [e["args"]["seq"] for e in comm] == list(range(len(expected)))
    assert {e["args"]["group_size"] for e in comm} == {1}


def test_traced_collective_reads_no_tensor_attribute_in_python(run_python, trace_dir):
    # A TorchFunctionMode sees the tensor attribute reads made in Python
    # (`t.nbytes`, `t.dtype`). The traced all_reduce of a plain tensor or a
    # Parameter makes none: the torch functions a user's mode sees are
    # exactly the untraced call's.
    events, proc = run_traced(run_python, trace_dir, SETUP + """
from torch.overrides import TorchFunctionMode

class Log(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(getattr(func, "__qualname__", repr(func)))
        return func(*args, **(kwargs or {}))

def seen(fn, t):
    for _ in range(2):  # the first calls fill the wrapper's caches
        fn(t, group=sub)
    with Log() as mode:
        fn(t, group=sub)
    return mode.seen

for t in (torch.ones(256), torch.nn.Parameter(torch.ones(4), requires_grad=False)):
    traced, untraced = seen(dist.all_reduce, t), seen(dist.all_reduce.__wrapped__, t)
    assert traced == untraced, (traced, untraced)
print("ok")
dist.destroy_process_group()
""")
    assert proc.stdout.split() == ["ok"], proc.stdout
    # 3 traced calls per tensor (the untraced one under the mode may be
    # dispatched back through torch.distributed.all_reduce, traced)
    assert len([e for e in events if e.get("name") == "all_reduce"]) >= 6


def test_collective_during_which_tracing_stops_records_nothing(run_python, trace_dir):
    # The record after the call is skipped by the core when tracing stopped
    # meanwhile, and counted as a call after the trace was closed.
    events, proc = run_traced(run_python, trace_dir, STAND_INS + """
import torch
from dftracer import _core
from dftracer.python import collectives as C

def all_reduce(tensor, op=None, group=None, async_op=False):
    if op == "stop":
        log.finalize()
    return None

traced = C._wrap("all_reduce", all_reduce, Dist)
assert type(traced).__name__ == "CommWrapper"
traced(torch.ones(4))
traced(torch.ones(8), "stop")
print(_core.stats()["events_after_finalize"])
""")
    assert proc.stdout.split() == ["1"], proc.stdout
    comm = [e for e in events if e.get("cat") == "comm"]
    assert [e["args"]["bytes"] for e in comm] == [16], comm
