"""libdftracer_cuda.so on a machine without a GPU or CUDA driver: it loads,
and starting it fails with one clear line, never a crash, leaving no file;
the package (dftracer/python/cuda) never loads it unless DFTRACER_CUDA asks
(0, off, is the default: opt-in until scripts/gpu_check.sh has passed on a
GPU), and DFTRACER_CUDA=auto changes nothing there: no output, one debug
line at most, one warning line when DFTRACER_CUDA=1 asked for it, and the
trace is written as ever.

The library's tests need it built (-DDFTRACER_CUDA=ON against CUPTI, e.g. the
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

needs_lib = pytest.mark.skipif(not LIB or not os.path.exists(LIB),
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


@needs_lib
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


@needs_lib
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


# ----------------------------------------------------------------- the automatic start

def _no_gpu_here():
    import glob
    return not glob.glob("/proc/driver/nvidia/gpus/*") and not os.path.exists("/dev/nvidia0")


no_gpu = pytest.mark.skipif(not _no_gpu_here(), reason="an NVIDIA GPU (driver) is present here")

# A traced program: one event of its own; says whether libdftracer_cuda is mapped.
PROGRAM = """
import os, sys
import dftracer
from dftracer.python import dftracer as log_api
{start}
log_api.get_instance().log_event("work", "app", 1, 2)
maps = open("/proc/self/maps").read()
print("LOADED" if "libdftracer_cuda" in maps else "NOT_LOADED")
log_api.get_instance().finalize()
"""


def _traced(tmp_path, setting, lib=None, level=None, via_initialize_log=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["DFTRACER_LOG_FILE"] = str(tmp_path / "run")
    env["DFTRACER_TRACE_COMPRESSION"] = "0"
    if via_initialize_log:
        start = f"log_api.initialize_log({str(tmp_path / 'run')!r}, None, -1, enable=True)"
    else:
        env["DFTRACER_ENABLE"] = "1"
        start = ""
    if setting is not None:
        env["DFTRACER_CUDA"] = setting
    if lib is not None:
        env["DFTRACER_CUDA_LIB"] = lib
    if level is not None:
        env["DFTRACER_LOG_LEVEL"] = level
    p = subprocess.run([sys.executable, "-c", PROGRAM.format(start=start)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    traces = [f for f in os.listdir(tmp_path) if f.startswith("run") and f.endswith(".pfw")]
    assert len(traces) == 1, (os.listdir(tmp_path), p.stderr)
    text = open(tmp_path / traces[0]).read()
    assert '"name":"work"' in text, "the program's own event is in its trace"
    return p


@pytest.mark.parametrize("lib", [LIB or None, "/nonexistent/libdftracer_cuda.so"], ids=["built", "missing"])
def test_off_by_default_never_loads_it_nor_says_anything(tmp_path, lib):
    # GPU or not: with DFTRACER_CUDA unset nothing is looked for, not even at debug level.
    p = _traced(tmp_path, None, lib, level="debug")
    assert p.stdout.split() == ["NOT_LOADED"]
    assert "device capture" not in p.stderr and "DFTRACER_CUDA" not in p.stderr, p.stderr


@no_gpu
@pytest.mark.parametrize("lib", [LIB or None, "/nonexistent/libdftracer_cuda.so"], ids=["built", "missing"])
def test_auto_without_a_gpu_changes_nothing(tmp_path, lib):
    p = _traced(tmp_path, "auto", lib)
    assert p.stderr == ""
    assert p.stdout.split() == ["NOT_LOADED"], "no GPU: the library is not even loaded"


@no_gpu
def test_auto_without_a_gpu_says_one_debug_line(tmp_path):
    p = _traced(tmp_path, "auto", LIB or None, level="debug")
    cuda_lines = [ln for ln in p.stderr.splitlines() if "DFTRACER_CUDA" in ln or "device capture" in ln]
    assert len(cuda_lines) == 1, p.stderr
    assert cuda_lines[0].startswith("[dftracer] debug: "), cuda_lines


def test_off_never_loads_it(tmp_path):
    p = _traced(tmp_path, "0", LIB or None, level="debug")
    assert p.stdout.split() == ["NOT_LOADED"]
    assert "device capture" not in p.stderr and "DFTRACER_CUDA" not in p.stderr, p.stderr


@needs_lib
@no_gpu
@pytest.mark.parametrize("via_initialize_log", [False, True], ids=["env", "initialize_log"])
def test_forced_without_a_driver_is_one_warning_line(tmp_path, via_initialize_log):
    p = _traced(tmp_path, "1", LIB, via_initialize_log=via_initialize_log)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("[dftracer] warning: device capture off: "), lines
    assert "(is there a CUDA driver and a GPU?)" in lines[0], lines


def test_forced_without_the_library_is_one_warning_line(tmp_path):
    p = _traced(tmp_path, "1", "/nonexistent/libdftracer_cuda.so")
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert "/nonexistent/libdftracer_cuda.so" in lines[0] and "DFTRACER_CUDA=ON" in lines[0], lines


def test_an_installed_library_loads_by_itself(tmp_path):
    """Packaging: a wheel built with -DDFTRACER_CUDA=ON holds the library beside the
    core, and it finds libcupti by itself (its RPATH: NVIDIA's wheel, or where it was built)."""
    import dftracer
    path = os.path.join(os.path.dirname(dftracer.__file__), "lib", "libdftracer_cuda.so")
    if not os.path.exists(path):
        pytest.skip("this dftracer was built without the CUDA capture source (-DDFTRACER_CUDA=ON)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_") and k != "LD_LIBRARY_PATH"}
    p = subprocess.run([sys.executable, "-c", "from dftracer.python import cuda; import ctypes; "
                        "print(cuda.library_path()); ctypes.CDLL(cuda.library_path())"],
                       capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == path
