"""FSDP's all-gathers and reduce-scatters as `comm` events, on a
real torchrun job (2 ranks, gloo, CPU) traced from the environment, the
files read back as JSON and matched across ranks by dftracer-analyze.

In torch 2.13 FSDP2 (`fully_shard`) all-gathers each group's shards with
`dist.all_gather_single` and reduce-scatters its gradients with
`dist.reduce_scatter_single` (the *_into_tensor / *_tensor names are now
deprecated aliases of these); FSDP1 on CPU all-gathers with `dist.all_gather`
and reduce-scatters with `reduce_scatter_single`. torch 2.11 has no `_single`
functions: FSDP calls `all_gather_into_tensor` and `reduce_scatter_tensor`
(AG, RS below). The job is fsdp_job.py.
"""
import json
import os
import subprocess

import pytest

import fsdp_job
from test_ranks_torchrun import _analyzer, _check_job
from trace_reader import complete_events

_fsdp = pytest.importorskip("torch.distributed.fsdp")
_dist = pytest.importorskip("torch.distributed")
# The names FSDP's all-gathers and reduce-scatters are traced under: torch
# 2.13's all_gather_single / reduce_scatter_single (which its *_into_tensor /
# *_tensor call), the older functions themselves before (torch 2.11).
AG, RS = (("all_gather_single", "reduce_scatter_single") if hasattr(_dist, "all_gather_single")
          else ("all_gather_into_tensor", "reduce_scatter_tensor"))


def _run(tmp_path_factory, name, fsdp1):
    d = str(tmp_path_factory.mktemp(name))
    proc, files = fsdp_job.run_job(d, 2, steps=3, fsdp1=fsdp1)
    ranks = _check_job(proc, files, 2)
    with open(os.path.join(d, "fsdp-rank0.json")) as f:
        groups = [tuple(g) for g in json.load(f)["groups"]]
    return ranks, groups


@pytest.fixture(scope="module")
def fsdp2_job(tmp_path_factory):
    if not hasattr(_fsdp, "fully_shard"):
        pytest.skip("this torch has no FSDP2 (torch.distributed.fsdp.fully_shard, torch >= 2.6)")
    return _run(tmp_path_factory, "fsdp2", fsdp1=False)


def _comm(events, name):
    """{step: [(seq, bytes), ...]} of the `name` comm events, in seq order."""
    out = {}
    for e in complete_events(events, cat="comm", name=name):
        a = e["args"]
        assert a["dtype"] == "float32" and a["group_size"] == 2, a
        out.setdefault(a["step"], []).append((a["seq"], a["bytes"]))
    return {s: sorted(v) for s, v in out.items()}


def test_fsdp2_all_gathers_and_reduce_scatters_match_shards(fsdp2_job):
    ranks, groups = fsdp2_job
    assert len(groups) == 5  # one FSDP group per Linear layer; the root holds no parameters
    shard, whole = [s for s, _ in groups], [w for _, w in groups]
    for r, (_, events) in ranks.items():
        ag, rs = _comm(events, AG), _comm(events, RS)
        assert sorted(ag) == sorted(rs) == [0, 1, 2], (r, ag, rs)
        for step in ag:
            # Forward: each group all-gathers its shard, layer by layer; backward
            # all-gathers again only groups resharded after forward: no new sizes.
            assert [b for _, b in ag[step][:len(groups)]] == shard, (r, step, ag[step])
            assert {b for _, b in ag[step]} == set(shard)
            # Backward: each group's unsharded gradient is reduce-scattered once.
            assert sorted(b for _, b in rs[step]) == sorted(whole), (r, step, rs[step])
    # Same collectives, same seq, same bytes on both ranks.
    seqs = [sorted((e["name"], e["args"]["seq"], e["args"]["bytes"], e["args"]["step"])
                   for e in complete_events(ranks[r][1], cat="comm")) for r in (0, 1)]
    assert seqs[0] == seqs[1]


def _analyze_ranks(ranks):
    proc = subprocess.run([_analyzer(), "ranks", "--format", "json"] + [p for p, _ in ranks.values()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _check_matched(ranks, names):
    """dftracer-analyze pairs every comm event of the two ranks into complete
    collectives; returns the analysis (JSON)."""
    doc = _analyze_ranks(ranks)
    assert doc["missing_ranks"] == [] and doc["incomplete_ranks"] == []
    assert doc["partial_collectives"] == 0 and doc["unmatched_comm"] == 0 and doc["duplicate_comm"] == 0, doc
    t = doc["collectives"]
    rows = [dict(zip(t["columns"], row)) for row in t["rows"]]
    assert all(c["complete"] and c["ranks_seen"] == 2 for c in rows), rows
    count = {}
    for c in rows:
        count[c["name"]] = count.get(c["name"], 0) + 1
    for r, (_, events) in ranks.items():
        for name in names:
            assert count.get(name, 0) == len(complete_events(events, cat="comm", name=name)) > 0, (r, name, count)
    return doc


def test_fsdp2_collectives_matched_across_ranks(fsdp2_job):
    ranks, _ = fsdp2_job
    doc = _check_matched(ranks, (AG, RS))
    # Each collective of the training lands in its step, and each rank's steps spend
    # time in them; the end-of-job barrier is after the loop, in no step (-1).
    t = doc["steps"]
    steps = [dict(zip(t["columns"], row)) for row in t["rows"] if row[t["columns"].index("step")] >= 0]
    assert sorted((s["step"], s["rank"]) for s in steps) == [(s, r) for s in (0, 1, 2) for r in (0, 1)], steps
    assert all(s["comm_us"] > 0 for s in steps), steps
    t = doc["collectives"]
    colls = [dict(zip(t["columns"], row)) for row in t["rows"]]
    assert all(c["step"] >= 0 for c in colls if c["name"] != "barrier"), colls
    assert all(c["step"] == -1 for c in colls if c["name"] == "barrier"), colls


def test_fsdp1_cpu_all_gather_and_reduce_scatter(tmp_path_factory):
    """FSDP1 (FullyShardedDataParallel, device_id=cpu): one flat parameter,
    all-gathered in forward and reduce-scattered in backward each step."""
    ranks, groups = _run(tmp_path_factory, "fsdp1", fsdp1=True)
    [(shard, whole)] = groups
    for r, (_, events) in ranks.items():
        ag, rs = _comm(events, "all_gather"), _comm(events, RS)
        assert {s: [b for _, b in v] for s, v in ag.items()} == {0: [shard], 1: [shard], 2: [shard]}, (r, ag)
        assert {s: [b for _, b in v] for s, v in rs.items()} == {0: [whole], 1: [whole], 2: [whole]}, (r, rs)
    _check_matched(ranks, ("all_gather", RS))
