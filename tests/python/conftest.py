"""Shared pytest fixtures for the Python tests: a temporary trace directory
and a helper that runs a Python snippet in a fresh interpreter.

Tracing state is per process (DFTRACER_* is read once, at import), so tests
that need a given environment run their code in a subprocess.
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

# A shell without job control (`cmd &` in a script, nohup) starts its
# background jobs with SIGINT ignored, an ignored signal stays ignored across
# exec, and CPython then installs no KeyboardInterrupt handler: the tests that
# send a child SIGINT would wait for nothing. Handled here, the children
# start with the default again.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

sys.path.insert(0, os.path.dirname(__file__))  # trace_reader.py


@pytest.fixture
def trace_dir(tmp_path):
    """An empty directory for trace files."""
    d = tmp_path / "traces"
    d.mkdir()
    return str(d)


def _clean_env():
    """The current environment without any DFTRACER_* variable."""
    return {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}


def run_python_in(cwd, code, env=None, timeout=120, check=True):
    """Runs `code` (dedented) with this interpreter in `cwd`, with the
    DFTRACER_* variables of the test process removed, DFTRACER_ENABLE=1 (as
    a pydftracer user switches tracing on: initialize_log() traces only with
    it) and `env` added; a value None in `env` removes that variable. Fails
    the test with the child's output when it exits non-zero."""
    full_env = _clean_env()
    full_env["DFTRACER_ENABLE"] = "1"
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    script = os.path.join(str(cwd), "snippet.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(code))
    proc = subprocess.run([sys.executable, script], cwd=str(cwd), env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"snippet exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n"
                    f"--- stderr\n{proc.stderr}")
    return proc


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, env=None, timeout=120) -> CompletedProcess: run_python_in(tmp_path, ...)."""
    def run(code, env=None, timeout=120, check=True):
        return run_python_in(tmp_path, code, env, timeout, check)
    return run
