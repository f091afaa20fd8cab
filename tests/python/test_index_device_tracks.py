"""`summary` from the write-time index agrees with a full read (--no-index) on a
trace holding device events: a full read leaves GPU work out of the groups and
out of the span (event_category.hpp is_device_event: a device category, or any
event on a device's track, whatever its category), so the index answers only
where it can do the same, and the two outputs are equal either way."""
import json
import os
import subprocess
import sys

from analyzer_cli import analyzer

# A traced program: CPU events of its own, then events on a device's track
# (as libdftracer_cuda writes them) past the CPU events' end: a kernel, and
# one of a category that is not a device one.
PROGRAM = r"""
import ctypes, glob, os
import dftracer
from dftracer.python import dftracer as log_api
lib = glob.glob(os.path.join(os.path.dirname(dftracer.__file__), "lib", "libdftracer_core.so*"))[0]
core = ctypes.CDLL(lib)
core.dft_now_ns.restype = ctypes.c_uint64
core.dft_intern_cstr.restype = ctypes.c_uint32
core.dft_intern_cstr.argtypes = [ctypes.c_char_p]
core.dft_complete_ns_named.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint64,
                                       ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32]
core.dft_complete_ns_on_track.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
                                          ctypes.c_uint32]
t = core.dft_now_ns()
app = core.dft_intern_cstr(b"app")
for i in range(5):
    core.dft_complete_ns_named(b"work", 4, app, t + i * 1000000, 500000, None, 0)
device_pid = 0x40000000 | (os.getpid() << 8)  # format/device_track.hpp: device 0 of this process
for cat, name in ((b"kernel", b"gemm"), (b"mystery", b"on_gpu")):
    core.dft_complete_ns_on_track(device_pid, 7, name, len(name), core.dft_intern_cstr(cat),
                                  t + 50000000, 2000000, None, 0)
log_api.get_instance().finalize()
"""


def _summary(path, *extra):
    p = subprocess.run([analyzer(), "summary", "--format", "json", "--no-progress", *extra, path], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _comparable(s):
    # What says which path answered (and how many bytes it read) differs by design.
    s = dict(s)
    for k in ("index",):
        s.pop(k, None)
    return s


def test_summary_from_the_index_equals_a_full_read_with_device_tracks(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env.update(DFTRACER_ENABLE="1", DFTRACER_LOG_FILE=str(tmp_path / "run"))
    p = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    traces = [f for f in os.listdir(tmp_path) if f.endswith(".pfw.gz")]
    assert len(traces) == 1, os.listdir(tmp_path)
    path = str(tmp_path / traces[0])
    assert os.path.exists(path + ".idx")
    indexed, full = _summary(path), _summary(path, "--no-index")
    assert _comparable(indexed) == _comparable(full)
    assert full["device_events"] == 2, full
    assert not {"gemm", "on_gpu"} & {row["name"] for row in full["rows"]}, full
