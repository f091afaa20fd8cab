"""Steps in the loop shapes users write (step_shapes.py), each compared with
the loop's own perf_counter: `summary --by step` finds one step per
iteration, each as long as the loop's brackets around its start and end
allow, DataLoader workers have none, and compile time never exceeds the step
that compiled. The estimated end of a marks-started loop's last step is
checked against the rule applied to the trace's own events. Also `ranks` on
a torchrun job: the end-of-job barrier is in no step."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analyzer_cli import analyzer  # noqa: E402
from trace_reader import read_all  # noqa: E402
from dftracer.analyze._common import STEP_CATEGORIES  # noqa: E402


def run_shape(shape, out_dir, **more_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update({"DFTRACER_ENABLE": "1", "DFTRACER_DISABLE_IO": "1", "OMP_NUM_THREADS": "1", **more_env})
    proc = subprocess.run([sys.executable, os.path.join(HERE, "step_shapes.py"), shape, str(out_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(out_dir, "loop.times")) as f:
        return json.load(f)["iterations"]


# The trace's clock against perf_counter over one step: rate and the file's
# microsecond rounding.
CLOCK_SLACK_S = 100e-6


def median(v):
    """median_of (src/analyze/analyses/median.hpp) on integers."""
    v = sorted(v)
    if not v:
        return 0
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) // 2


def median_s(v):
    """median_of's rule on seconds: the mean of the middle two (the integer
    median's floor division would make a sub-second median 0)."""
    v = sorted(v)
    if not v:
        return 0.0
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def loop_bounds(its, source):
    """(lo, hi) seconds for each iteration's step, from the loop's brackets.
    A step runs to the next one's start; a region's step ends with its region
    when it is the last of an epoch or its gap to the next is far beyond the
    usual one (docs/analyzer.md, "Where a step ends"; a gap within 10 % of that
    limit allows both). The last one is None for marks (estimated).
    An optimizer-ended step (source "optimizer") ends with its optimizer step,
    inside [t1a, t1], and begins with the previous one's end, inside the
    previous [t1a, t1]; the first, and one after an epoch's end or a gap far
    beyond the usual (an evaluation, a checkpoint), at its own first work,
    inside [t0, t0b]."""
    durs = [(t1a + t1) / 2 - (t0 + t0b) / 2 for t0, t0b, t1a, t1, _ in its]
    gaps = [max(0.0, (n[0] + n[1]) / 2 - (c[2] + c[3]) / 2) for c, n in zip(its, its[1:])]
    long_gap = max(4 * median_s(gaps), median_s(gaps) + median_s(durs)) if gaps else 0
    out = []
    for i, (t0, t0b, t1a, t1, epoch) in enumerate(its):
        nxt = its[i + 1] if i + 1 < len(its) else None
        own = (t1a - t0b, t1 - t0)
        if source == "optimizer":
            prev = its[i - 1] if i else None
            after = (t1a - prev[3], t1 - prev[2]) if prev else None
            if prev is None or prev[4] != epoch or gaps[i - 1] > 1.1 * long_gap:
                out.append(own)
            elif gaps[i - 1] < 0.9 * long_gap:
                out.append(after)
            else:
                out.append((min(own[0], after[0]), max(own[1], after[1])))
            continue
        if nxt is None:
            out.append(None if source == "marks" else own)
            continue
        to_next = (nxt[0] - t0b, nxt[1] - t0)
        if source == "marks":
            out.append(to_next)
        elif nxt[4] != epoch or gaps[i] > 1.1 * long_gap:
            out.append(own)
        elif gaps[i] < 0.9 * long_gap:
            out.append(to_next)
        else:
            out.append((min(own[0], to_next[0]), max(own[1], to_next[1])))
    return out


def ns(us):
    return round(us * 1000)


def estimated_last_duration_us(doc, events):
    """The last marks-started step's duration by the rule, from the trace: it
    takes as many top-level events of its process's main thread (tid == pid) as
    the other steps had (their median), then the others' median tail after
    their last top-level event, and stops where a further event starts."""
    rows = doc["steps"]
    pid = str(rows[-1]["pid"])
    spans = sorted(((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                    if e.get("ph") == "X" and str(e.get("pid")) == pid and str(e.get("tid")) == pid
                    and e.get("dur", 0) > 0), key=lambda t: (t[0], -t[1]))
    top, reach, i = [], None, 0  # reach: the latest end of an earlier, different interval
    while i < len(spans):
        j = i
        while j < len(spans) and spans[j] == spans[i]:
            j += 1
        if reach is None or reach < spans[i][1]:  # in no other: top-level (equal ones all kept)
            top.extend(spans[i:j])
        reach = spans[i][1] if reach is None else max(reach, spans[i][1])
        i = j
    starts = [ns(r["start_us"]) for r in rows]
    counts, tails = [], []
    for a, b in zip(starts, starts[1:]):
        inside = [t for t in top if a <= t[0] < b]
        counts.append(len(inside))
        if inside:
            tails.append(max(0, b - max(t[1] for t in inside)))
    last = starts[-1]
    after = [t for t in top if t[0] >= last]
    want = median(counts)
    end = max([last] + [t[1] for t in after[:want]]) + median(tails)
    if len(after) > want:
        end = min(end, max(after[want][0], last))
    return (end - last) / 1000


def steps_json(path):
    out = subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_steps_match_the_loop(doc, its, source, events):
    rows = doc["steps"]
    got = [r["duration_us"] / 1e6 for r in rows]
    bounds = loop_bounds(its, source)
    assert len(got) == len(bounds), (got, bounds)
    for i, (g, b) in enumerate(zip(got, bounds)):
        assert rows[i]["end_estimated"] == (b is None), (i, rows[i])
        if b is None:
            # Marks without a region: nothing in the trace ends the last
            # iteration; its end is the others' usual shape, from the events.
            want = estimated_last_duration_us(doc, events)
            assert rows[i]["duration_us"] == pytest.approx(want, abs=2), (rows[i], want)
            continue
        lo, hi = b
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
    for r in rows:
        parts = sum(r[f"{c}_us"] for c in STEP_CATEGORIES)
        assert parts + r["untraced_us"] == pytest.approx(r["duration_us"], abs=0.01)
        assert r["compile_us"] <= r["duration_us"]
    assert rows[0]["compile_us"] > 0.5 * rows[0]["duration_us"]  # the first step compiled
    assert all(r["compile_us"] == 0 for r in rows[1:])


@pytest.mark.parametrize("shape,source", [("epoch_regions", "region"), ("compile_update", "marks"),
                                          ("dynamo_forward", "marks"), ("dataloader", "region")])
def test_steps_are_the_loop_iterations(tmp_path, shape, source):
    loop = run_shape(shape, tmp_path)
    doc = steps_json(tmp_path)
    with_steps = [p for p in doc["processes"] if p["steps"]]
    assert len(with_steps) == 1, doc["processes"]
    assert with_steps[0]["source"] == source
    events = [e for evs in read_all(str(tmp_path)).values() for e in evs]
    assert_steps_match_the_loop(doc, loop, source, events)
    if shape in ("compile_update", "dynamo_forward"):
        # the backward is in the steps, not only the forward calls
        assert all(r["backward_us"] > 0 for r in doc["steps"])
        # one step mark per change of the value (update(step=) twice in a row: one mark),
        # and the eager optimizer's steps are events of their own
        marks = [e for e in events if e.get("ph") == "i" and e["name"] == "step" and e.get("cat") == "dftracer"]
        assert [m["args"]["step"] for m in marks] == list(range(len(loop)))
        opt = [e for e in events if e.get("ph") == "X" and e["name"] == "Optimizer.step#SGD.step"]
        assert len(opt) == len(loop)
        assert all(r["optimizer_us"] > 0 for r in doc["steps"])
    if shape == "dataloader":
        helpers = [p for p in doc["processes"] if p["source"] == "helper"]
        assert len(helpers) >= 2 and all(p["steps"] == 0 for p in helpers)
        assert with_steps[0]["region"] == "step"


def test_eager_dataloader_workers_are_helpers_and_not_in_the_run(tmp_path):
    """Under eager tracing the workers' item fetches run ops (torch.full, grad mode
    on): they are phase data (the dataset's work, not the model's forward) and
    category data, the workers are helpers, and compile vs run adds the main
    process's run alone."""
    try:
        from dftracer import _eager  # noqa: F401
    except ImportError:
        pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)")
    run_shape("dataloader", tmp_path, DFTRACER_TRACE_EAGER="1")
    events = [e for evs in read_all(str(tmp_path)).values() for e in evs]
    main_pid = min(e["pid"] for e in events if e.get("ph") == "X" and e["name"] == "step")
    worker_ops = [e for e in events if e.get("ph") == "X" and e["pid"] != main_pid and e.get("cat") == "aten"]
    assert worker_ops and all((e.get("args") or {}).get("phase") == "data" for e in worker_ops), worker_ops[:3]
    doc = steps_json(tmp_path)
    helpers = [p for p in doc["processes"] if p["source"] == "helper"]
    assert len(helpers) >= 2 and all(p["steps"] == 0 and not p["model_work"] for p in helpers), doc["processes"]
    out = subprocess.run([analyzer(), "summary", "--by", "category", "--format", "json", "--no-progress", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["processes"] == 1
    # the workers' ops are data loading: each is counted under data
    out = subprocess.run([analyzer(), "summary", "--by", "pid,category", "--format", "json", "--no-progress",
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    for pid in {e["pid"] for e in worker_ops}:
        data = [r for r in rows if r["pid"] == str(pid) and r["category"] == "data"]
        ops = sum(1 for e in worker_ops if e["pid"] == pid)
        assert data and data[0]["count"] >= ops, (pid, ops, [r for r in rows if r["pid"] == str(pid)])


def test_the_end_of_job_barrier_is_in_no_step(tmp_path):
    import ranks_job

    proc, files = ranks_job.run_job(str(tmp_path), 2, steps=4, compile=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = subprocess.run([analyzer(), "ranks", "--format", "json"] + files, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)

    def table(name):
        t = doc[name]
        return [dict(zip(t["columns"], row)) for row in t["rows"]]

    barrier = [c for c in table("collectives") if c["name"] == "barrier"]
    assert barrier and all(c["step"] == -1 for c in barrier), barrier
    for rank in (0, 1):
        with open(tmp_path / f"ddp-rank{rank}.json") as f:
            times = json.load(f)["step_times"]
        # iterations: start to the next start; the last to its end (the loop's brackets)
        loop = [(b[0] - a[1], b[1] - a[0]) for a, b in zip(times, times[1:])]
        loop.append((times[-1][2] - times[-1][1], times[-1][3] - times[-1][0]))
        rows = [r for r in table("steps") if r["rank"] == rank and r["step"] >= 0]
        got = [r["duration_us"] / 1e6 for r in sorted(rows, key=lambda r: r["step"])]
        assert len(got) == len(loop)
        for g, (lo, hi) in zip(got, loop):
            assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, (rank, got, loop)
