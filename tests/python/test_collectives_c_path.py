"""A blocking one-tensor collective on a real gloo group (one process, world
size 1), traced by _core.CommWrapper: its events and args, the seq shared
with the Python path of the other shapes, and no Python frame of ours
around the call.
"""
import pytest

from test_region_with_protocol import run_traced

pytest.importorskip("torch.distributed")

SETUP = """
import socket
import torch
import torch.distributed as dist
import dftracer.python.distributed  # noqa: F401  (hooks torch.distributed)
from dftracer.python import current_step
from dftracer.python.distributed import collectives

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
sub = dist.new_group([0])
"""


def test_one_tensor_collectives_events_and_args(run_python, trace_dir):
    events, proc = run_traced(run_python, trace_dir, SETUP + """
assert type(dist.all_reduce).__name__ == "CommWrapper", type(dist.all_reduce)
f32, i64, bf16 = torch.ones(256), torch.ones(3, dtype=torch.int64), torch.ones(8, 4, dtype=torch.bfloat16)
dist.all_reduce(f32)                                   # default group, seq 0
dist.all_reduce(f32, async_op=True).wait()             # the Python path: seq 1 of the same group
dist.all_reduce(f32, dist.ReduceOp.SUM, None, False)   # positional, seq 2
dist.broadcast(i64, 0, group=sub)                      # keyword group
dist.reduce(bf16, 0, dist.ReduceOp.SUM, sub)           # positional group
with collectives.bucket_scope(3):
    dist.all_reduce(f32[:10], async_op=False)
current_step.note(5)
dist.all_reduce(i64)
try:
    dist.broadcast(f32, 7)                             # no rank 7: raises, no event, seq used
except Exception as e:
    print("raised")
dist.broadcast(f32, 0)
dist.destroy_process_group()
""")
    assert proc.stdout.split() == ["raised"], proc.stdout
    # By start: the async call's event is recorded when its future completes
    # (on gloo's thread), so it may come later in the file.
    comm = [(e["name"], e["args"]) for e in sorted(events, key=lambda e: e["ts"]) if e.get("cat") == "comm"]
    world = comm[0][1]["group"]
    sub = comm[3][1]["group"]
    assert world != sub
    base = {"group_size": 1}
    expected = [
        ("all_reduce", dict(base, bytes=1024, group=world, dtype="float32", seq=0)),
        ("all_reduce", dict(base, bytes=1024, group=world, dtype="float32", seq=1, async_op=1)),
        ("all_reduce", dict(base, bytes=1024, group=world, dtype="float32", seq=2)),
        ("broadcast", dict(base, bytes=24, group=sub, dtype="int64", seq=0)),
        ("reduce", dict(base, bytes=64, group=sub, dtype="bfloat16", seq=1)),
        ("all_reduce", dict(base, bytes=40, group=world, dtype="float32", seq=3, ddp_bucket=3)),
        ("all_reduce", dict(base, bytes=24, group=world, dtype="int64", seq=4, step=5)),
        ("broadcast", dict(base, bytes=1024, group=world, dtype="float32", seq=6, step=5)),
    ]
    assert [(n, {k: v for k, v in a.items() if k in expected[0][1] or k in (
        "async_op", "ddp_bucket", "step")}) for n, a in comm] == expected, comm
    # The args in the order the Python path writes them.
    order = ["bytes", "group", "group_size", "dtype", "seq", "ddp_bucket", "step"]
    for _, a in comm:
        keys = [k for k in a if k in order]
        assert keys == [k for k in order if k in a], a


def test_traced_collective_runs_no_python_of_ours(run_python, trace_dir):
    # The Python functions that run during a traced all_reduce are exactly
    # those of the untraced one (torch's own): the wrapper adds no frame.
    events, proc = run_traced(run_python, trace_dir, SETUP + """
import sys
t = torch.ones(256)

def frames(fn):
    seen = []
    def prof(frame, event, arg):
        if event == "call":
            seen.append((frame.f_code.co_filename, frame.f_code.co_name))
    for _ in range(2):  # the first call fills the wrapper's caches
        fn(t, group=sub)
    sys.setprofile(prof)
    fn(t, group=sub)
    sys.setprofile(None)
    return seen

traced, untraced = frames(dist.all_reduce), frames(dist.all_reduce.__wrapped__)
print(len(traced), len(untraced))
assert traced == untraced, sorted(set(traced) - set(untraced))
dist.destroy_process_group()
""")
    assert len([e for e in events if e.get("name") == "all_reduce"]) == 3, proc.stdout
