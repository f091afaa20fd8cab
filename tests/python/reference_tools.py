"""Where the reference DFTracer tools live: a venv holding pydftracer 2.0.6,
dftracer 2.2.0 and dftracer-utils 0.0.14 from PyPI, which scripts/setup.sh
(run by scripts/test.sh) creates as .venv-ref in the repository root.
$DFTRACER_REFERENCE_VENV names another one. They import as `dftracer` too,
so they are never installed into the project's environment.

A test that needs them and finds them absent skips with SKIP_REASON, one line
naming the command that creates them."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.environ.get("DFTRACER_REFERENCE_VENV") or os.path.join(ROOT, ".venv-ref")
BIN = os.path.join(VENV, "bin")
PYTHON = os.path.join(BIN, "python")
TOOLS = ("dftracer_validate", "dftracer_event_count", "dftracer_info", "dftracer_stats", "dftracer_view")
DATA = os.path.join(ROOT, "tests", "data")


def have_python():
    return os.access(PYTHON, os.X_OK)


def have_tools():
    return all(os.access(os.path.join(BIN, t), os.X_OK) for t in TOOLS)


SKIP_REASON = f"reference DFTracer tools absent from {VENV} (scripts/setup.sh creates them)"


def clean_env(**extra):
    """This environment without DFTRACER_* variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(extra)
    return env


def run_pydftracer(script, *args, cwd, env=None, timeout=120):
    """Runs `script` (a path) with the reference venv's Python (pydftracer 2.0.6 on
    dftracer 2.2.0); returns the CompletedProcess, failing on a non-zero exit."""
    proc = subprocess.run([PYTHON, script, *args], cwd=str(cwd), env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script}: rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


# tests/data/dftracer-2.2-pydftracer.py (2 "epoch" events of 3 "step" events
# each, plus DFTracer's own "start" and "end") under each DFTracer mode:
GEN = os.path.join(DATA, "dftracer-2.2-pydftracer.py")
MODES = {
    "us": {},
    # integer nanoseconds, the file's metadata line
    # {"name":"CM",...,"args":{"name":"time_metric","value":"NS"}} saying so
    "ns": {"DFTRACER_TIME_METRIC": "NS"},
    # "ph":3 rows, each standing for args.dft_cnt events of one interval, with
    # args.dur (one event) or args.dur_sum/dur_min/dur_max; a 1 ms interval:
    # the rows of one run fall into several intervals
    "aggregated": {"DFTRACER_ENABLE_AGGREGATION": "1", "DFTRACER_TRACE_INTERVAL_MS": "1"},
    "aggregated-ns": {"DFTRACER_ENABLE_AGGREGATION": "1", "DFTRACER_TRACE_INTERVAL_MS": "1",
                      "DFTRACER_TIME_METRIC": "NS"},
}


def dftracer_trace(work, mode):
    """Path of the .pfw.gz that pydftracer writes running GEN in `mode` (MODES) in `work`."""
    run_pydftracer(GEN, str(work / mode), cwd=work,
                   env=clean_env(DFTRACER_ENABLE="1", DFTRACER_INC_METADATA="1", **MODES[mode]))
    files = [str(work / n) for n in os.listdir(work) if n.startswith(mode + "-") and n.endswith(".pfw.gz")]
    assert len(files) == 1, files
    return files[0]
