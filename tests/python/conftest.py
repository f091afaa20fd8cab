"""Shared pytest fixtures for the Python tests: a temporary trace directory
and a helper that runs a Python snippet in a fresh interpreter.

Tracing state is per process (DFTRACER_* is read once, at import), so tests
that need a given environment run their code in a subprocess.
"""
import os
import subprocess
import sys
import textwrap

import pytest

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


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, env=None, timeout=120) -> CompletedProcess.

    Runs `code` (dedented) with this interpreter in `tmp_path`, with the
    DFTRACER_* variables of the test process removed and `env` added. Fails
    the test with the child's output when it exits non-zero.
    """
    def run(code, env=None, timeout=120, check=True):
        full_env = _clean_env()
        full_env.update(env or {})
        script = tmp_path / "snippet.py"
        script.write_text(textwrap.dedent(code))
        proc = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=full_env,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"snippet exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n"
                        f"--- stderr\n{proc.stderr}")
        return proc
    return run
