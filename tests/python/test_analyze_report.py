"""`dftracer-analyze report` opened in headless Chromium renders its charts,
and `merge` output is strict JSON for Python's own parser.

The command is found through $DFTRACER_ANALYZE_BIN, beside this interpreter or on
PATH (the wheel installs it), or in a CMake build directory of this checkout.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _analyzer():
    # This interpreter's own install before PATH: a dftracer-analyze of another
    # install on PATH (an older build) would test the wrong page.
    cands = [os.environ.get("DFTRACER_ANALYZE_BIN"), os.path.join(os.path.dirname(sys.executable), "dftracer-analyze"),
             shutil.which("dftracer-analyze")]
    cands += sorted(glob.glob(os.path.join(ROOT, "build*", "src", "analyze", "dftracer-analyze")),
                    key=os.path.getmtime, reverse=True)
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("dftracer-analyze not built (set DFTRACER_ANALYZE_BIN)")


def _write_trace(path, pids=(100, 200)):
    """A small trace in our format: op events of three phases in two processes."""
    lines = ["["]
    i = 0
    for pid in pids:
        lines.append(json.dumps({"id": i, "name": "process_name", "cat": "dftracer", "pid": pid, "tid": pid,
                                 "ph": "M", "args": {"name": f"worker{pid}"}}) + ",")
        for k in range(300):
            i += 1
            phase = ("forward", "backward", "inference")[k % 3]
            ev = {"id": i, "name": f"function.aten.op{k % 7}", "cat": "torch", "pid": pid, "tid": pid + 1,
                  "ts": 1.7e15 + k * 100.0 + pid, "dur": 5.0 + k % 11, "ph": "X",
                  "args": {"phase": phase, "module": f"model.layer{k % 4}", "graph": 0, "flops": 1000 * k,
                           "bytes": 64 * k}}
            lines.append(json.dumps(ev) + ",")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def test_merge_output_is_strict_json(tmp_path):
    exe = _analyzer()
    _write_trace(tmp_path / "a.pfw")
    out = tmp_path / "merged.json"
    subprocess.run([exe, "merge", "-o", str(out), str(tmp_path / "a.pfw")], check=True, capture_output=True)
    doc = json.loads(out.read_text())  # strict: raises on trailing commas and the like
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 600
    names = {(e["pid"], e["args"]["name"]) for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {(100, "worker100"), (200, "worker200")}


def _rendered_dom(html, tmp_path):
    """The page's DOM after its script ran in headless Chromium."""
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert 'data-rendered="yes"' in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_renders_charts_in_headless_chromium(tmp_path):
    exe = _analyzer()
    _write_trace(tmp_path / "a.pfw")
    html = tmp_path / "report.html"
    subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True)
    text = html.read_text()
    assert "<rect" not in text.split("<script")[0], "charts must be drawn by the page's script"
    assert not re.search(r"(src|href)=\"https?://", text), "the report must not load anything from the network"
    dom = _rendered_dom(html, tmp_path)
    # The rendered DOM (after the script ran) holds the SVG charts.
    top_ops = dom.split('id="top-ops"')[1].split("</svg>")[0]
    assert top_ops.count('class="bar"') == 7  # seven op names
    assert "function.aten.op" in top_ops
    phases = dom.split('id="by-phase"')[1].split("</svg>")[0]
    assert phases.count('class="bar"') == 3  # forward, backward, inference
    modules = dom.split('id="by-module"')[1].split("</svg>")[0]
    assert modules.count('class="bar"') == 4
    # The module icicle: "model" over its four layers, each as wide as its total time.
    icicle = dom.split('id="module-icicle"')[1].split("</svg>")[0]
    assert icicle.count('class="node"') == 5
    assert re.search(r"<title>model: [0-9.]+ ms total, 0.000 us self, 100.00%, 600 events</title>", icicle), icicle
    assert "model.layer0: " in icicle
    timeline = dom.split('id="timeline"')[1].split("</svg>")[0]
    assert timeline.count('class="bin"') > 2
    assert "worker100" in dom and "worker200" in dom


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_bars_show_self_time(tmp_path):
    """A region around three ops: the ops' self time (600 us) leads the page,
    not the region's inclusive 1000 us (its own time is 400 us)."""
    exe = _analyzer()
    evs = [{"id": i, "name": "function.mm", "cat": "op", "pid": 1, "tid": 1, "ts": 100 + 300 * i, "dur": 200,
            "ph": "X", "args": {"phase": "forward", "module": "model.fc"}} for i in range(3)]
    evs.append({"id": 9, "name": "train_step", "cat": "region", "pid": 1, "tid": 1, "ts": 0, "dur": 1000, "ph": "X"})
    (tmp_path / "a.pfw").write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in evs))
    html = tmp_path / "report.html"
    subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True)
    dom = _rendered_dom(html, tmp_path)
    top_ops = dom.split('id="top-ops"')[1].split("</svg>")[0]
    labels = re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', top_ops)
    assert labels == ["function.mm", "train_step"]
    assert "600.000 us self, 600.000 us total" in top_ops and "400.000 us self, 1.000 ms total" in top_ops
    assert "1.000 ms traced" in dom


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_shows_steps_as_stacked_bars(tmp_path):
    """Three train_step regions on the main thread: one stacked bar per step
    (its self time split by category), the first step's compile share, and the
    first step (compiling, 2.5x the others) marked as an outlier."""
    exe = _analyzer()
    evs = [{"name": "dynamo.trace", "cat": "compile", "pid": 1, "tid": 1, "ts": 0, "dur": 500, "ph": "X"}]
    for start in (0, 2000, 3000):
        off = 500 if start == 0 else 0
        evs.append({"name": "mm", "cat": "op", "pid": 1, "tid": 1, "ts": start + off, "dur": 200, "ph": "X",
                    "args": {"phase": "forward"}})
        evs.append({"name": "mm_bw", "cat": "op", "pid": 1, "tid": 1, "ts": start + off + 200, "dur": 200,
                    "ph": "X", "args": {"phase": "backward"}})
        evs.append({"name": "train_step", "cat": "app", "pid": 1, "tid": 1, "ts": start,
                    "dur": 1000 if start == 0 else 400, "ph": "X"})
    (tmp_path / "a.pfw").write_text("".join(json.dumps(e) + "\n" for e in evs))
    html = tmp_path / "report.html"
    subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True)
    dom = _rendered_dom(html, tmp_path)
    section = dom.split('id="steps-section"')[1].split("</svg>")[0]
    labels = re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', section)
    assert labels == ["! step 0", "step 1", "step 2"]
    # step 0: compile, forward, backward, other (the region's own 100 us); steps 1, 2: forward, backward.
    assert section.count('class="step-part"') == 8
    assert "3 steps; first step: compile 50.0% of its traced time" in section
    assert "1.000 ms traced" in section
