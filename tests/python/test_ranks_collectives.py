"""Ranks, capture side, without torchrun: two processes that call
init_process_group themselves (tcp://, explicit rank, no RANK in the
environment), so the rank is learnt after tracing started; every traced
torch.distributed function gloo runs on CPU; a user's DDP comm hook
registered after DDP was built; dft_ai.comm; and a job where one rank does
not trace (the clock measurement must not hang it).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from trace_reader import complete_events, read_finalized, trace_files

# torch >= 2.13: all_gather_single / reduce_scatter_single (what FSDP calls)
_HAS_SINGLE = hasattr(pytest.importorskip("torch.distributed"), "all_gather_single")

JOB = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist
    import dftracer
    from dftracer.python import ai
    rank, port = int(sys.argv[1]), sys.argv[2]

    def ddp_with_user_hook():
        calls = []
        def user_hook(state, bucket):
            calls.append(bucket.index())
            return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
        ddp.register_comm_hook(None, user_hook)
        ddp(torch.randn(3, 4)).sum().backward()
        assert calls == [0], calls

    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
    torch.manual_seed(0)
    t = torch.ones(256)                                   # 1 KiB of float32
    dist.all_reduce(t)
    dist.all_reduce(t, async_op=True).wait()
    dist.all_gather([torch.empty(256) for _ in range(2)], t)
    dist.all_gather_into_tensor(torch.empty(512), t)
    dist.broadcast(torch.ones(8, dtype=torch.float64), src=0)
    dist.reduce(torch.ones(4, dtype=torch.int32), dst=1)
    dist.all_to_all_single(torch.empty(16), torch.ones(16))
    dist.reduce_scatter_tensor(torch.empty(8), torch.ones(16))
    if hasattr(dist, "all_gather_single"):                # torch >= 2.13: what FSDP calls
        dist.all_gather_single(torch.empty(512), t)
        dist.reduce_scatter_single(torch.empty(8), torch.ones(16))
    dist.barrier()
    peer = 1 - rank
    if rank == 0:
        dist.send(torch.ones(10), dst=1)
        dist.recv(torch.empty(3))                            # from any source
        dist.isend(torch.ones(5), dst=1).wait()
    else:
        dist.recv(torch.empty(10), src=0)
        dist.send(torch.ones(3), dst=0)
        dist.irecv(torch.empty(5), src=0).wait()
    if sys.argv[3:] == ["ddp"]:
        ddp_with_user_hook()
        import gc; gc.collect()    # DDP's cycles let go of the group first (ranks_job.end_job)
        dist.barrier()
    with ai.comm.all_reduce:
        pass
    dist.destroy_process_group()
""")

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


# torch 2.13 (gloo, CPU) itself aborts ("terminate called without an active
# exception", SIGABRT) in about 1 run in 10 of this job when it builds DDP:
# reproduced with the job without importing dftracer at all, with and without
# a comm hook, with `del ddp`, and without destroy_process_group; never
# without the DDP part in 40 runs. So the DDP part runs in a job of its own
# (`ddp=True`), whose test is an expected failure when torch aborts that way.
# Cause (a core dump of the FSDP job, which aborts the same way): gloo's
# worker thread frees a finished work while the interpreter finalizes, and the
# work's thread-local state holds a Python object (ranks_job.end_job). The job
# now collects DDP's cycles before the end: 0 aborts in 40 runs (1 in 30
# before, too few to call it fixed), so the expected failure stays.
TORCH_DDP_ABORT = "terminate called without an active exception"


def _run_pair(tmp_path, enable=("1", "1"), ddp=False):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("DFTRACER_") and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK")}
        env.update(DFTRACER_ENABLE=enable[rank], DFTRACER_LOG_FILE=str(tmp_path / "t"), DFTRACER_DISABLE_IO="1")
        procs.append(subprocess.Popen([sys.executable, str(script), str(rank), port] + (["ddp"] if ddp else []),
                                      cwd=str(tmp_path), env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if ddp and p.returncode == -signal.SIGABRT and TORCH_DDP_ABORT in err:
            pytest.xfail("torch 2.13's own abort of a gloo DDP job with a Python comm hook (see TORCH_DDP_ABORT)")
        assert p.returncode == 0, f"rank exited {p.returncode}\n{out}\n{err}"
    return [read_finalized(f) for f in trace_files(str(tmp_path), "t-*")], [err for _, err in outs]


def _meta(events):
    return {e["name"]: e["args"].get("value", e["args"].get("name")) for e in events if e.get("ph") == "M"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    files, _ = _run_pair(tmp_path_factory.mktemp("pair"))
    assert len(files) == 2
    return {_meta(ev)["rank"]: ev for ev in files}


def test_rank_learnt_at_init_process_group(pair):
    for r, events in pair.items():
        md = _meta(events)
        assert md["world_size"] == 2 and md["hostname"]
        assert "local_rank" not in md  # not in the environment: not guessed
        names = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
        assert len(names) == 2 and names[0].endswith(f"({events[0]['pid']})")  # "<app> (pid)" first
        assert names[-1] == f"rank {r} (pid {events[0]['pid']})"
    assert isinstance(_meta(pair[1])["clock_offset_ns"], int)


def _comm(events):
    """The traced torch.distributed calls (not dft_ai's, not DDP's buckets)."""
    return [e for e in complete_events(events, cat="comm")
            if "bytes" in e.get("args", {}) and "ddp_bucket" not in e["args"]]


def test_every_collective_and_p2p_with_its_args(pair):
    ops = {r: {} for r in pair}
    for r, events in pair.items():
        for e in _comm(events):
            ops[r].setdefault(e["name"], []).append(e["args"])
    for r in (0, 1):
        o = ops[r]
        assert [a["bytes"] for a in o["all_reduce"]] == [1024, 1024]
        assert "async_op" not in o["all_reduce"][0] and o["all_reduce"][1]["async_op"] == 1
        assert o["all_gather"][0]["bytes"] == 1024 and o["all_gather_into_tensor"][0]["bytes"] == 1024
        assert o["broadcast"][0]["bytes"] == 64 and o["broadcast"][0]["dtype"] == "float64"
        assert o["reduce"][0]["bytes"] == 16 and o["reduce"][0]["dtype"] == "int32"
        assert o["all_to_all_single"][0]["bytes"] == 64 and o["reduce_scatter_tensor"][0]["bytes"] == 64
        assert o["barrier"][0]["bytes"] == 0
        if _HAS_SINGLE:
            # The direct calls only: 2.13's all_gather_into_tensor / reduce_scatter_tensor
            # call these inside, and a nested call is the outer one's work, not an event.
            assert [a["bytes"] for a in o["all_gather_single"]] == [1024]
            assert [a["bytes"] for a in o["reduce_scatter_single"]] == [64]
        assert len(o["all_gather_into_tensor"]) == len(o["reduce_scatter_tensor"]) == 1
        for a in (x for v in o.values() for x in v):
            assert a["group_size"] == 2 and a["group"]
    # One collective has one seq on both ranks.
    coll = {r: sorted((a["seq"], n) for n, v in ops[r].items() if n not in ("send", "recv", "isend", "irecv")
                      for a in v) for r in ops}
    assert coll[0] == coll[1] and [s for s, _ in coll[0]] == list(range(len(coll[0])))
    # Point-to-point: the peer, and the n-th send from A to B has the seq of B's n-th receive from A.
    assert [(a["peer"], a["bytes"]) for a in ops[0]["send"]] == [(1, 40)]
    assert [(a["peer"], a["bytes"]) for a in ops[0]["recv"]] == [(1, 12)]  # any source: the sender returned
    assert [(a["peer"], a["bytes"], a["async_op"]) for a in ops[0]["isend"]] == [(1, 20, 1)]
    sends0 = [a["seq"] for n in ("send", "isend") for a in ops[0][n]]
    recvs1 = [a["seq"] for n in ("recv", "irecv") for a in ops[1][n]]
    assert sorted(sends0) == sorted(recvs1) == [0, 1]


def test_user_comm_hook_after_ddp_still_runs_and_is_traced(tmp_path):
    files, _ = _run_pair(tmp_path, ddp=True)
    assert len(files) == 2
    for events in files:
        buckets = [e["args"] for e in complete_events(events, cat="comm", name="all_reduce")
                   if "ddp_bucket" in e.get("args", {})]
        assert [(a["ddp_bucket"], a["bytes"]) for a in buckets] == [(0, (4 * 2 + 2) * 4)]


def test_dft_ai_comm_lands_in_cat_comm(pair):
    for events in pair.values():
        assert [e["cat"] for e in complete_events(events) if e["name"] == "all_reduce" and "bytes" not in
                e.get("args", {})] == ["comm"]


def test_a_rank_without_tracing_does_not_hang_the_job(tmp_path):
    files, errs = _run_pair(tmp_path, enable=("1", "0"))
    assert len(files) == 1
    md = _meta(files[0])
    assert md["rank"] == 0 and md["clock_offset_ns"] == 0
    assert json.dumps(files[0][-1]["name"]) == '"end"'
