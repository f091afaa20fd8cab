"""Ranks, capture side: real torchrun jobs (gloo, CPU) traced from the
environment, their files read back as JSON.

- 2 ranks, DDP, the capture backend, 3 steps: one file per rank, named by
  rank, with the rank metadata and process names; DDP's bucketed gradient
  all-reduces on both ranks, with bytes that follow DDP's bucketing of the
  model's parameters and matching `seq`; clock offsets; merge succeeds.
- 4 ranks complete; a rank SIGKILLed mid-run leaves the others' files
  complete (torchrun then SIGTERMs them: the core's SIGTERM path finalizes)
  and its own readable up to its last flush.

- A rank that raises mid-step is named by the analysis as the rank that
  ended early (the straggler of that step), not a healthy rank.
The job is ranks_job.py (also the straggler run the analysis side uses).
"""
import json
import os
import subprocess
import sys

import pytest

import ranks_job
from trace_reader import complete_events, read_finalized, read_trace

pytest.importorskip("torch.distributed")

def _analyzer():
    exe = os.environ.get("DFTRACER_ANALYZE_BIN") or os.path.join(os.path.dirname(sys.executable), "dftracer-analyze")
    if not os.access(exe, os.X_OK):
        pytest.skip("dftracer-analyze is not installed beside this interpreter (set DFTRACER_ANALYZE_BIN)")
    return exe


def _metadata(events):
    """{key: value} of the metadata events named by key, the last one winning."""
    return {e["name"]: e["args"].get("value", e["args"].get("name")) for e in events if e.get("ph") == "M"}


def _by_rank(files, finalized=True):
    out = {}
    for f in files:
        events = read_finalized(f) if finalized else read_trace(f)
        out[_metadata(events)["rank"]] = (f, events)
    return out


def _check_job(proc, files, nproc):
    assert proc.returncode == 0, f"torchrun failed\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert len(files) == nproc, files
    return _by_rank(files)


@pytest.fixture(scope="module")
def ddp_job(tmp_path_factory):
    """The 2-rank compiled DDP job, run once for the tests below; rank 1
    sleeps 0.2 s in step 2 (the straggler the analysis must find)."""
    d = str(tmp_path_factory.mktemp("ddp2"))
    proc, files = ranks_job.run_job(d, 2, compile=True, sleep_rank=1, sleep_step=2)
    return d, _check_job(proc, files, 2)


def test_two_ranks_named_and_described(ddp_job):
    _, ranks = ddp_job
    assert sorted(ranks) == [0, 1]
    for r, (path, events) in ranks.items():
        md = _metadata(events)
        assert f"-rank{r}-" in os.path.basename(path)
        assert md["world_size"] == 2 and md["local_rank"] == r and md["group_rank"] == 0
        assert isinstance(md["hostname"], str) and md["hostname"]
        names = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
        assert names[-1] == f"rank {r} (pid {events[0]['pid']})"
        start = next(e for e in events if e.get("name") == "start")
        assert start["args"]["clock"] in ("tsc", "monotonic") and start["args"]["clock_anchor_ns"] > 0


def test_clock_offsets_written(ddp_job):
    _, ranks = ddp_job
    md0 = _metadata(ranks[0][1])
    assert md0["clock_offset_ns"] == 0 and md0["clock_offset_uncertainty_ns"] == 0
    md1 = _metadata(ranks[1][1])
    # Same host, same clock: the offset is within its own uncertainty (plus
    # the 1 us the files' whole-microsecond timestamps may add).
    assert isinstance(md1["clock_offset_ns"], int) and md1["clock_offset_uncertainty_ns"] > 0
    assert abs(md1["clock_offset_ns"]) <= md1["clock_offset_uncertainty_ns"] + 1000


def _ddp_buckets(events):
    """{step: [(bucket, bytes, seq), ...]} of DDP's gradient all-reduces."""
    out = {}
    for e in complete_events(events, cat="comm", name="all_reduce"):
        a = e["args"]
        if "ddp_bucket" in a:
            assert a["async_op"] == 1 and a["dtype"] == "float32" and a["group_size"] == 2
            out.setdefault(a["step"], []).append((a["ddp_bucket"], a["bytes"], a["seq"]))
    return {s: sorted(v) for s, v in out.items()}


def test_ddp_bucket_all_reduces_match_model_and_ranks(ddp_job):
    import torch

    _, ranks = ddp_job
    params = list(ranks_job._model(torch).parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    cap = int(ranks_job.BUCKET_CAP_MB * 1024 * 1024)
    largest = max(p.numel() * p.element_size() for p in params)
    b0, b1 = _ddp_buckets(ranks[0][1]), _ddp_buckets(ranks[1][1])
    assert sorted(b0) == [0, 1, 2], b0
    assert b0 == b1  # same buckets, bytes and seq on both ranks
    for step, buckets in b0.items():
        # Every gradient is in exactly one bucket of each step.
        assert sum(b for _, b, _ in buckets) == param_bytes, (step, buckets)
    # Step 0 runs DDP's initial buckets (the first capped at 1 MiB: all of
    # this model); from step 1 the rebuilt ones, cut at bucket_cap_mb: a
    # bucket closes once it reaches the cap, so all but the last reach it and
    # none passes it by more than one parameter.
    assert [b for _, b, _ in b0[0]] == [param_bytes]
    for step in (1, 2):
        sizes = [b for _, b, _ in b0[step]]
        assert len(sizes) >= 2
        assert all(cap <= s < cap + largest for s in sizes[:-1]), sizes
        assert sizes[-1] < cap + largest
    with open(os.path.join(ddp_job[0], "ddp-rank0.json")) as f:
        assert json.load(f)["bucket_sizes"] == [param_bytes]  # DDP's own account of its first buckets


def test_collective_times_and_barrier(ddp_job):
    _, ranks = ddp_job
    for r, (_, events) in ranks.items():
        comm = complete_events(events, cat="comm")
        assert all(e["dur"] >= 0 and e["ts"] > 0 for e in comm)
        barrier = [e for e in comm if e["name"] == "barrier"]
        assert len(barrier) == 1 and "async_op" not in barrier[0]["args"]
        assert barrier[0]["args"]["bytes"] == 0
    seqs = [{e["name"]: e["args"]["seq"] for e in complete_events(ranks[r][1], cat="comm", name="barrier")}
            for r in (0, 1)]
    assert seqs[0] == seqs[1]


def test_steps_found_per_rank(ddp_job):
    _, ranks = ddp_job
    for _, events in ranks.values():
        steps = [e for e in complete_events(events, name="train_step")]
        assert [e["args"]["step"] for e in steps] == [0, 1, 2]
        assert len([e for e in events if e.get("cat") == "dynamo"]) > 0  # the capture backend's ops


def test_merge_of_two_ranks(ddp_job, tmp_path):
    d, ranks = ddp_job
    out = str(tmp_path / "merged.json")
    proc = subprocess.run([_analyzer(), "merge", "-o", out] + [p for p, _ in ranks.values()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        merged = json.load(f)["traceEvents"]
    names = {e["args"]["name"] for e in merged if e.get("name") == "process_name"}
    assert {"rank 0 (pid %d)" % ranks[0][1][0]["pid"], "rank 1 (pid %d)" % ranks[1][1][0]["pid"]} <= names
    assert sum(1 for e in merged if e.get("cat") == "comm") == sum(
        len(complete_events(ev, cat="comm")) for _, ev in ranks.values())


def test_straggler_and_waits_found_by_the_analysis(ddp_job):
    """Rank 1 slept 0.2 s in step 2: the analysis names it the step's
    straggler, and rank 0's time waiting for it is 0.2 s within 20 %."""
    import dftracer.analyze as da

    _, ranks = ddp_job
    a = da.ranks([p for p, _ in ranks.values()])
    assert sorted(a.ranks["rank"]) == [0, 1]
    assert a.info["missing_ranks"] == [] and a.info["incomplete_ranks"] == []
    st = a.stragglers.set_index("step")
    assert st.loc[2, "straggler"] == 1, a.stragglers
    row = a.steps[(a.steps["step"] == 2) & (a.steps["rank"] == 0)]
    assert len(row) == 1, a.steps
    wait_ms = float(row["wait_us"].iloc[0]) / 1000
    assert 160 <= wait_ms <= 240, a.steps
    # Steps 1 (after compile) had no injected delay: nobody waited nearly as long.
    quiet = a.steps[a.steps["step"] == 1]["wait_us"].max() / 1000
    assert quiet < wait_ms / 2, a.steps
    # The CLI's summary --by rank: one row per rank, each with its collectives' time.
    proc = subprocess.run([_analyzer(), "summary", "--by", "rank", "--format", "json"] +
                          [p for p, _ in ranks.values()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    t = doc["ranks"]
    by_rank = {r[t["columns"].index("rank")]: dict(zip(t["columns"], r)) for r in t["rows"]}
    assert sorted(by_rank) == [0, 1]
    assert all(v["comm_us"] > 0 for v in by_rank.values())


def test_four_ranks_complete(tmp_path):
    proc, files = ranks_job.run_job(str(tmp_path), 4, steps=2)
    ranks = _check_job(proc, files, 4)
    assert sorted(ranks) == [0, 1, 2, 3]
    seqs = [sorted((e["args"]["seq"], e["args"]["bytes"]) for e in complete_events(ranks[r][1], cat="comm"))
            for r in range(4)]
    assert seqs[0] and all(s == seqs[0] for s in seqs)
    # The merge: one process per rank, named and sorted by rank, nothing missing.
    out = str(tmp_path / "merged.json")
    m = subprocess.run([_analyzer(), "merge", "-o", out] + files, capture_output=True, text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    with open(out) as f:
        doc = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert sorted(n.split(" (")[0] for n in names.values()) == [f"rank {r}" for r in range(4)], names
    info = doc["otherData"]["ranks"]
    assert info["world_size"] == 4 and info["missing_ranks"] == [] and info["incomplete_ranks"] == [], info


def test_sigkilled_rank_leaves_others_complete(tmp_path):
    proc, files = ranks_job.run_job(str(tmp_path), 4, steps=3, kill_rank=2, kill_step=2)
    assert proc.returncode != 0  # torchrun reports the failed rank
    assert len(files) == 4, files
    partial = {}
    for f in files:
        events = read_trace(f)  # every file reads back (the killed one up to its last flush)
        md = _metadata(events)
        if md["rank"] == 2:
            partial = events
            with pytest.raises(ValueError):
                read_finalized(f)  # cut short: no `end`, no `]`
        else:
            done = read_finalized(f)  # strict: framed, every line JSON
            assert done[-1]["name"] == "end"
    steps = [e["args"]["step"] for e in complete_events(partial, name="train_step")]
    assert steps == [0, 1]  # its last flush holds the steps before the kill
    assert complete_events(partial, cat="comm")
    # merge still succeeds and says which rank is incomplete
    out = str(tmp_path / "merged.json")
    m = subprocess.run([_analyzer(), "merge", "-o", out] + files, capture_output=True, text=True, timeout=120)
    assert m.returncode == 0, m.stderr
    with open(out) as f:
        info = json.load(f)["otherData"]["ranks"]
    assert info["incomplete_ranks"] == [2] and info["world_size"] == 4, info
    assert "incomplete" in m.stderr and "2" in m.stderr, m.stderr


def test_rank_that_raises_is_named_as_ended_early(tmp_path):
    # Rank 1 raises after step 2's forward: rank 0 enters backward's
    # all-reduces alone, and torchrun SIGTERMs it. The analysis names rank 1
    # as the one that ended early and step 2's straggler, not rank 0.
    proc, files = ranks_job.run_job(str(tmp_path), 2, steps=4, raise_rank=1, raise_step=2)
    assert proc.returncode != 0 and "rank 1 fails in step 2" in proc.stderr, proc.stderr[-3000:]
    assert len(files) == 2, files
    r = subprocess.run([_analyzer(), "ranks", "--format", "json"] + files, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ended_early"] == [1], doc["ended_early"]
    st = {row[0]: dict(zip(doc["stragglers"]["columns"], row)) for row in doc["stragglers"]["rows"]}
    assert st[2]["straggler"] == 1 and st[2]["absent_ranks"] == "1", st
    assert "rank(s) 1 ended early" in r.stderr, r.stderr
