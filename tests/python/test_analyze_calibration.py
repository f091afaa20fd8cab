"""`calibrate` against the machine's best kernels, a loaded machine, and efficiency
above 100 %: the peaks are at least what torch's own mm reaches here and now (measured
by this test), the N-thread peak is never below the 1-thread one, a Python without
torch still calibrates (our kernels, saying why torch was not measured), a load above
the CPUs calibrate leaves free (a fake /proc/loadavg) is warned about, measured again
and refused unless --force, and a group above its roof is flagged, never printed as a
plain figure (summary --efficiency table/json/csv, da.efficiency, the report's roofline).
"""
import json
import os
import re
import stat
import subprocess
import sys
import time

import pytest
from analyzer_cli import analyzer


def _calibrate(tmp_path, *args, env=None, check=True):
    out = tmp_path / "cal.json"
    full_env = {**os.environ, "DFTRACER_PYTHON": sys.executable, **(env or {})}
    r = subprocess.run([analyzer(), "calibrate", "-o", str(out), *args], capture_output=True, text=True,
                       env=full_env, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
        return r, json.loads(out.read_text())
    return r, (json.loads(out.read_text()) if out.exists() else None)


def _best_torch_mm(threads):
    """The best float32 torch.mm GFLOP/s at `threads`, over the sizes calibrate uses."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    best = 0.0
    try:
        with torch.no_grad():
            for n in (512, 1024, 2048):
                a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
                torch.mm(a, b, out=c)
                for _ in range(3):
                    t0 = time.perf_counter()
                    torch.mm(a, b, out=c)
                    best = max(best, 2.0 * n ** 3 / (time.perf_counter() - t0) * 1e-9)
    finally:
        torch.set_num_threads(old)
    return best


def test_peaks_reach_torch_mm_and_n_threads_never_below_one(tmp_path):
    pytest.importorskip("torch")
    import torch

    # --force: a shared test machine is often loaded; the comparison below is made
    # at the same time, so it holds either way.
    r, cal = _calibrate(tmp_path, "--force")
    threads = cal["threads"]
    kernels = {(f["kernel"].split(" ")[0], f["threads"]) for f in cal["figures"]}
    assert ("torch.mm", 1) in kernels and ("torch.mm", threads) in kernels, cal["figures"]
    assert any(f["kernel"].startswith("torch conv2d") for f in cal["figures"])
    assert any(f["kernel"].startswith("torch add") and f["gbps"] > 0 for f in cal["figures"])
    assert cal["torch"] == torch.__version__ and "torch " + torch.__version__ in r.stdout
    # Which kernel gave each peak is recorded, and it is one of the figures at its value.
    for peak, unit, kernel in (("peak_gflops", "gflops", "peak_gflops_kernel"), ("peak_gbps", "gbps", "peak_gbps_kernel")):
        best = max(f.get(unit, 0) for f in cal["figures"])
        assert cal[peak] == pytest.approx(best) and cal[kernel], cal
        # The N-thread peak is never below the 1-thread figure.
    assert cal["peak_gflops"] >= cal["gflops_1thread"] > 0 and cal["peak_gbps"] >= cal["gbps_1thread"] > 0, cal
    # At least what torch's own mm reaches here, now (0.8: timing noise on a shared machine).
    # Another job taking a core during calibrate's N-thread run but not during ours halves
    # its figure, so a miss is measured again, both sides, up to three times: a calibrate
    # that under-reports (a wrong FLOP count, a peak taken from the wrong kernel) misses
    # every time.
    tries = []
    for attempt in range(3):
        if attempt:
            _, cal = _calibrate(tmp_path, "--force")
        torch_best = max(_best_torch_mm(1), _best_torch_mm(threads))
        tries.append((cal["peak_gflops"], torch_best))
        if cal["peak_gflops"] >= 0.8 * torch_best:
            break
    else:
        pytest.fail(f"calibrate's peak below 0.8x torch.mm in 3 tries (peak, torch): {tries}; {cal['figures']}")


def test_without_torch_our_kernels_alone_and_why(tmp_path):
    # A Python that cannot import torch: -S leaves site-packages out.
    py = tmp_path / "python-without-torch"
    py.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    r, cal = _calibrate(tmp_path, "--force", "--threads", "1", env={"DFTRACER_PYTHON": str(py)})
    assert cal["torch"] is None and "cannot import torch" in cal["torch_note"], cal
    assert cal["figures"] and all(f["kernel"].startswith("dftracer") for f in cal["figures"]), cal["figures"]
    assert cal["peak_gflops"] > 0 and cal["peak_gbps"] > 0
    assert "torch not measured" in r.stdout and "cannot import torch" in r.stdout, r.stdout
    # An interpreter that is not there: the same, naming it.
    r, cal = _calibrate(tmp_path, "--force", "--threads", "1", env={"DFTRACER_PYTHON": str(tmp_path / "no-python")})
    assert cal["torch"] is None and str(tmp_path / "no-python") in cal["torch_note"], cal["torch_note"]
    # --no-torch: our kernels only, and the file says it was asked for.
    r, cal = _calibrate(tmp_path, "--force", "--no-torch", "--threads", "1")
    assert cal["torch"] is None and "--no-torch" in cal["torch_note"]


def _fake_loadavg(tmp_path, runnable):
    f = tmp_path / "loadavg"
    f.write_text(f"{runnable}.00 3.00 2.00 {runnable + 1}/400 12345\n")
    return str(f)


def test_a_loaded_machine_is_measured_again_then_refused_unless_forced(tmp_path):
    env = {"DFTRACER_LOADAVG": _fake_loadavg(tmp_path, 64)}
    r, cal = _calibrate(tmp_path, "--no-torch", "--threads", "1", env=env, check=False)
    assert r.returncode == 2 and cal is None, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert sum("measuring again" in ln for ln in lines) == 2, r.stderr
    assert lines[-1].startswith("dftracer-analyze: error: calibrate: the machine is loaded: 64.0 other runnable"), lines
    assert "--force" in lines[-1]
    r, cal = _calibrate(tmp_path, "--no-torch", "--threads", "1", "--force", env=env)
    assert cal["loaded"] is True and cal["load"]["other_runnable"] == 64 and cal["peak_gflops"] > 0, cal
    assert 'marked "loaded"' in r.stdout
    # The efficiency output says where its peaks came from.
    trace = tmp_path / "t.pfw"
    trace.write_text(json.dumps(_mm_event(1e6, 1e5, 250)) + "\n")
    out = subprocess.run([analyzer(), "summary", "--efficiency", "--calibration", str(tmp_path / "cal.json"),
                          str(trace)], capture_output=True, text=True, check=True).stdout
    assert "while it was loaded" in out, out


def _mm_event(flops, nbytes, dur, ts=0):
    return {"name": "mm", "cat": "op", "pid": 1, "tid": 1, "ts": ts, "dur": dur, "ph": "X",
            "args": {"phase": "forward", "module": "model.fc", "flops": flops, "bytes": nbytes}}


def test_efficiency_above_the_peak_is_flagged_not_printed_as_fact(tmp_path):
    # mm: 1e6 FLOPs in 250 us = 4 GFLOP/s at 10 FLOP/B, against a 1 GFLOP/s roof: 400 %.
    trace = tmp_path / "t.pfw"
    trace.write_text("".join(json.dumps(_mm_event(1e6, 1e5, 250, ts)) + "\n" for ts in (0, 1000)))
    (tmp_path / "dftracer-calibration.json").write_text(json.dumps({"peak_gflops": 1.0, "peak_gbps": 10.0}))
    exe = analyzer()

    def run(*args):
        return subprocess.run([exe, "summary", "--efficiency", *args, str(trace)], capture_output=True, text=True,
                              check=True)

    table = run().stdout
    assert "400.0%!" in table and "400.0% " not in table, table
    assert "1 group ! above 100 % of the peak" in table and "calibration is too low" in table, table
    doc = json.loads(run("--format", "json").stdout)
    assert doc["rows"][0]["above_peak"] is True and doc["rows"][0]["peak_frac"] == pytest.approx(4.0)
    assert "calibration is too low" in doc["above_peak"]
    csv = run("--format", "csv")
    header, row = csv.stdout.splitlines()[:2]
    assert row.split(",")[header.split(",").index("above_peak")] == "true", csv.stdout
    assert "calibration is too low" in csv.stderr
    # Below the peak: not flagged.
    (tmp_path / "dftracer-calibration.json").write_text(json.dumps({"peak_gflops": 100.0, "peak_gbps": 10.0}))
    doc = json.loads(run("--format", "json").stdout)
    assert doc["rows"][0]["above_peak"] is False and doc["above_peak"] is None
    assert "!" not in run().stdout


def test_python_efficiency_warns_above_the_peak(tmp_path):
    import dftracer.analyze as da

    if da._ext is None:
        pytest.skip("dftracer was built without the analyzer")
    trace = tmp_path / "t.pfw"
    trace.write_text(json.dumps(_mm_event(1e6, 1e5, 250)) + "\n")
    (tmp_path / "dftracer-calibration.json").write_text(json.dumps({"peak_gflops": 1.0, "peak_gbps": 10.0}))
    if "above_peak" not in da._module().EFFICIENCY_COLUMNS:
        pytest.skip("the installed dftracer.analyze is older than this checkout (no above_peak)")
    with pytest.warns(UserWarning, match="calibration is too low"):
        df = da.efficiency(str(trace))
    assert bool(df["above_peak"].iloc[0]) and "above_peak" in df.attrs


def test_report_roofline_flags_points_above_their_roof(tmp_path):
    trace = tmp_path / "t.pfw"
    trace.write_text(json.dumps(_mm_event(1e6, 1e5, 250)) + "\n")
    (tmp_path / "dftracer-calibration.json").write_text(json.dumps({"peak_gflops": 1.0, "peak_gbps": 10.0}))
    html = tmp_path / "r.html"
    subprocess.run([analyzer(), "report", "-o", str(html), str(trace)], capture_output=True, check=True)
    data = re.search(r'<script[^>]*id="report-data"[^>]*>(.*?)</script>', html.read_text(), re.S).group(1)
    roof = json.loads(data)["roofline"]
    assert roof["points"][0][0] == "mm" and roof["points"][0][6] is True, roof
    assert "calibration is too low" in roof["above_peak"], roof
