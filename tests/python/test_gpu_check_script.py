"""scripts/gpu_check.py's own code, on the CPU (--cpu): every check's workload,
tracing, analysis and comparison runs through to its result line, so a typo, a
renamed dftracer or torch API, or an analyzer JSON key the script reads that
no longer exists fails here and not in the scarce GPU time of
scripts/gpu_check.sh. The device figures are 0 on the CPU; what the checks
assert about them only a GPU run shows."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from analyzer_cli import analyzer

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "gpu_check.py")


def _script_checks():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports nothing beyond the standard library
    return mod.CHECKS


CHECKS = _script_checks()


def _env():
    return {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}


def test_every_check_runs_to_its_result_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, SCRIPT, "--cpu", "--analyze", analyzer(), "--out", str(out)],
                       capture_output=True, text=True, timeout=900, env=_env(), cwd=tmp_path)
    results = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith('{"check"')]
    assert [r["check"] for r in results] == CHECKS, p.stdout + p.stderr
    failed = [r for r in results if not r["ok"]]
    assert not failed, "\n".join(f"{r['check']}: {r['detail']}" for r in failed)
    assert p.returncode == 0, p.stderr
    # The driver's summary file, as gpu_check.sh leaves it.
    assert [r["check"] for r in json.loads((out / "results.json").read_text())] == CHECKS
    details = {r["check"]: r["detail"] for r in results}
    assert "died of SIGTERM; trace complete" in details["sigterm"], details["sigterm"]
    assert "torch.profiler" in details["overhead"], details["overhead"]


def test_an_unknown_check_is_one_clear_error(tmp_path):
    p = subprocess.run([sys.executable, SCRIPT, "--cpu", "--analyze", analyzer(), "--out", str(tmp_path),
                        "--only", "eagr"], capture_output=True, text=True, timeout=120, env=_env())
    assert p.returncode == 2
    assert "no check named eagr" in p.stderr, p.stderr
    assert p.stdout == ""
