"""Memory capture (trace_eager(memory=True) / DFTRACER_MEMORY=1).

A small GPT-2 (built from a config, random weights) trains on the CPU; the
same step runs under torch.profiler's profile_memory and under our capture.
Checked: per ATen op, the bytes our events say it allocated minus freed
(self) equal torch.profiler's self CPU memory for that op; the memory
counter track's maximum equals the peak of torch.profiler's allocation
series; activation checkpointing gives the smaller peak; the analyzer's
summary has the memory columns and `memory` the peak.
"""
import collections
import json
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

from dftracer.python.eager import memory_enabled, trace_eager  # noqa: E402
from test_dynamo_helpers import traced  # noqa: E402
from analyzer_cli import analyzer  # noqa: E402
from gpt2_training import TINY, gpt2_train_step  # noqa: E402


def tiny_gpt2(checkpointing=False):
    return gpt2_train_step(TINY, checkpointing)


def our_memory(events):
    """Per op name: self bytes allocated minus freed; the track's maximum."""
    net = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e["name"].startswith("aten::"):
            a = e.get("args", {})
            net[e["name"]] += a.get("alloc_bytes", 0) - a.get("free_bytes", 0)
    samples = [e["args"]["cpu"] for e in events if e.get("ph") == "C" and e["name"] == "memory"]
    return net, samples


def profiler_memory(step, tmp_path):
    act = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=act, profile_memory=True) as prof:
        step()
    net = collections.Counter()
    for a in prof.key_averages():
        if a.key.startswith("aten::") and a.self_cpu_memory_usage:
            net[a.key] += a.self_cpu_memory_usage
    path = str(tmp_path / "torch_profile.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        doc = json.load(f)
    totals = [e["args"]["Total Allocated"] for e in doc["traceEvents"]
              if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    return net, max(totals)


def traced_step(step, tmp_path, name):
    with traced(tmp_path, name) as events:
        with trace_eager(memory=True):
            assert memory_enabled()
            step()
    assert not memory_enabled()
    return events


def test_per_op_bytes_and_peak_equal_torch_profiler(tmp_path):
    step = tiny_gpt2()
    for _ in range(2):
        step()  # warm up: lazy state, the allocator's first blocks
    theirs, their_peak = profiler_memory(step, tmp_path)
    events = traced_step(step, tmp_path, "mem")
    ours, samples = our_memory(events)
    assert theirs, "torch.profiler saw no memory"
    assert {k: v for k, v in ours.items() if v} == {k: v for k, v in theirs.items() if v}
    assert max(samples) == their_peak
    # bounded rate: far fewer samples than allocations
    allocs = sum(1 for e in events if e.get("ph") == "X" and "alloc_bytes" in e.get("args", {}))
    assert 0 < len(samples) < allocs * 2


def test_checkpointing_lowers_the_peak(tmp_path):
    peaks = {}
    for ckpt in (False, True):
        step = tiny_gpt2(checkpointing=ckpt)
        step()
        events = traced_step(step, tmp_path / str(ckpt), "ck")
        _, samples = our_memory(events)
        # relative to the first sample: what the step itself added at most
        peaks[ckpt] = max(samples) - samples[0]
    assert peaks[True] < peaks[False]


def test_off_by_default_writes_no_memory(tmp_path):
    step = tiny_gpt2()
    with traced(tmp_path, "off") as events:
        with trace_eager():
            step()
    assert not any(e.get("ph") == "C" for e in events)
    assert not any("alloc_bytes" in e.get("args", {}) for e in events if e.get("ph") == "X")


def test_analyzer_memory_columns_and_peak(tmp_path):
    exe = analyzer()
    step = tiny_gpt2()
    step()
    events = traced_step(step, tmp_path, "an")
    ours, samples = our_memory(events)
    out = subprocess.run([exe, "summary", str(tmp_path), "--by", "name", "--format", "json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["memory"] is True
    rows = {r["name"]: r for r in doc["rows"]}
    for name, net in ours.items():
        assert rows[name]["net_bytes"] == net
    out = subprocess.run([exe, "memory", str(tmp_path), "--format", "json"], capture_output=True, text=True,
                         check=True)
    series = json.loads(out.stdout)["series"]
    assert [s["device"] for s in series] == ["cpu"]
    assert series[0]["peak_bytes"] == max(samples)


def test_python_api_memory_columns_and_peak(tmp_path):
    da = pytest.importorskip("dftracer.analyze")
    step = tiny_gpt2()
    step()
    events = traced_step(step, tmp_path, "py")
    ours, samples = our_memory(events)
    df = da.summary(str(tmp_path), by="name")
    assert {"alloc_bytes", "free_bytes", "net_bytes"} <= set(df.columns)
    net = dict(zip(df["name"], df["net_bytes"]))
    for name, value in ours.items():
        assert net[name] == value
    peaks = da.memory(str(tmp_path))
    assert list(peaks["device"]) == ["cpu"]
    assert peaks["peak_bytes"][0] == max(samples)


def test_torch_sees_no_profiler_and_its_profiler_runs_after(tmp_path):
    # Our reporter sits where torch's profiler keeps its state: torch must
    # still read "no profiler" (Dynamo and DDP ask), and torch.profiler must
    # start once our capture is off.
    with traced(tmp_path, "coexist"):
        with trace_eager(memory=True):
            assert not torch.autograd._profiler_enabled()
            torch.ones(8).neg()
        assert not torch.autograd._profiler_enabled()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            torch.ones(8).neg()
    assert any(e.key == "aten::neg" for e in prof.key_averages())


def test_torch_profiler_runs_inside_memory_capture(tmp_path):
    # torch.profiler started on a thread where memory capture is on: capture
    # steps aside (torch's profiler gets the reports) and is back after.
    with traced(tmp_path, "inside") as events:
        with trace_eager(memory=True):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        profile_memory=True) as prof:
                torch.ones(256).neg()
            assert memory_enabled()
            torch.ones(256).neg()
    assert any(a.key == "aten::neg" and a.self_cpu_memory_usage == 1024 for a in prof.key_averages())
    neg = [e for e in events if e.get("ph") == "X" and e["name"] == "aten::neg"
           and "alloc_bytes" in e.get("args", {})]
    assert [e["args"]["alloc_bytes"] for e in neg] == [1024]
