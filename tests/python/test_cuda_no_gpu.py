"""libdftracer_cuda.so on a machine without a GPU or CUDA driver: it loads,
and starting it fails with one clear line, never a crash, leaving no file.

Needs the library built (-DDFTRACER_CUDA=ON against CUPTI, e.g. the
nvidia-cuda-cupti / nvidia-cuda-runtime / nvidia-cuda-crt 13.0 wheels
unpacked, CUPTI_ROOT=<dir>/nvidia/cu13) and named by $DFTRACER_CUDA_LIB;
skipped otherwise, and on a machine where a GPU is usable (scripts/gpu_check.sh
covers that one).
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

LIB = os.environ.get("DFTRACER_CUDA_LIB", "")

pytestmark = pytest.mark.skipif(not LIB or not os.path.exists(LIB),
                                reason="DFTRACER_CUDA_LIB does not name a built libdftracer_cuda.so")


def _gpu_usable():
    if not shutil.which("nvidia-smi"):
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def _run(code, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)


LOAD = """
import ctypes, sys
lib = ctypes.CDLL({lib!r})
lib.dftracer_cuda_start.argtypes = [ctypes.c_char_p]
lib.dftracer_cuda_error.restype = ctypes.c_char_p
"""


@pytest.mark.skipif(_gpu_usable(), reason="a GPU is usable here")
def test_start_without_a_driver_is_one_clear_line(tmp_path):
    out = tmp_path / "gpu.pfw"
    p = _run(LOAD.format(lib=LIB) + f"""
rc = lib.dftracer_cuda_start({str(out)!r}.encode())
print(rc)
print(lib.dftracer_cuda_error().decode())
""", tmp_path)
    assert p.returncode == 0, p.stderr
    rc, error = p.stdout.splitlines()[:2]
    assert rc == "-1"
    assert "(is there a CUDA driver and a GPU?)" in error, error
    assert "\n" not in error.strip()
    assert not out.exists(), "a failed start leaves no file"


def test_start_into_the_trace_without_the_core_says_so(tmp_path):
    # Through the core's writer (no path), in a process without the tracing core loaded.
    p = _run(LOAD.format(lib=LIB) + """
print(lib.dftracer_cuda_start(None))
print(lib.dftracer_cuda_error().decode())
""", tmp_path)
    assert p.returncode == 0, p.stderr
    rc, error = p.stdout.splitlines()[:2]
    assert rc == "-1"
    assert "tracing core" in error and "not loaded" in error, error
