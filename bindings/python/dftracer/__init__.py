"""dftracer: a low-overhead Chrome-trace profiler for Python and PyTorch.

Importing the package starts tracing when DFTRACER_ENABLE=1 is set in the
environment (log file prefix, data dir, compression and metadata also come
from DFTRACER_* variables); otherwise nothing is recorded and no file is
created until dftracer.python.dftracer.initialize_log() is called.

The pydftracer-compatible API lives in `dftracer.python`.
"""
import os
import sys

from . import _core
from .python import _process

__version__ = "0.1.0"


def _started():
    _process.tracing_started(from_env=True)


def _is_forkserver():
    # multiprocessing's forkserver may import __main__ (and so dftracer) to
    # preload it, but only forks workers: it gets no file of its own; each
    # worker it forks starts tracing from the environment instead. A worker
    # that imports dftracer itself (it runs inside forkserver._serve_one)
    # is an ordinary process.
    argv = getattr(sys, "orig_argv", sys.argv)
    if not any("multiprocessing.forkserver" in a for a in argv):
        return False
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_serve_one":
            return False
        frame = frame.f_back
    return True


def _start_from_env():
    """Starts tracing from the environment as it is now, unless tracing is on
    (a forkserver's child; `python -m dftracer` after setting it)."""
    if not _core.enabled() and _core.init_from_env():
        _started()


# Before tracing can start: a Ctrl-C'd program must finalize too.
_process.install_exit_hook()

# One logger per process, shared with C/C++ code in the same process (they
# all link libdftracer_core.so). The core reads DFTRACER_* once.
if _is_forkserver():
    os.register_at_fork(after_in_child=_start_from_env)
elif _core.init_from_env():
    _started()
