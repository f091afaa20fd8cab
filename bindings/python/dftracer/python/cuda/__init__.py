"""The CUDA device source, started with tracing (docs/DESIGN.md "Device time").

When this process starts tracing (DFTRACER_ENABLE=1 on import, or
initialize_log), `start()` loads libdftracer_cuda.so -- installed beside the
core library (dftracer/lib) when the package was built with
-DDFTRACER_CUDA=ON -- and calls `dftracer_cuda_start(NULL)`: kernels, copies
and sets then go into the process's own trace, linked to the op or kernel
event that launched them. The core stops it before the trace is finalized by
finalize() or at exit, so CUPTI's last buffers are kept (at SIGTERM/SIGINT,
_exit and exec the device events of those last buffers are lost).

DFTRACER_CUDA chooses (opt-in: CUPTI's activity callbacks are process-wide, so
a torch.profiler started later replaces ours, and this path has not yet run on
a GPU; auto becomes the default once scripts/gpu_check.sh has passed on one):
  0 (default)     never load it (torch.profiler's own CUDA activities need
                  CUPTI to themselves);
  1               start it, and say in one warning line why it could not;
  auto            start it when the library is installed and an NVIDIA GPU is
                  there (/proc/driver/nvidia/gpus or /dev/nvidia0); otherwise
                  nothing happens (one debug line at DFTRACER_LOG_LEVEL=debug).
DFTRACER_CUDA_LIB names another libdftracer_cuda.so (a build tree's).
"""
import glob
import os

from .. import diagnostics

__all__ = ["start", "running", "library_path"]

_lib = None  # the loaded library, once loaded
_started_pid = None  # the pid that started it (a forked child did not)
_tried_pid = None  # the pid that tried (once per process: CUPTI's activity API is process-wide)
_said = set()  # warnings said once per process

_DEFAULT = "0"  # auto once scripts/gpu_check.sh has passed on a GPU
_OFF = ("0", "off", "false", "no")
_ON = ("1", "on", "true", "yes")


def library_path():
    """libdftracer_cuda.so: $DFTRACER_CUDA_LIB, else the one beside the core library."""
    named = os.environ.get("DFTRACER_CUDA_LIB", "").strip()
    if named:
        return named
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "lib", "libdftracer_cuda.so")


def _gpu_present():
    # The NVIDIA kernel driver's entries: no CUDA call (initializing CUDA here
    # would break CUDA in the program's forked children).
    return bool(glob.glob("/proc/driver/nvidia/gpus/*")) or os.path.exists("/dev/nvidia0")


def _say(forced, msg):
    """A warning when the user asked for the device source, else a debug line."""
    if not forced:
        diagnostics.debug(msg)
        return
    if msg not in _said:
        _said.add(msg)
        diagnostics.warn(msg)


def running():
    """True while this process's device source records into its trace (it
    stops when that trace is finalized)."""
    return _started_pid == os.getpid() and _lib is not None and _lib.dftracer_cuda_running() == 1


def start():
    """Starts the device source for the trace this process just started (see module doc).
    Never raises; a second call while it runs does nothing."""
    global _lib, _started_pid, _tried_pid
    try:
        setting = os.environ.get("DFTRACER_CUDA", _DEFAULT).strip().lower() or _DEFAULT
        if setting not in _OFF + _ON + ("auto",):
            _say(True, f"DFTRACER_CUDA={setting!r}: expected 0, 1 or auto; using {_DEFAULT}")
            setting = _DEFAULT
        if setting in _OFF:
            return False
        forced = setting in _ON
        if _tried_pid == os.getpid():
            # One capture per process, for its first trace.
            if _started_pid == os.getpid() and not running():
                _say(forced, "device capture runs for a process's first trace only; no device events in this one")
            return running()
        path = library_path()
        if not os.path.exists(path):
            _say(forced, f"DFTRACER_CUDA: no CUDA capture source ({path} is not there: "
                         "build the package with -DDFTRACER_CUDA=ON); no device events")
            return False
        if not forced and not _gpu_present():
            diagnostics.debug("DFTRACER_CUDA=auto: no NVIDIA GPU found (/proc/driver/nvidia/gpus); no device events")
            return False
        import ctypes

        if _lib is None:
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                _say(forced, f"DFTRACER_CUDA: cannot load {path}: {e}; no device events")
                return False
            lib.dftracer_cuda_start.argtypes = [ctypes.c_char_p]
            lib.dftracer_cuda_start.restype = ctypes.c_int
            lib.dftracer_cuda_error.restype = ctypes.c_char_p
            lib.dftracer_cuda_stop.restype = ctypes.c_int64
            lib.dftracer_cuda_dropped.restype = ctypes.c_uint64
            lib.dftracer_cuda_running.restype = ctypes.c_int
            _lib = lib
        _tried_pid = os.getpid()
        if _lib.dftracer_cuda_start(None) != 0:
            err = (_lib.dftracer_cuda_error() or b"").decode(errors="replace")
            # A GPU is there and the user did not turn it off: worth a warning in auto too.
            _say(True if _gpu_present() else forced, f"device capture off: {err}")
            return False
        _started_pid = os.getpid()
        diagnostics.debug(f"device capture on ({path})")
        return True
    except Exception as e:  # noqa: BLE001 - tracing must never break the program
        diagnostics.debug(f"device capture off: {type(e).__name__}: {e}")
        return False


def _forget_in_child():
    # The parent's CUPTI state is not the child's (the core cleared its scope).
    global _started_pid, _tried_pid
    _started_pid = _tried_pid = None


os.register_at_fork(after_in_child=_forget_in_child)
