"""The CUDA capture source end to end on a fake GPU: real traced training
processes (fake_gpu_job.py) with DFTRACER_CUDA=1 load libdftracer_cuda.so
($DFTRACER_CUDA_LIB), which loads the fake CUPTI (src/capture/cuda/testing/
fake_cupti.cc, libcupti.so.13 in $DFTRACER_FAKE_CUPTI_DIR, put first in
LD_LIBRARY_PATH) instead of NVIDIA's. The job's ops launch fake kernels,
copies and sets from inside traced ops (eager under trace_eager, graph nodes
of the capture backend, Inductor's kernel calls); the fake writes CUPTI's records and, beside them,
what it chose (FAKE_CUPTI_TRUTH: names, streams, correlation and external
ids, launching thread, GPU start and end on its clock).

Checked against that ground truth, in the process's own trace: one device
event per launch on its GPU's stream track with exact duration, the launch
call on the launching thread, the flow between them, the launching event by
`External id` around the launch call on the trace clock (clock alignment,
with CUPTI's timestamp callback and with CUPTI's own clock), device work
inside its step; and `dftracer-analyze device`'s answers: device time per
kernel, op, module and stream, launch delay, GPU busy and idle time per step
and the GPU-/CPU-bound classification, and the report's GPU line.

Skipped only where the CUDA capture source and the fake are not built
(scripts/test.sh builds both against CUDA 13's wheels).
"""
import bisect
import collections
import glob
import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

import trace_reader  # noqa: E402
from analyzer_cli import analyzer  # noqa: E402

LIB = os.environ.get("DFTRACER_CUDA_LIB", "")
FAKE_DIR = os.environ.get("DFTRACER_FAKE_CUPTI_DIR", "")
pytestmark = pytest.mark.skipif(
    not (LIB and os.path.exists(LIB) and FAKE_DIR and os.path.exists(os.path.join(FAKE_DIR, "libcupti.so.13"))),
    reason="DFTRACER_CUDA_LIB and DFTRACER_FAKE_CUPTI_DIR do not name a built libdftracer_cuda.so and fake "
           "libcupti.so.13 (scripts/test.sh builds them against CUDA 13's wheels)")

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_gpu_job.py")
STEPS = 3
# ns of GPU time per launch. GPU-bound: 265 ms of GPU work a step, so the
# CPU's own time in a step (under 10 ms; tens of ms on a loaded machine)
# leaves the GPU busy well over the 80 % that makes a step GPU-bound.
GPU_BOUND = dict(fwd=50_000_000, bwd=75_000_000, copy=10_000_000, set=5_000_000)
CPU_BOUND = dict(fwd=2_000, bwd=3_000, copy=1_000, set=1_000)
API_NAME = {0: "cudaLaunchKernel", 1: "cuLaunchKernel", 2: "cudaMemcpyAsync", 3: "cudaMemsetAsync"}
CAT = {0: "kernel", 1: "kernel", 2: "gpu_memcpy", 3: "gpu_memset"}
FLOW_BASE = 1 << 40  # device flow ids: correlation + 2^40


def _device_pid(pid, device=0):
    return 0x40000000 | pid << 8 | device  # src/format/device_track.hpp


def _run_job(tmp_path, mode, ns, extra_env=None, want_stderr=False, marks="profiler"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACER_", "FAKE_CUPTI_"))}
    env.update({
        "DFTRACER_ENABLE": "1", "DFTRACER_CUDA": "1", "DFTRACER_CUDA_LIB": LIB,
        "DFTRACER_LOG_FILE": str(tmp_path / "run"), "DFTRACER_TRACE_COMPRESSION": "0",
        "DFTRACER_DISABLE_IO": "1", "DFTRACER_TIME_RESOLUTION": "ns",
        "FAKE_CUPTI_TRUTH": str(tmp_path / "truth.jsonl"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "LD_LIBRARY_PATH": FAKE_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""),
    })
    env.update(extra_env or {})
    p = subprocess.run([sys.executable, JOB, mode, str(STEPS), str(ns["fwd"]), str(ns["bwd"]), str(ns["copy"]),
                        str(ns["set"]), marks], capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "device capture off" not in p.stderr, p.stderr
    traces = glob.glob(str(tmp_path / "run-*.pfw"))
    assert len(traces) == 1, (os.listdir(tmp_path), p.stderr)
    truth = [json.loads(line) for line in open(tmp_path / "truth.jsonl")]
    if not want_stderr:
        assert p.stderr == "", p.stderr
    return traces[0], trace_reader.read_trace(traces[0]), truth, p.stderr


def _analyze(*args):
    p = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _union_in(intervals, lo, hi):
    """ns of [lo, hi) covered by the union of intervals."""
    total, cur_lo, cur_hi = 0, None, None
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in intervals):
        if b <= a:
            continue
        if cur_hi is None or a > cur_hi:
            if cur_hi is not None:
                total += cur_hi - cur_lo
            cur_lo, cur_hi = a, b
        else:
            cur_hi = max(cur_hi, b)
    if cur_hi is not None:
        total += cur_hi - cur_lo
    return total


def _check_trace(events, truth, mode, step_ranges=None):
    """Every launch the fake made, in the trace as promised; returns, per
    launch (by correlation id): its device event, launch call, launching
    event and step (the ProfilerStep#N range around its launch call, else
    the one of `step_ranges`, {step: (start_ns, end_ns)})."""
    start = next(e for e in events if e.get("name") == "start" and e.get("cat") == "dftracer")
    pid = start["pid"]
    dpid = _device_pid(pid)
    complete = [e for e in events if e.get("ph") == "X"]
    dev = {e["args"]["correlation"]: e for e in complete if e["pid"] == dpid}
    api = {e["args"]["correlation"]: e for e in complete if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    launching = {e["args"]["External id"]: e for e in complete
                 if e["pid"] == pid and e.get("cat") not in ("cuda_runtime", "cuda_driver")
                 and "External id" in e.get("args", {})}
    steps = {int(e["name"][13:]): (e["ts_ns"], e["ts_ns"] + e["dur_ns"])
             for e in complete if e["name"].startswith("ProfilerStep#")}
    synchronized = bool(steps)  # a ProfilerStep range ends after the step's synchronize
    assert bool(steps) != (step_ranges is not None)
    steps = steps or step_ranges
    flows = collections.defaultdict(dict)
    for e in events:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            flows[e["id"]][e["ph"]] = e
    names = {e["pid"] if e["name"] == "process_name" else (e["pid"], e["tid"]): e["args"]["name"]
             for e in events if e.get("ph") == "M" and e["name"] in ("process_name", "thread_name")}

    launches = [t for t in truth if t["kind"] in API_NAME]
    assert len(launches) == (STEPS + 1) * 6, "warm-up and steps: 2 gemm_fwd, 2 gemm_bwd, a copy and a set each"
    assert len(dev) == len(launches), "one device event per launch, no other"
    assert names[dpid] == f"GPU 0 (pid {pid})"
    offsets = set()
    out = {}
    for t in launches:
        c = t["correlation"]
        d, a = dev[c], api[c]
        # The device event: its stream's track, exact GPU duration, linked by ids.
        assert d["cat"] == CAT[t["kind"]] and d["tid"] == t["stream"], d
        assert names[(dpid, t["stream"])] == f"stream {t['stream']}"
        want_name = {2: "Memcpy HtoD", 3: "Memset"}.get(t["kind"], t["name"])
        assert d["name"] == want_name
        assert d["dur_ns"] == t["end"] - t["start"], (d, t)
        assert d["args"]["device"] == 0 and d["args"]["stream"] == t["stream"]
        assert t["external"] > 0, "every launch of the job is inside a traced op or graph node"
        assert d["args"]["External id"] == t["external"], (d, t)
        if t["kind"] in (2, 3):
            assert d["args"]["bytes"] == t["bytes"] > 0
        # GPU clock -> trace clock: one offset for every record, device and API alike.
        offsets.add(d["ts_ns"] - t["start"])
        offsets.add(a["ts_ns"] - t["api_start"])
        # The launch call: on the launching thread (its system tid, as the
        # trace's CPU events), its API's name, the same ids.
        assert a["name"] == API_NAME[t["kind"]], a
        assert (a["pid"], a["tid"]) == (pid, t["tid"]), (a, t)
        assert a["args"]["External id"] == t["external"]
        assert a["cat"] == ("cuda_driver" if t["kind"] == 1 else "cuda_runtime")
        assert (t["tid"] != pid) == (t["kind"] == 2), "copies from the loader thread, the rest from the main one"
        # The flow arrow from the launch call to the device work.
        fl = flows[c + FLOW_BASE]
        assert (fl["s"]["pid"], fl["s"]["tid"], fl["s"]["ts_ns"]) == (a["pid"], a["tid"], a["ts_ns"])
        assert (fl["f"]["pid"], fl["f"]["tid"], fl["f"]["ts_ns"]) == (dpid, t["stream"], d["ts_ns"])
        # The launching event: same thread, around the launch call on the
        # trace clock (the CPU events' clock: clock alignment).
        op = launching[t["external"]]
        assert op["tid"] == t["tid"]
        assert op["ts_ns"] <= a["ts_ns"] and a["ts_ns"] + a["dur_ns"] <= op["ts_ns"] + op["dur_ns"], (op, a)
        step = [k for k, (lo, hi) in steps.items() if lo <= a["ts_ns"] < hi]
        assert len(step) <= 1
        if step and synchronized:  # launched in a step: its device work ran in it too
            lo, hi = steps[step[0]]
            assert lo <= d["ts_ns"] and d["ts_ns"] + d["dur_ns"] <= hi, (steps[step[0]], d)
        out[c] = dict(truth=t, dev=d, api=a, op=op, step=step[0] if step else None)
    assert len(offsets) == 1, f"one clock offset for all records, not {sorted(offsets)}"
    _check_launching_ops(out, mode, complete)
    return out


def _check_launching_ops(out, mode, complete):
    """The launching event is the op or graph node that launched the work."""
    for r in out.values():
        t, op = r["truth"], r["op"]
        if t["kind"] == 2:
            assert op["name"] == "fake::h2d"  # outside the model: the observer's op, in both modes
        elif mode in ("compile", "inductor"):  # the capture backend's node, Inductor's (fallback) kernel call
            node = ("function." if mode == "compile" else "kernel.") + {
                "gemm_fwd": "fake.gpu_linear.default", "gemm_bwd": "fake.gpu_linear_bwd.default",
                "": "fake.gpu_zero.default"}[t["name"]]
            assert op["name"] == node and op["cat"] == "dynamo", op
            # The model's own op (the set in Net.forward): module "" (the analyzer's "(root)").
            want = {"gemm_fwd": ("enc", "dec"), "gemm_bwd": ("enc", "dec"), "": ("",)}[t["name"]]
            assert op["args"]["module"] in want, op
            assert op["args"]["phase"] == ("backward" if t["name"] == "gemm_bwd" else "forward")
        elif t["name"] == "gemm_fwd":
            # torch runs a custom op's forward inside its autograd node's scope: the innermost op.
            outer = [e for e in complete if e["name"] == "fake::gpu_linear" and e["tid"] == op["tid"]
                     and e["ts_ns"] <= op["ts_ns"] and op["ts_ns"] + op["dur_ns"] <= e["ts_ns"] + e["dur_ns"]]
            assert outer, op
        else:
            assert op["name"] == {"gemm_bwd": "fake::gpu_linear_bwd", "": "fake::gpu_zero"}[t["name"]], op


def _sums(out, key):
    s = collections.defaultdict(int)
    n = collections.Counter()
    for r in out.values():
        k = key(r)
        s[k] += r["truth"]["end"] - r["truth"]["start"]
        n[k] += 1
    return s, n


def _check_table(rows, sums, counts):
    got = {r["key"]: r for r in rows if r["events"]}
    assert set(got) == set(sums), (sorted(got), sorted(sums))
    for k, ns in sums.items():
        assert got[k]["events"] == counts[k], (k, got[k])
        assert got[k]["device_us"] == pytest.approx(ns / 1000, abs=1e-3), (k, got[k], ns)


def _check_analyzer(trace, out, mode, bound, step_ranges):
    """`device` against the truth; `step_ranges` {step: (start_ns, end_ns)}:
    the steps it must find; `bound`: every step's class, or {step: class}."""
    j = json.loads(_analyze("device", "--format", "json", trace))
    assert j["device_events"] == len(out)
    linked = j["linked"]
    assert linked["launch"] == linked["op"] == linked["op_by_external_id"] == len(out), linked
    assert linked["step"] == sum(r["step"] is not None for r in out.values()), linked
    # Device time per kernel (Kineto's names: the kernel's, Memcpy HtoD, Memset), op, stream, category.
    _check_table(j["kernel"], *_sums(out, lambda r: r["dev"]["name"]))
    _check_table(j["op"], *_sums(out, lambda r: r["op"]["name"]))
    _check_table(j["stream"], *_sums(out, lambda r: f"GPU 0 stream {r['truth']['stream']} (pid {r['api']['pid']})"))
    _check_table(j["category"], *_sums(out, lambda r: ("kernel", "kernel", "memcpy", "memset")[r["truth"]["kind"]]))
    # The launching op's module: the graph nodes'; in eager the module call
    # around the op (module hooks), a backward node's its forward op's. The
    # copy is outside every module.
    _check_table(j["module"], *_sums(out, lambda r: r["op"]["args"].get("module", "(none)") or "(root)"))
    if mode == "eager":
        got = {r["key"] for r in j["module"] if r["events"]}
        assert {"enc", "dec"} <= got, j["module"]
        for r in out.values():
            if r["truth"]["name"] in ("gemm_fwd", "gemm_bwd"):
                assert r["op"]["args"].get("module") in ("enc", "dec"), r["op"]
    # The launching op's phase: the capture backend's on graph nodes, the
    # observer's on eager ops (the copy, the eager forward, the backward's nodes).
    _check_table(j["phase"], *_sums(out, lambda r: r["op"]["args"].get("phase", "(none)")))
    if mode == "eager":
        got = {r["key"]: r for r in j["phase"]}
        assert {k for k, r in got.items() if r["events"]} == {"forward", "backward"}, j["phase"]
        assert got["backward"]["events"] == sum(r["dev"]["name"] == "gemm_bwd" for r in out.values())
    # Launch delay: GPU start minus launch call start, per kernel name (mean).
    delays = collections.defaultdict(list)
    for r in out.values():
        delays[r["dev"]["name"]].append(r["truth"]["start"] - r["truth"]["api_start"])
    for row in j["kernel"]:
        d = delays[row["key"]]
        assert row["launch_delay_mean_us"] == pytest.approx(sum(d) / len(d) / 1000, abs=1e-3), row
    # Per step: span, GPU busy (the union of the device intervals inside it), idle, bound.
    offset = next(iter(out.values()))
    offset = offset["dev"]["ts_ns"] - offset["truth"]["start"]
    intervals = [(r["truth"]["start"] + offset, r["truth"]["end"] + offset) for r in out.values()]
    steps = {row["step"]: row for row in j["step"]}
    assert sorted(steps) == sorted(step_ranges)
    for k, row in steps.items():
        mine = [r for r in out.values() if r["step"] == k]
        lo, hi = step_ranges[k]
        assert row["start_us"] == pytest.approx(lo / 1000, abs=1e-3)
        assert row["span_us"] == pytest.approx((hi - lo) / 1000, abs=1e-3)
        assert row["events"] == len(mine) and mine
        assert row["device_us"] == pytest.approx(sum(r["dev"]["dur_ns"] for r in mine) / 1000, abs=1e-3)
        busy = _union_in(intervals, lo, hi)
        assert row["gpu_busy_us"] == pytest.approx(busy / 1000, abs=1e-3), (row, busy)
        assert row["gpu_idle_us"] == pytest.approx((hi - lo - busy) / 1000, abs=1e-3)
        assert row["bound"] == ("gpu-bound" if busy >= 0.8 * (hi - lo) else "cpu-bound"), (row, busy / (hi - lo))
        if isinstance(bound, str) or k in bound:
            assert row["bound"] == (bound if isinstance(bound, str) else bound[k]), (row, busy / (hi - lo))
    # The report's answer line says the same.
    p = subprocess.run([analyzer(), "report", "-o", trace + ".html", trace], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("GPU: "))
    idle = sum(r["gpu_idle_us"] for r in j["step"]) / sum(r["span_us"] for r in j["step"])
    n_gpu = sum(r["bound"] == "gpu-bound" for r in j["step"])
    m = re.fullmatch(r"GPU: (\d+) device events, ([\d.]+) (s|ms|us) of device time; steps: (\d+) GPU-bound, "
                     r"(\d+) CPU-bound, GPU idle ([\d.]+)% of their time", line)
    assert m, line
    assert (int(m[1]), int(m[4]), int(m[5])) == (len(out), n_gpu, len(j["step"]) - n_gpu), line
    scale = {"s": 1e6, "ms": 1e3, "us": 1}[m[3]]
    assert float(m[2]) * scale == pytest.approx(j["device_us"], abs=scale * 1e-3), line
    assert float(m[6]) == pytest.approx(idle * 100, abs=0.05), line
    # The CPU side counts no device work, and says how much it left out.
    summary = json.loads(_analyze("summary", "--format", "json", trace))
    assert summary["device_events"] == len(out), {k: v for k, v in summary.items() if not isinstance(v, list)}
    return j


def _profiler_steps(events):
    return {int(e["name"][13:]): (e["ts_ns"], e["ts_ns"] + e["dur_ns"])
            for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")}


def _summary_steps(trace, events):
    """`summary --by step`'s steps, {step: (start_ns, end_ns)}, and its rows.
    Its microseconds since the epoch hold a quarter of one as doubles: each
    bound is snapped to the CPU event start or end it is (within 1 us)."""
    rows = json.loads(_analyze("summary", "--by", "step", "--format", "json", trace))["steps"]
    edges = sorted({t for e in events if e.get("ph") == "X" and e["pid"] < 0x40000000
                    for t in (e["ts_ns"], e["ts_ns"] + e["dur_ns"])})

    def snap(us):
        i = bisect.bisect_left(edges, us * 1000)
        best = min(edges[max(i - 1, 0):i + 1], key=lambda t: abs(t - us * 1000))
        assert abs(best - us * 1000) <= 1000, (us, best)
        return best
    ranges = {r["step"]: (snap(r["start_us"]), snap(r["start_us"] + r["duration_us"])) for r in rows}
    return ranges, rows


@pytest.mark.parametrize("mode", ["eager", "compile", "inductor"])
def test_gpu_bound_training_end_to_end(tmp_path, mode):
    trace, events, truth, _ = _run_job(tmp_path, mode, GPU_BOUND)
    out = _check_trace(events, truth, mode)
    j = _check_analyzer(trace, out, mode, "gpu-bound", _profiler_steps(events))
    assert j["linked"]["step"] == STEPS * 6
    assert {r["source"] for r in j["step"]} == {"ProfilerStep"}


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_steps_of_a_job_that_marks_none_are_those_summary_finds(tmp_path, mode):
    """A plain loop, no ProfilerStep#N range (dftracer's own trace, no
    torch.profiler): `device` takes the steps `summary --by step` finds
    (the optimizer's steps end them, the warm-up step too): the same
    number, labels and spans; its GPU busy and idle time and bound per step
    are the fake's truth inside those spans, each launch in the step its
    launch call is in; the report's GPU line counts those steps."""
    trace, events, truth, _ = _run_job(tmp_path, mode, GPU_BOUND, marks="none")
    assert not _profiler_steps(events)
    ranges, rows = _summary_steps(trace, events)
    assert len(ranges) == STEPS + 1, rows
    out = _check_trace(events, truth, mode, ranges)
    # The warm-up step (compiling in compile mode, the GPU waiting) is what the truth says, checked above.
    j = _check_analyzer(trace, out, mode, {k: "gpu-bound" for k in ranges if k > 0}, ranges)
    assert [(s["step"], s["label"], s["pid"], s["source"]) for s in j["step"]] == \
        [(r["step"], r["label"], r["pid"], "optimizer") for r in rows]
    for s, r in zip(j["step"], rows):
        assert s["span_us"] == pytest.approx(r["duration_us"], abs=1e-3)


def test_cpu_bound_training_with_cuptis_own_clock_and_small_buffers(tmp_path):
    """Short kernels: the GPU waits on the CPU. CUPTI's own clock (no
    timestamp callback: an older CUPTI) is mapped onto the trace's, and
    buffers of 16 records each (~6 for the ~90 records of the run, fewer than
    the source's pool of 16, so none is dropped however late the completion
    thread runs) are completed while the job runs."""
    trace, events, truth, _ = _run_job(tmp_path, "eager", CPU_BOUND, {
        "FAKE_CUPTI_NO_TIMESTAMP_CALLBACK": "1", "FAKE_CUPTI_RECORDS_PER_BUFFER": "16"})
    out = _check_trace(events, truth, "eager")
    j = _check_analyzer(trace, out, "eager", "cpu-bound", _profiler_steps(events))
    assert j["linked"]["step"] == STEPS * 6


def test_records_cupti_dropped_are_said_once(tmp_path):
    """A completion thread that falls behind (the fake holds every buffer
    until the flush at stop, one record each): the source's pool of 16
    buffers runs out and CUPTI drops the rest of the records. What reached
    the trace is there; what did not is said in one warning line with
    CUPTI's count, since the trace alone cannot tell a missing kernel."""
    trace, events, truth, stderr = _run_job(tmp_path, "eager", CPU_BOUND, {
        "FAKE_CUPTI_HOLD_BUFFERS": "1", "FAKE_CUPTI_RECORDS_PER_BUFFER": "1"}, want_stderr=True)
    launches = len(truth)
    # Records per launch: its external correlation, its API call, its device
    # work; one API record per synchronize (a step's end, the warm-up's too).
    records = 3 * launches + (STEPS + 1)
    assert stderr.splitlines() == [
        f"[dftracer] warning: device capture: CUPTI dropped {records - 16} activity records (no free buffer in the "
        "pool of 16 x 4 MiB): their device events are not in the trace"], stderr
    # The first 16 records: five launches' three each, then the sixth's external correlation.
    got = sorted(e["args"]["correlation"] for e in events if e.get("ph") == "X" and "correlation" in e.get("args", {}))
    assert got == sorted([t["correlation"] for t in truth[:5]] * 2)
