"""Efficiency end to end: `calibrate` (here through dftracer.analyze.calibrate)
measures this machine's peaks and writes them beside the trace, and the
efficiency figures of a real compiled, matmul-heavy run read them back: the
top op by self time carries FLOPs and bytes and ran at a plausible fraction of
the roofline, in (0, 1.5]. The same rows come from `summary --efficiency`.
"""
import json
import math
import os
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import trace_files

import dftracer.analyze as da

if da._ext is None:
    pytest.skip(f"dftracer was built without the analyzer: {da._IMPORT_ERROR}", allow_module_level=True)

MATMUL_HEAVY = """
import os, torch
from dftracer.python import dftracer, dft_fn, dftracer_dynamo_backend
torch.manual_seed(0)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "mm"), None, -1)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step_fn = torch.compile(model, backend=dftracer_dynamo_backend)
x, y = torch.randn(256, 512), torch.randn(256, 512)
for step in range(4):
    with dft_fn("train", "train_step", step=step):
        loss = torch.nn.functional.mse_loss(step_fn(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
log.finalize()
"""


@pytest.fixture
def matmul_trace(run_python, trace_dir):
    run_python(MATMUL_HEAVY, env={"TRACE_DIR": trace_dir}, timeout=300)
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return files[0]


def test_calibrate_then_efficiency_of_a_compiled_matmul_model(matmul_trace, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # never the user's own cache
    trace_dir = os.path.dirname(matmul_trace)
    cal = da.calibrate(trace_dir, force=True)  # a shared test machine is often loaded
    path = os.path.join(trace_dir, "dftracer-calibration.json")
    assert os.path.isfile(path)
    with open(path) as f:
        stored = json.load(f)
    assert stored["peak_gflops"] == cal["peak_gflops"] > 0 and stored["peak_gbps"] == cal["peak_gbps"] > 0

    df = da.efficiency(matmul_trace)
    assert df.attrs["calibration"]["path"] == path
    assert (df["flops"] > 0).any() and not ((df["flops"] == 0) & (df["bytes"] == 0)).any()  # no views
    top = df.iloc[0]  # by self time: a matmul of the 256 x 512 x 1024 layers
    assert top["name"] in ("function.mm.default", "function.addmm.default"), df.head()
    assert top["flops"] > 0 and top["bytes"] > 0
    assert math.isclose(top["ai"], top["flops"] / top["bytes"])
    assert math.isclose(top["attainable_gflops"], min(cal["peak_gflops"], top["ai"] * cal["peak_gbps"]))
    assert 0 < top["peak_frac"] <= 1.5, (top.to_dict(), cal)
    assert math.isclose(top["peak_frac"], top["gflops"] / top["attainable_gflops"])

    # The same numbers from the command line, and per module.
    out = subprocess.run([analyzer_exe(), "summary", "--efficiency", "--format", "json", matmul_trace],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)["rows"]
    assert rows[0]["name"] == top["name"] and math.isclose(rows[0]["peak_frac"], top["peak_frac"])
    by_module = da.efficiency(matmul_trace, by="module")
    # Sequential's two Linear layers: named_modules() paths "0" and "2"
    linear = by_module[by_module["module"].str.split(".").str[-1].isin(["0", "2"])]
    assert len(linear) == 2 and (linear["flops"] > 0).all() and (linear["peak_frac"] > 0).all(), by_module


def test_efficiency_without_a_calibration_has_rates_but_no_fraction(matmul_trace, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    df = da.efficiency(matmul_trace, top=3)
    assert len(df) == 3 and df.attrs["calibration"] is None
    assert (df["gflops"].dropna() > 0).all() and (df["gbps"] > 0).all() and df["peak_frac"].isna().all()
    with pytest.raises(OSError, match="nope.json"):
        da.efficiency(matmul_trace, calibration=tmp_path / "nope.json")
