"""`dftracer-analyze device` end to end on real Kineto traces of GPU jobs
(tests/data/kineto, from HTA's test data): every figure the command prints is
recomputed here from the raw JSON, by a plainly written linker (correlation,
External id, innermost cpu_op, `## module ##` ranges, ProfilerStep ranges,
interval union), and the two must agree to the nanosecond."""
import csv
import gzip
import io
import json
import os
import subprocess
from collections import defaultdict
from decimal import Decimal

import pytest

from analyzer_cli import ROOT, analyzer

DATA = os.path.join(ROOT, "tests", "data", "kineto")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def load(name):
    with gzip.open(os.path.join(DATA, name), "rt") as f:
        doc = json.load(f, parse_float=Decimal)  # exact: epoch microseconds with decimals
    evs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    for e in evs:
        e["t0"] = int(Decimal(e["ts"]) * 1000)
        e["t1"] = e["t0"] + int(Decimal(e["dur"]) * 1000)
    return evs


def run_device(*args):
    p = subprocess.run([analyzer(), "device", "--no-progress", *args], capture_output=True, text=True, timeout=120)
    return p


def device_json(name):
    p = run_device("--format", "json", os.path.join(DATA, name))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def profiler_steps(evs):
    """The ProfilerStep#N ranges: [(N, t0, t1)]."""
    return [(int(e["name"].split("#")[1]), e["t0"], e["t1"]) for e in evs
            if e.get("cat") in ("user_annotation", "cpu_op") and str(e["name"]).startswith("ProfilerStep#")]


def summary_steps(name, evs):
    """`summary --by step`'s steps, [(step, t0, t1)]: its epoch microseconds
    are doubles (a quarter of one), so each bound is snapped to the CPU event
    start or end it is."""
    p = subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json", "--no-progress",
                        os.path.join(DATA, name)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    edges = sorted({t for e in evs if e.get("cat") not in DEVICE_CATS for t in (e["t0"], e["t1"])})

    def snap(us):
        best = min(edges, key=lambda t: abs(t - us * 1000))
        assert abs(best - us * 1000) <= 1000, (us, best)
        return best
    return [(r["step"], snap(r["start_us"]), snap(r["start_us"] + r["duration_us"]))
            for r in json.loads(p.stdout)["steps"]]


def reference(evs, steps):
    """Device time per op, category and step, linked the plain way; `steps`: [(N, t0, t1)]."""
    ops_by_ext = {}
    for e in evs:
        if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {}):
            ops_by_ext.setdefault(e["args"]["External id"], e)
    launches = {e["args"]["correlation"]: e for e in evs
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    cpu_ops = defaultdict(list)
    for e in evs:
        if e.get("cat") == "cpu_op":
            cpu_ops[(e["pid"], e["tid"])].append(e)
    modules = defaultdict(list)  # pid -> `## NAME ##` ranges
    for e in evs:
        n = str(e["name"])
        if e.get("cat") == "user_annotation" and len(n) > 6 and n.startswith("## ") and n.endswith(" ##"):
            modules[e["pid"]].append(e)

    def module_of(call):
        """The shortest `## NAME ##` range holding the call on its thread, else around its start on any thread."""
        same = [m for m in modules[call["pid"]] if m["tid"] == call["tid"]
                and m["t0"] <= call["t0"] and call["t1"] <= m["t1"]]
        other = [m for m in modules[call["pid"]] if m["t0"] <= call["t0"] <= m["t1"]]
        best = min(same or other, key=lambda m: m["t1"] - m["t0"], default=None)
        return best["name"][3:-3] if best else "(none)"

    per_op, per_cat, per_step, per_module = defaultdict(int), defaultdict(int), defaultdict(int), defaultdict(int)
    intervals = []
    for k in (e for e in evs if e.get("cat") in DEVICE_CATS):
        dur = k["t1"] - k["t0"]
        intervals.append((k["t0"], k["t1"]))
        cat = {"gpu_memcpy": "memcpy", "gpu_memset": "memset"}.get(k["cat"], "kernel")
        if cat == "kernel" and "nccl" in k["name"]:
            cat = "collective"
        per_cat[cat] += dur
        launch = launches.get(k["args"].get("correlation"))
        op = ops_by_ext.get(k["args"].get("External id"))
        if op is None and launch is not None:  # innermost cpu_op around the launch call
            around = [o for o in cpu_ops[(launch["pid"], launch["tid"])]
                      if o["t0"] <= launch["t0"] and launch["t1"] <= o["t1"]]
            # Same length: the later External id is the inner op (numbered when it starts).
            op = min(around, key=lambda o: (o["t1"] - o["t0"], -o["args"].get("External id", -1))) if around else None
        per_op[op["name"] if op else "(none)"] += dur
        where = launch or op
        per_module[module_of(where) if where is not None else "(none)"] += dur
        if where is not None:
            for n, t0, t1 in steps:
                if t0 <= where["t0"] < t1:
                    per_step[n] += dur
    intervals.sort()
    merged = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    busy = {}
    for n, t0, t1 in steps:
        busy[n] = sum(max(0, min(b, t1) - max(a, t0)) for a, b in merged)
    span = {n: t1 - t0 for n, t0, t1 in steps}
    return per_op, per_cat, per_step, per_module, busy, span, sum(b - a for a, b in merged)


def us(ns):
    return ns / 1000.0


@pytest.mark.parametrize("name", ["nccl_data.json.gz", "sampled_rank-0.json.gz", "alexnet_trace.json.gz",
                                  "mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_device_time_matches_an_independent_computation(name):
    """A trace without ProfilerStep#N ranges (alexnet's) has the steps
    `summary --by step` finds."""
    evs = load(name)
    steps = profiler_steps(evs) or summary_steps(name, evs)
    assert steps
    per_op, per_cat, per_step, per_module, busy, span, busy_total = reference(evs, steps)
    got = device_json(name)
    n_device = sum(1 for e in evs if e.get("cat") in DEVICE_CATS)
    assert got["device_events"] == n_device
    assert got["device_us"] == pytest.approx(us(sum(per_cat.values())), abs=1e-3)
    assert got["busy_us"] == pytest.approx(us(busy_total), abs=1e-3)
    assert {r["key"]: r["device_us"] for r in got["op"] if r["events"]} == pytest.approx(
        {k: us(v) for k, v in per_op.items()}, abs=1e-3)
    assert {r["key"]: r["device_us"] for r in got["module"] if r["events"]} == pytest.approx(
        {k: us(v) for k, v in per_module.items()}, abs=1e-3)
    assert {r["key"]: r["device_us"] for r in got["category"]} == pytest.approx(
        {k: us(v) for k, v in per_cat.items()}, abs=1e-3)
    steps = {s["step"]: s for s in got["step"]}
    assert set(steps) == set(span)
    for n, s in steps.items():
        assert s["span_us"] == pytest.approx(us(span[n]), abs=1e-3)
        assert s["gpu_busy_us"] == pytest.approx(us(busy[n]), abs=1e-3)
        assert s["gpu_idle_us"] == pytest.approx(us(span[n] - busy[n]), abs=1e-3)
        assert s["device_us"] == pytest.approx(us(per_step.get(n, 0)), abs=1e-3)
        expect = "no-gpu" if busy[n] == 0 else ("gpu-bound" if busy[n] >= 0.8 * span[n] else "cpu-bound")
        assert s["bound"] == expect


def test_nccl_trace_figures():
    """The numbers a reader of this trace would check by hand."""
    got = device_json("nccl_data.json.gz")
    assert got["linked"] == {"launch": 3774, "op": 3774, "op_by_external_id": 3774, "module": 3774, "step": 3774}
    assert [s["step"] for s in got["step"]] == [4, 5, 6]
    assert {r["key"] for r in got["module"] if r["events"]} == {"forward", "backward", "optimizer"}
    coll = next(r for r in got["category"] if r["key"] == "collective")
    assert coll["events"] == 21
    streams = {r["key"]: r["events"] for r in got["stream"]}
    assert streams == {"GPU 0 stream 7": 3753, "GPU 0 stream 40": 21}


def test_kernel_launched_by_driver_call():
    got = device_json("triton_example.json.gz")
    (k,) = got["kernel"]
    assert k["key"] == "triton_poi_fused_add_cos_sin_0"
    assert k["device_us"] == pytest.approx(1.76)
    assert k["cpu_us"] == pytest.approx(47.768)  # the cuLaunchKernel call
    assert k["launch_delay_mean_us"] == pytest.approx(2413669097444.592 - 2413669097399.166, abs=1e-3)
    assert got["linked"]["step"] == 1  # its ProfilerStep range is under another pid


def test_table_and_csv_outputs():
    path = os.path.join(DATA, "nccl_data.json.gz")
    p = run_device("--by", "step", path)
    assert p.returncode == 0, p.stderr
    assert "linked: launch 100.0%, op 100.0%" in p.stdout
    assert p.stdout.splitlines()[3].split()[:3] == ["step", "label", "pid"]
    p = run_device("--by", "kernel", "--format", "csv", path)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) > 10 and set(rows[0]) >= {"kernel", "events", "device_us", "cpu_us", "launch_delay_us"}
    p = run_device("--by", "op", "--top", "3", path)
    assert "more rows; --top 0 shows all" in p.stdout


def test_bad_by_and_no_device_events(tmp_path):
    p = run_device("--by", "flops", os.path.join(DATA, "nccl_data.json.gz"))
    assert p.returncode == 2 and "--by must be op, kernel, module, phase, category, stream or step" in p.stderr
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}))
    p = run_device(str(cpu_only))
    assert p.returncode == 0
    assert "no device events (cat kernel, gpu_memcpy, gpu_memset) in the input" in p.stderr


def test_python_api_gives_the_commands_numbers():
    da = pytest.importorskip("dftracer.analyze")
    if da._ext is None or not hasattr(da, "device"):
        pytest.skip("dftracer.analyze without the device view (installed package predates it)")
    path = os.path.join(DATA, "nccl_data.json.gz")
    got = da.device(path)
    cli = device_json("nccl_data.json.gz")
    assert got["totals"]["device_events"] == cli["device_events"] == 3774
    assert got["totals"]["linked"] == cli["linked"]
    import pandas as pd
    for table in ("op", "kernel", "module", "category", "stream", "step"):
        pd.testing.assert_frame_equal(got[table], pd.DataFrame(cli[table]), obj=table)  # null -> NaN alike
    assert list(got["step"]["bound"]) == [s["bound"] for s in cli["step"]]


def test_modules_from_python_function_events(tmp_path):
    """A real torch.profiler export with with_stack=True (CPU here): its `nn.Module: NAME`
    events are module ranges, and the CPU time inside each is attributed to it."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        model(torch.randn(8, 64))
    path = str(tmp_path / "stack.json")
    prof.export_chrome_trace(path)
    got = json.loads(run_device("--format", "json", path).stdout)
    cpu = {r["key"]: r["cpu_us"] for r in got["module"]}
    assert {"Sequential_0", "Linear_0", "ReLU_0"} <= set(cpu)
    with open(path) as f:
        evs = json.load(f)["traceEvents"]
    span = {e["name"][len("nn.Module: "):]: float(e["dur"]) for e in evs
            if e.get("cat") == "python_function" and str(e["name"]).startswith("nn.Module: ")}
    for name in ("Linear_0", "ReLU_0"):
        assert 0 < cpu[name] <= span[name] + 1e-3  # the self time of what ran inside, no more


def test_several_files_link_within_each_file():
    """Correlation and External ids repeat across files (ranks): each file links on its own."""
    names = ["nccl_data.json.gz", "sampled_rank-0.json.gz", "alexnet_trace.json.gz"]
    each = [device_json(n) for n in names]
    p = run_device("--format", "json", *[os.path.join(DATA, n) for n in names])
    assert p.returncode == 0, p.stderr
    both = json.loads(p.stdout)
    for key in ("launch", "op", "op_by_external_id", "module"):
        assert both["linked"][key] == sum(e["linked"][key] for e in each), key
    assert both["device_us"] == pytest.approx(sum(e["device_us"] for e in each), abs=1e-3)
    assert both["busy_us"] == pytest.approx(sum(e["busy_us"] for e in each), abs=1e-3)
    # Steps: each file's ProfilerStep ranges; alexnet's file has none, so its
    # steps are those `summary --by step` finds in the whole input (there its
    # process, with no model work beside the others' optimizer steps, is a
    # data-loader-like helper: none, though alone it has two).
    prof = [s for s in both["step"] if s["source"] == "ProfilerStep"]
    assert [(s["file"], s["step"]) for s in prof] == [(i, s["step"]) for i, e in enumerate(each[:2]) for s in e["step"]]
    p = subprocess.run([analyzer(), "summary", "--by", "step", "--format", "json", "--no-progress",
                        *[os.path.join(DATA, n) for n in names]], capture_output=True, text=True, timeout=120)
    found = [r for r in json.loads(p.stdout)["processes"] if r["file_index"] == 2]
    assert len(each[2]["step"]) == 2 and sum(r["steps"] for r in found) == 0
    assert len(both["step"]) == len(prof)
    assert both["linked"]["step"] == sum(e["linked"]["step"] for e in each[:2])


def test_report_has_a_device_section(tmp_path):
    """`report` on a GPU trace: an answer line and a page section with the device figures
    (rendered in headless Chromium where it is installed); none without device events."""
    import re
    import shutil
    cli = device_json("nccl_data.json.gz")
    html = tmp_path / "r.html"
    p = subprocess.run([analyzer(), "report", "--no-progress", "-o", str(html), os.path.join(DATA, "nccl_data.json.gz")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("GPU: "))
    assert line.startswith("GPU: 3774 device events, 165.186 ms of device time; steps: 0 GPU-bound, 3 CPU-bound")
    idle = 100 * sum(s["gpu_idle_us"] for s in cli["step"]) / sum(s["span_us"] for s in cli["step"])
    assert line.endswith(f"GPU idle {idle:.1f}% of their time")
    page = html.read_text()
    data = json.loads(re.search(r"var D=(\{.*?\});\n", page).group(1))
    assert data["linked"] == cli["linked"] and data["step"] == cli["step"]
    if shutil.which("chromium"):
        from test_analyze_report import _rendered_dom
        dom = _rendered_dom(html, tmp_path)
        assert 'data-device-rendered="yes"' in dom
        assert dom.count("cpu-bound</td>") == 3
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}))
    p = subprocess.run([analyzer(), "report", "--no-progress", "-o", str(tmp_path / "c.html"), str(cpu_only)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "GPU: " not in p.stdout
    assert "device-section" not in (tmp_path / "c.html").read_text()


def test_phase_table_of_hta_phases_is_their_module_ranges():
    """nccl_data marks its phases with `## forward ##`, `## backward ##`, `## optimizer ##`
    ranges (HTA's modules): each phase row's device figures are its module row's."""
    cli = device_json("nccl_data.json.gz")
    modules = {r["key"]: r for r in cli["module"] if r["events"]}
    phases = {r["key"]: r for r in cli["phase"] if r["events"]}
    assert set(phases) == set(modules) == {"forward", "backward", "optimizer"}
    for k, row in phases.items():
        assert (row["events"], row["device_us"]) == (modules[k]["events"], modules[k]["device_us"]), k


@pytest.mark.parametrize("name", ["nccl_data.json.gz", "sampled_rank-0.json.gz", "alexnet_trace.json.gz"])
def test_report_cpu_tables_hold_no_gpu_work(tmp_path, name):
    """On a Kineto trace, the report's CPU side (answer lines, top ops, timeline) counts no
    GPU kernel, copy or GPU track as an op or a process; the GPU is a timeline row of its own."""
    import re
    evs = load(name)
    gpu_names = {e["name"] for e in evs if e.get("cat") in DEVICE_CATS + ("gpu_user_annotation", "cuda_sync")}
    gpu_pids = {str(e["pid"]) for e in evs if e.get("cat") in DEVICE_CATS}
    html = tmp_path / "r.html"
    p = subprocess.run([analyzer(), "report", "--no-progress", "-o", str(html), os.path.join(DATA, name)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    hottest = next(ln for ln in p.stdout.splitlines() if ln.startswith("Hottest ops"))
    assert not any(k in hottest for k in gpu_names if len(k) > 8), hottest
    for ln in p.stdout.splitlines():
        if ln.startswith("Steps:"):
            assert not any(f"of pid {g}," in ln + "," for g in gpu_pids), ln
    labels = re.findall(r'"label":"([^"]*)"', html.read_text())
    assert [f"GPU {g}" for g in sorted(gpu_pids)] == [lb for lb in labels if lb.startswith("GPU ")]
    assert not any(lb == f"pid {g}" or lb.startswith(f"pid {g} ") for lb in labels for g in gpu_pids), labels
    s = subprocess.run([analyzer(), "summary", "--no-progress", "--by", "cat", "--format", "json",
                        os.path.join(DATA, name)], capture_output=True, text=True, timeout=120)
    doc = json.loads(s.stdout)
    assert not {r["cat"] for r in doc["rows"]} & set(DEVICE_CATS)
    assert doc["device_events"] >= sum(1 for e in evs if e.get("cat") in DEVICE_CATS)
