"""`dftracer-analyze report` opened in headless Chromium renders its charts,
and `merge` output is strict JSON for Python's own parser.

The command is found through $DFTRACER_ANALYZE_BIN, beside this interpreter or on
PATH (the wheel installs it), or in a CMake build directory of this checkout.
"""
import html as html_lib
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


def _rendered_dom(html, tmp_path, view=None):
    """The page's DOM after its script ran in headless Chromium (`view`: the
    charts' view the URL asks for, #view=whole or #view=steady)."""
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", html.as_uri() + (f"#view={view}" if view else "")],
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
    assert labels == ["function.mm"]  # the region has its own chart
    assert "600.000 us self, 600.000 us total" in top_ops
    regions = dom.split('id="regions"')[1].split("</svg>")[0]
    assert "train_step: 400.000 us self, 1.000 ms total" in regions
    assert "1.000 ms traced" in dom


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_shows_steps_as_stacked_bars(tmp_path):
    """Three train_step regions back to back on the main thread: one stacked bar
    per step (its wall time split by category), the first step's compile share,
    and the first step (compiling, 2.5x the others) marked as an outlier."""
    exe = _analyzer()
    evs = [{"name": "dynamo.trace", "cat": "compile", "pid": 1, "tid": 1, "ts": 0, "dur": 500, "ph": "X"}]
    for start in (0, 1000, 1400):
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
    assert "3 steps; first step: compile 50.0% of its wall time" in section
    assert ">1.000 ms<" in section and ">400.000 us<" in section


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
    assert out.startswith("Hottest ops by self time: mm 37.5% of the traced time (750.000 us, 3 events)"), out
    dom = _rendered_dom(html, tmp_path)
    answer = re.findall(r"<li>([^<]*)</li>", dom.split('id="answer-lines"')[1].split("</ul>")[0])
    assert answer == out.splitlines()
    assert answer[0].startswith("Hottest ops by self time: mm 37.5%")
    assert answer[1] == "Top modules by self time: model.fc 67.5%"
    # wall time: 500 us of compile in the run's 3.5 ms; step 0 reaches step 1's start (2 ms)
    assert answer[2].startswith("Compile vs run (wall time): compile 14.3% (500.000 us of 3.500 ms), run 85.7%"), \
        answer[2]
    assert answer[3].startswith("Steps: 3; the first 2.000 ms, compile 25.0% of its wall time"), answer[3]
    # The order: the answer's sections first, then the rest.
    order = ['id="answer-lines"', 'id="top-ops"', 'id="by-module"', 'id="by-category"', 'id="steps-section"',
             'id="module-icicle"', 'id="roofline"', 'id="step-timeline"', 'id="timeline"', 'id="bad-input"']
    at = [dom.index(marker) for marker in order]
    assert at == sorted(at), list(zip(order, at))
    assert dom.index("Hottest ops") < dom.index('id="module-icicle"')
    top_ops = dom.split('id="top-ops"')[1].split("</svg>")[0]
    assert re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', top_ops)[0] == "mm"
    compile_bar = dom.split('id="by-category"')[1].split("</svg>")[0]
    assert "compile: 500.000 us of wall time" in compile_bar
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


def _model_trace(path):
    """One process: a 5 ms compile, then three 3 ms train_step regions, each holding a
    graph.forward call (1 ms: function.mm.default of model.fc 600 us, function.add.Tensor
    of no module 100 us), optimizer.step (850 us), DataLoader.next (400 us, a 100 us read
    in it). Self time per step: mm 600, add 100, the graph call 300, optimizer.step 850,
    the DataLoader region 300 and its read 100, train_step 750."""
    evs = [{"name": "dynamo.trace", "cat": "compile", "pid": 1, "tid": 1, "ts": 0, "dur": 5000, "ph": "X"}]
    for s in (10000, 20000, 30000):
        evs += [
            {"name": "function.mm.default", "cat": "dynamo", "ts": s + 150, "dur": 600,
             "args": {"phase": "forward", "module": "model.fc"}},
            {"name": "function.add.Tensor", "cat": "dynamo", "ts": s + 800, "dur": 100, "args": {"phase": "forward"}},
            {"name": "graph.forward", "cat": "dynamo", "ts": s + 100, "dur": 1000, "args": {"phase": "forward"}},
            {"name": "optimizer.step", "cat": "app", "ts": s + 1200, "dur": 850},
            {"name": "read", "cat": "POSIX", "ts": s + 2200, "dur": 100, "args": {"size": 4096, "ret": 4096}},
            {"name": "DataLoader.next", "cat": "dataloader", "ts": s + 2100, "dur": 400},
            {"name": "train_step", "cat": "app", "ts": s, "dur": 3000},
        ]
    for e in evs:
        e.update(pid=1, tid=1, ph="X")
    path.write_text("".join(json.dumps(e) + "\n" for e in evs))


def _labels(dom, chart):
    svg = dom.split(f'id="{chart}"')[1].split("</svg>")[0]
    return re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', svg), svg


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_leads_with_the_models_ops_and_splits_time_without_a_module(tmp_path):
    """The compile phase (5 ms) and the regions (2.55 and 2.25 ms) have more self time than
    the hottest op (mm, 1.8 ms): the answer and the first chart still name the ops;
    compile work and regions get their own charts; the time of events without a module
    is split by what it is, each part its own bar."""
    exe = _analyzer()
    _model_trace(tmp_path / "a.pfw")
    html = tmp_path / "report.html"
    out = subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True,
                         text=True).stdout
    first = out.splitlines()[0]
    assert first.startswith("Hottest ops by self time: function.mm.default "), out
    assert "function.add.Tensor" in first and "dynamo.trace" not in first and "train_step" not in first, first
    assert out.splitlines()[1] == "Top modules by self time: model.fc 12.9%", out  # 1.8 of 14 ms
    dom = _rendered_dom(html, tmp_path, view="whole")  # the charts below are the whole run's
    ops, _ = _labels(dom, "top-ops")
    assert ops == ["function.mm.default", "function.add.Tensor"]
    modules, _ = _labels(dom, "by-module")
    assert modules == ["model.fc"]
    compile_work, _ = _labels(dom, "compile-phases")
    assert compile_work == ["dynamo.trace"]
    regions, _ = _labels(dom, "regions")
    assert regions == ["optimizer.step", "train_step", "DataLoader.next", "graph.forward"]  # ties by name
    parts, svg = _labels(dom, "no-module")
    assert parts == ["(no module: compile)", "(no module: optimizer)", "(no module: between graphs)",
                     "(no module: data loading)", "(no module: graph calls, between their ops)",
                     "(no module: outside any module)"], parts
    for label, self_time in [("compile", "5.000 ms"), ("optimizer", "2.550 ms"), ("between graphs", "2.250 ms"),
                             ("data loading", "1.200 ms"), ("graph calls, between their ops", "900.000 us"),
                             ("outside any module", "300.000 us")]:
        assert f"(no module: {label}): {self_time} self" in svg, (label, svg)
    assert "(none)" not in svg
    # The order: the model's work, then compile, then the regions.
    at = [dom.index(f'id="{c}"') for c in ("top-ops", "by-module", "no-module", "compile-phases", "regions")]
    assert at == sorted(at)


def test_report_steps_median_is_the_mean_of_the_two_middle_steps(tmp_path):
    """Steps of 1000, 556 and 57 us back to back: the steps after the first have a
    median of 306.5 us (the mean of the two), not the upper one (556 us)."""
    exe = _analyzer()
    evs = []
    for start, dur in ((0, 1000), (1000, 556), (1556, 57)):
        evs.append({"name": "mm", "cat": "op", "pid": 1, "tid": 1, "ts": start, "dur": dur // 2, "ph": "X",
                    "args": {"phase": "forward"}})
        evs.append({"name": "train_step", "cat": "app", "pid": 1, "tid": 1, "ts": start, "dur": dur, "ph": "X"})
    (tmp_path / "a.pfw").write_text("".join(json.dumps(e) + "\n" for e in evs))
    out = subprocess.run([exe, "report", "-o", str(tmp_path / "r.html"), str(tmp_path / "a.pfw")], check=True,
                         capture_output=True, text=True).stdout
    steps = [line for line in out.splitlines() if line.startswith("Steps:")]
    assert steps and "the others 306.500 us (median)" in steps[0], out


# Appended to the page: the boxes (getBoundingClientRect) of the charts' texts,
# dots and bars, as JSON in a <pre> the DOM dump keeps.
_BOXES = """<script>
(function(){
  function boxes(sel){ return [].map.call(document.querySelectorAll(sel), function(e){
    var r=e.getBoundingClientRect(); return [e.textContent, r.left, r.top, r.right, r.bottom, e.getAttribute("class")]; }); }
  var pre=document.createElement("pre"); pre.id="boxes";
  pre.textContent=JSON.stringify({roof_text: boxes("#roofline svg text"), roof_dots: boxes("#roofline circle"),
                                  io_text: boxes("#io-bandwidth svg text"), io_bars: boxes("#io-bandwidth rect")});
  document.body.appendChild(pre);
})();
</script></body>"""


def _overlap(a, b, slack=0.5):
    return a[1] + slack < b[3] and b[1] + slack < a[3] and a[2] + slack < b[4] and b[2] + slack < a[4]


def _chart_boxes(tmp_path, evs):
    """The report of `evs` rendered in headless Chromium, with _BOXES's boxes."""
    exe = _analyzer()
    (tmp_path / "a.pfw").write_text("".join(json.dumps(e) + "\n" for e in evs))
    html = tmp_path / "report.html"
    subprocess.run([exe, "report", "-o", str(html), str(tmp_path / "a.pfw")], check=True, capture_output=True)
    page = tmp_path / "boxes.html"
    page.write_text(html.read_text().replace("</body>", _BOXES))
    dom = _rendered_dom(page, tmp_path)
    return json.loads(html_lib.unescape(dom.split('<pre id="boxes">')[1].split("</pre>")[0])), dom


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_roofline_labels_do_not_overlap(tmp_path):
    """30 ops at nearly the same FLOP/B and GFLOP/s: the roofline's labels overlap no
    other text and no other dot; the ops left without one are listed under it."""
    evs = [{"name": f"function.op{k:02d}.default", "cat": "dynamo", "pid": 1, "tid": 1, "ts": 1000 * k,
            "dur": 300 + 10 * k, "ph": "X",
            "args": {"phase": "forward", "module": "m", "flops": 1000000 + 30000 * k, "bytes": 100000}}
           for k in range(30)]
    boxes, dom = _chart_boxes(tmp_path, evs)
    texts = boxes["roof_text"]
    labels = [t for t in texts if re.match(r"(function\.)?op\d\d", t[0])]
    assert labels, texts  # the ops with the most self time are labelled
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not _overlap(a, b), (a, b)
    for a in labels:
        for d in boxes["roof_dots"]:
            assert not _overlap(a, [d[0], d[1] + 2, d[2] + 2, d[3] - 2, d[4] - 2]), (a, d)
    note = dom.split('id="roofline-unlabelled"')[1].split("</p>")[0]
    assert "Not labelled" in note and "18 more" in note, note


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_io_bandwidth_scale_is_clear_of_the_bars(tmp_path):
    """The tallest I/O bandwidth bar is the first: the chart's top value stays
    readable, clear of every bar."""
    evs = [{"name": "read", "cat": "POSIX", "pid": 1, "tid": 1, "ts": k * 1e5, "dur": 50, "ph": "X",
            "args": {"size": (64 if k == 0 else 1) << 20, "ret": (64 if k == 0 else 1) << 20}} for k in range(12)]
    boxes, _ = _chart_boxes(tmp_path, evs)
    top = [t for t in boxes["io_text"] if t[0].endswith("MiB/s")]
    assert len(top) == 1, boxes["io_text"]
    assert boxes["io_bars"]
    for b in boxes["io_bars"]:
        assert not _overlap(top[0], b), (top[0], b)


def _table_rows(dom, table_id):
    """The header and the body rows (cell texts) of the rendered table `table_id`."""
    table = dom.split(f'id="{table_id}"')[1].split("</table>")[0]
    cells = lambda row, tag: [html_lib.unescape(re.sub(r"<[^>]*>", "", c))  # noqa: E731
                              for c in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", row, re.S)]
    head = cells(table.split("</thead>")[0], "th")
    body = [cells(r, "td") for r in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)]
    return head, body


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_device_steps_show_their_labels(tmp_path):
    """The device section's per-step table names each step as `device --by step` does
    (its label column: ProfilerStep#N of a Kineto trace), beside the step number."""
    from analyzer_cli import ROOT

    trace = os.path.join(ROOT, "tests", "data", "kineto", "nccl_data.json.gz")
    p = subprocess.run([_analyzer(), "device", "--no-progress", "--by", "step", "--format", "csv", trace],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import csv
    import io
    want = [(r["step"], r["label"]) for r in csv.DictReader(io.StringIO(p.stdout))]
    assert want and all(label for _, label in want), want
    page = tmp_path / "r.html"
    p = subprocess.run([_analyzer(), "report", "--no-progress", "-o", str(page), trace], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    head, body = _table_rows(_rendered_dom(page, tmp_path), "device-steps")
    assert head[:2] == ["step", "label"], head
    assert [(r[0], r[1]) for r in body] == want
    assert all(len(r) == len(head) for r in body), (head, body)


def _steps_trace(path, steps=4):
    """A training loop of `steps` repeated `train_step` regions, its ops inside;
    the first step also runs a slow warm-up op (its first call)."""
    lines = ["["]
    i = 0
    for s in range(steps):
        t0 = 1.7e15 + s * 2000.0
        evs = [("train_step", "python", t0, 1500.0)]
        if s == 0:
            evs.append(("aten::warmup_", "aten", t0 + 10, 800.0))
        evs += [("aten::mm", "aten", t0 + 900, 300.0), ("aten::add", "aten", t0 + 1250, 50.0 + s)]
        for name, cat, ts, dur in evs:
            i += 1
            lines.append(json.dumps({"id": i, "name": name, "cat": cat, "pid": 10, "tid": 10, "ts": ts, "dur": dur,
                                     "ph": "X", "args": {"phase": "forward"} if cat == "aten" else {}}) + ",")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _page_data(page):
    m = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page.read_text(), re.S)
    return json.loads(m.group(1))


def _dom_at(uri, tmp_path, name):
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         f"--user-data-dir={tmp_path / name}", "--dump-dom", uri], capture_output=True, text=True, timeout=120)
    assert 'data-rendered="yes"' in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium package is not installed")
def test_report_opens_on_the_steady_state_and_the_whole_run_is_one_choice_away(tmp_path):
    exe = _analyzer()
    trace = tmp_path / "steps.pfw"
    _steps_trace(trace)
    page = tmp_path / "report.html"
    out = subprocess.run([exe, "report", str(trace), "-o", str(page)], capture_output=True, text=True, check=True)
    assert "Steady state (every step but the first: 3 steps" in out.stdout, out.stdout
    data = _page_data(page)
    steady = {r[0]: r[2] for r in data["steady"]["top_ops"]}
    whole = {r[0]: r[2] for r in data["top_ops"]}
    # The steady state is `summary --steps 1:`'s; the whole run `summary`'s.
    for args, want_rows in ((["--steps", "1:"], steady), ([], whole)):
        doc = json.loads(subprocess.run([exe, "summary", str(trace), *args, "--format", "json"], capture_output=True,
                                        text=True, check=True).stdout)
        ops = {r["name"]: r["self_us"] for r in doc["rows"] if r["name"].startswith("aten::")}
        assert want_rows == ops, (args, want_rows, ops)
    assert "aten::warmup_" in whole and "aten::warmup_" not in steady

    def first_bar(dom):
        m = re.search(r'id="top-ops".*?<title>([^<]*)</title>', dom, re.S)
        return html_lib.unescape(m.group(1))

    dom = _dom_at(page.as_uri(), tmp_path, "p1")  # the steady state first
    assert 'data-view="steady"' in dom
    assert 'id="view-choice" hidden' not in dom
    assert first_bar(dom).startswith("aten::mm: 900.000 us self")  # 3 steps x 300 us
    assert "steady state" in dom and "aten::warmup_" not in dom.split('id="top-ops"')[1].split("</svg>")[0]
    dom = _dom_at(page.as_uri() + "#view=whole", tmp_path, "p2")
    assert 'data-view="whole"' in dom
    assert first_bar(dom).startswith("aten::mm: 1.200 ms self")
    assert "aten::warmup_" in dom.split('id="top-ops"')[1].split("</svg>")[0]

    # A report of a chosen range, or of a trace without steps, has no choice to make.
    for args, src in ((["--steps", "1:"], trace), ([], None)):
        if src is None:
            src = tmp_path / "nosteps.pfw"
            _write_trace(src)
        p = tmp_path / f"plain{len(args)}.html"
        subprocess.run([exe, "report", str(src), *args, "-o", str(p)], capture_output=True, check=True)
        assert "steady" not in _page_data(p)
        dom = _dom_at(p.as_uri(), tmp_path, f"p{len(args)}x")
        assert 'data-view="whole"' in dom and 'id="view-choice" hidden' in dom


def _marks_trace(path, steps=4):
    """A loop as examples/python/transformer.py writes it: each iteration's step
    mark (update(step=...)) 100 us before its `train_step` region, which bounds
    the steps; the first step compiles."""
    lines = ["["]
    i = 0
    for s in range(steps):
        t0 = 1.7e15 + s * 2000.0
        for ev in ({"name": "step", "cat": "dftracer", "ph": "i", "ts": t0, "args": {"step": s}},
                   {"name": "train_step", "cat": "python", "ph": "X", "ts": t0 + 100, "dur": 1500.0},
                   {"name": "dynamo.trace", "cat": "compile", "ph": "X", "ts": t0 + 110, "dur": 600.0 if s == 0 else 0},
                   {"name": "aten::mm", "cat": "aten", "ph": "X", "ts": t0 + 800, "dur": 500.0 + s,
                    "args": {"phase": "forward"}}):
            if ev.get("dur") == 0:
                continue
            i += 1
            lines.append(json.dumps({"id": i, "pid": 10, "tid": 10, **ev}) + ",")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def test_report_of_a_step_range_counts_the_chosen_steps(tmp_path):
    """`report --steps` finds the steps where the whole input does, then keeps the
    chosen ones: a step whose mark lies just before its span is not lost."""
    exe = _analyzer()
    trace = tmp_path / "marks.pfw"
    _marks_trace(trace)
    doc = json.loads(subprocess.run([exe, "summary", str(trace), "--by", "step", "--format", "json"],
                                    capture_output=True, text=True, check=True).stdout)
    assert len(doc["steps"]) == 4, doc["processes"]
    for rng, want in (("0:", "Steps: 4;"), ("1:", "Steps: 3;"), ("1:3", "Steps: 2;")):
        out = subprocess.run([exe, "report", str(trace), "--steps", rng, "-o", str(tmp_path / "r.html")],
                             capture_output=True, text=True, check=True).stdout
        line = next(ln for ln in out.splitlines() if ln.startswith("Steps:"))
        assert line.startswith(want), (rng, line)
        rows = _page_data(tmp_path / "r.html")["steps"]["rows"]
        assert len(rows) == int(want.split()[1][:-1]), (rng, rows)
