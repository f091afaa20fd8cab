"""FUNCTION-mode I/O tracing.

When this process starts tracing, the POSIX and STDIO calls of every loaded
library (and of every library loaded later) are pointed at the hooks of
``libdftracer_io.so`` (shipped in ``dftracer/lib``), which record them as
``POSIX`` / ``STDIO`` events into the same trace. ``DFTRACER_DISABLE_IO=1``
turns it off; ``DFTRACER_DATA_DIR`` picks the paths (and
``initialize_log``'s ``data_dir``, through ``set_data_dir``); under
``DFTRACER_INIT=PRELOAD`` with ``LD_PRELOAD=libdftracer_preload.so`` the
preload library already traces and nothing is patched. ``DFTRACER_INIT=PRELOAD``
without that library loaded traces no I/O, as in DFTracer (its I/O is the
preload library's job), and says so once on stderr.
"""
import ctypes
import os

from .. import diagnostics

MODES = {0: "off", 1: "function", 2: "preload"}

_lib = None
_preload_missing_told = False


def library_dir():
    """The folder holding libdftracer_io.so and libdftracer_preload.so: the
    dftracer package's lib/ (this file is dftracer/python/io/__init__.py)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(package, "lib")


def install():
    """Starts I/O tracing in this process if tracing is on; returns the mode
    now in force ("off", "function" or "preload"). Never raises."""
    global _lib, _preload_missing_told
    if _lib is None and os.environ.get("DFTRACER_INIT", "").strip().upper() == "PRELOAD" \
            and not hasattr(ctypes.CDLL(None), "dft_io_preload_loaded"):
        if not _preload_missing_told:
            _preload_missing_told = True
            diagnostics.warn("DFTRACER_INIT=PRELOAD but libdftracer_preload.so is not in LD_PRELOAD: no I/O is "
                             f"traced (LD_PRELOAD={os.path.join(library_dir(), 'libdftracer_preload.so')}, "
                             "or DFTRACER_INIT=FUNCTION to trace it in-process)")
        return "off"
    if _lib is None:
        path = os.path.join(library_dir(), "libdftracer_io.so")
        try:
            _lib = ctypes.CDLL(path)
        except OSError as e:
            diagnostics.warn(f"I/O tracing is off: cannot load {path}: {e}")
            return "off"
    return MODES.get(_lib.dft_io_install(), "off")


def set_data_dir(dirs):
    """Traces from now on only the I/O under `dirs` (DFTRACER_DATA_DIR's
    syntax; None = every path), in whichever library traces. A no-op while
    I/O tracing is off (install() then reads DFTRACER_DATA_DIR)."""
    if _lib is None or mode() == "off":
        return
    fn = _lib.dft_io_set_data_dir
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    fn(None if dirs is None else os.fsencode(dirs))


class paused:
    """`with paused():` -- this thread's I/O inside the block is not traced
    (the package's own lazy imports: not the program's I/O)."""

    def __enter__(self):
        self._was = _lib.dft_io_pause_thread(1) if _lib is not None else 0
        return self

    def __exit__(self, *exc):
        if _lib is not None:
            _lib.dft_io_pause_thread(self._was)
        return False


def mode():
    """The I/O tracing mode in force in this process."""
    return MODES.get(_lib.dft_io_mode(), "off") if _lib is not None else "off"
