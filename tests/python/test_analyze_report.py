"""`dftracer-analyze report` opened in headless Chromium renders its charts,
and `merge` output is strict JSON for Python's own parser.

The command is found through $DFTRACER_ANALYZE_BIN, beside this interpreter or on
PATH (the wheel installs it), or in a CMake build directory of this checkout.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from analyzer_cli import analyzer

_analyzer = analyzer


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


def _answer_trace(path):
    """Three train_step regions; the first compiles for 500 us. Self times: mm 750 us
    (37.5 % of the 2 ms traced), mm_bw 600, dynamo.trace 500 (compile: 25 %), the
    regions 150. mm declares 1e6 FLOPs and 1e5 bytes per call (10 FLOP/B)."""
    evs = [{"name": "dynamo.trace", "cat": "compile", "pid": 1, "tid": 1, "ts": 0, "dur": 500, "ph": "X"}]
    for start in (0, 2000, 3000):
        off = 500 if start == 0 else 0
        evs.append({"name": "mm", "cat": "op", "pid": 1, "tid": 1, "ts": start + off, "dur": 250, "ph": "X",
                    "args": {"phase": "forward", "module": "model.fc", "flops": 1000000, "bytes": 100000}})
        evs.append({"name": "mm_bw", "cat": "op", "pid": 1, "tid": 1, "ts": start + off + 250, "dur": 200,
                    "ph": "X", "args": {"phase": "backward", "module": "model.fc"}})
        evs.append({"name": "train_step", "cat": "app", "pid": 1, "tid": 1, "ts": start,
                    "dur": 1000 if start == 0 else 500, "ph": "X"})
    path.write_text("".join(json.dumps(e) + "\n" for e in evs))


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_opens_on_the_answer(tmp_path, monkeypatch):
    """The page opens on the answer -- the top self-time op with its share, the
    compile share, the steps -- before the module tree, the roofline, the steps
    timeline and the skipped-input counts; `report` prints the same lines."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    exe = _analyzer()
    _answer_trace(tmp_path / "a.pfw")
    (tmp_path / "dftracer-calibration.json").write_text(json.dumps({"peak_gflops": 100.0, "peak_gbps": 10.0}))
    html = tmp_path / "report.html"
    out = subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True,
                         text=True).stdout
    assert out.startswith("Most self time: mm 37.5% of the traced time (750.000 us, 3 events)"), out
    dom = _rendered_dom(html, tmp_path)
    answer = re.findall(r"<li>([^<]*)</li>", dom.split('id="answer-lines"')[1].split("</ul>")[0])
    assert answer == out.splitlines()
    assert answer[0].startswith("Most self time: mm 37.5%")
    assert answer[1] == "Top modules by self time: model.fc 67.5%"
    assert answer[2].startswith("Compile vs run: compile 25.0% (500.000 us), run 75.0%"), answer[2]
    assert answer[3].startswith("Steps: 3; the first 1.000 ms, compile 50.0% of its traced time"), answer[3]
    # The order: the answer's sections first, then the rest.
    order = ['id="answer-lines"', 'id="top-ops"', 'id="by-module"', 'id="by-category"', 'id="steps-section"',
             'id="module-icicle"', 'id="roofline"', 'id="step-timeline"', 'id="timeline"', 'id="bad-input"']
    at = [dom.index(marker) for marker in order]
    assert at == sorted(at), list(zip(order, at))
    assert dom.index("Most self time") < dom.index('id="module-icicle"')
    top_ops = dom.split('id="top-ops"')[1].split("</svg>")[0]
    assert re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', top_ops)[0] == "mm"
    compile_bar = dom.split('id="by-category"')[1].split("</svg>")[0]
    assert "compile: 500.000 us self" in compile_bar
    # The roofline: the roof from the calibration beside the trace, mm at 10 FLOP/B and 4 GFLOP/s
    # (1e6 FLOPs in 250 us), 4 % of its 100 GFLOP/s roof (min(100, 10 x 10)).
    roof = dom.split('id="roofline"')[1].split("</svg>")[0]
    assert 'class="roof"' in roof and roof.count('class="op"') == 1
    assert "mm: 4.00 GFLOP/s at 10.00 FLOP/B, 750.000 us self, 4.0% of the compute roof" in roof
    assert "Peaks 100.0 GFLOP/s and 10.0 GB/s" in dom
    steps = dom.split('id="step-timeline"')[1].split("</svg>")[0]
    assert steps.count('class="step-box"') == 3
    bad = dom.split('id="bad-input-line"')[1].split("</table>")[0]
    assert "nothing skipped" in bad and "malformed lines" in bad


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_io_section_renders_every_chart(tmp_path):
    """POSIX/STDIO events: the page renders to its end (the I/O bars once
    stopped it), with time by file, call and process, a tooltip naming the
    bytes, and the bandwidth over time in bins that widened to fit the run:
    2 s of reads at 1 MiB per 100 ms, then one 3 MiB write."""
    exe = _analyzer()
    t0 = 1.7e15
    evs = [{"id": 0, "name": "FH", "cat": "dftracer", "pid": 7, "tid": 7, "ph": "M",
            "args": {"name": "/data/train.bin", "value": "00000000000000aa"}},
           {"id": 1, "name": "FH", "cat": "dftracer", "pid": 7, "tid": 7, "ph": "M",
            "args": {"name": "/data/ckpt.pt", "value": "00000000000000bb"}}]
    for k in range(20):
        evs.append({"id": 2 + k, "name": "read", "cat": "POSIX", "pid": 7, "tid": 7, "ts": t0 + k * 1e5, "dur": 50,
                    "ph": "X", "args": {"fhash": "00000000000000aa", "fd": 3, "size": 1 << 20, "ret": 1 << 20}})
    evs.append({"id": 30, "name": "write", "cat": "POSIX", "pid": 8, "tid": 8, "ts": t0 + 2e6, "dur": 400, "ph": "X",
                "args": {"fhash": "00000000000000bb", "fd": 4, "size": 3 << 20, "ret": 3 << 20}})
    (tmp_path / "a.pfw").write_text("[\n" + "".join(json.dumps(e) + ",\n" for e in evs))
    html = tmp_path / "report.html"
    out = subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True,
                         text=True).stdout
    assert ("I/O: data 21 POSIX/STDIO calls, 1.400 ms (100.0% of the traced time); read 20.000 MiB in 20 calls, "
            "wrote 3.000 MiB in 1 (0 under 4096 B); most data I/O time: /data/train.bin 1.000 ms (20 calls)") in out, out
    dom = _rendered_dom(html, tmp_path)
    assert "undefined" not in dom.split('id="io-section"')[1]
    by_file = dom.split('id="io-by-file"')[1].split("</svg>")[0]
    assert by_file.count('class="bar"') == 2
    assert "/data/train.bin: 1.000 ms in 20 calls; read 20.000 MiB, wrote 0.000 MiB" in by_file
    assert dom.split('id="io-by-call"')[1].split("</svg>")[0].count('class="bar"') == 2
    assert dom.split('id="io-by-process"')[1].split("</svg>")[0].count('class="bar"') == 2
    # 2 s from the first read to the write at 1 ms x 2^k: 32 ms bins are the first to fit 120
    # (2000 / 16 = 125 bins would not); each 100 ms read lands alone in its bin, so 20 read
    # bars at 1 MiB / 32 ms = 31.250 MiB/s and one write bar of 3 MiB.
    bw = dom.split('id="io-bandwidth"')[1].split("</svg>")[0]
    assert "(32.000 ms bins)" in bw, bw[:400]
    assert bw.count('class="io-read"') == 20 and bw.count('class="io-write"') == 1
    assert "read 31.250 MiB/s (1.000 MiB)" in bw
    assert "write 93.750 MiB/s (3.000 MiB)" in bw
    bad = dom.split('id="bad-input-line"')[1].split("</table>")[0]
    assert "malformed lines" in bad  # the script ran past the I/O section
