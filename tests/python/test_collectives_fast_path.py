"""A traced torch.distributed call on its fast path (a blocking one-tensor
collective, described, timed and recorded by _core.CommWrapper), with
stand-ins for torch.distributed: the event, its args, nesting and errors;
and the same calls with a payload the C path cannot read (no `nbytes`),
which the Python path records alike.
"""
import pytest

from test_region_with_protocol import run_traced

# Stand-ins for torch.distributed: a 2-rank default group named "pg7".
STAND_INS = """
class PG:
    group_name = "pg7"
    def size(self):
        return 2

class Dist:
    class group:
        WORLD = PG()
"""


@pytest.mark.parametrize("c_path", [True, False])
def test_collective_fast_path_one_event_per_outer_call(run_python, trace_dir, c_path):
    # A blocking one-tensor collective goes through _core.CommWrapper: one
    # event with the payload's bytes, dtype, group and seq; torch.distributed
    # calls it makes itself are not events of their own; a call that raises
    # records nothing and the exception reaches the caller.
    events, proc = run_traced(run_python, trace_dir, f"C_PATH = {c_path}\n" + STAND_INS + """
from dftracer.python import collectives as C

class T:
    dtype = "torch.float16"
    def numel(self):
        return 512
    def element_size(self):
        return 2
if C_PATH:
    T.nbytes = 1024

def broadcast(tensor, src=0, group=None, async_op=False):
    return None

inner = C._wrap("broadcast", broadcast, Dist)

def all_reduce(tensor, op=None, group=None, async_op=False):
    if op == "raise":
        raise RuntimeError("peer gone")
    inner(tensor)
    return None

outer = C._wrap("all_reduce", all_reduce, Dist)
assert type(outer).__name__ == "CommWrapper"
assert outer(T()) is None and outer(T(), group=Dist.group.WORLD) is None
try:
    outer(T(), "raise")
except RuntimeError as e:
    print("raised", e)
""")
    assert proc.stdout.split() == ["raised", "peer", "gone"], proc.stdout
    comm = [e for e in events if e.get("cat") == "comm"]
    assert [e["name"] for e in comm] == ["all_reduce", "all_reduce"]
    for seq, e in enumerate(comm):
        assert e["args"]["bytes"] == 1024 and e["args"]["dtype"] == "float16"
        assert e["args"]["group"] == "pg7" and e["args"]["group_size"] == 2 and e["args"]["seq"] == seq
