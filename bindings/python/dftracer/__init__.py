"""dftracer: a low-overhead Chrome-trace profiler for Python and PyTorch.

Importing the package starts tracing when DFTRACER_ENABLE=1 is set in the
environment (log file prefix, data dir, compression and metadata also come
from DFTRACER_* variables); otherwise nothing is recorded and no file is
created until dftracer.python.dftracer.initialize_log() is called.

The pydftracer-compatible API lives in `dftracer.python`.
"""
from . import _core

__version__ = "0.1.0"

# One logger per process, shared with C/C++ code in the same process (they
# all link libdftracer_core.so). The core reads DFTRACER_* once.
if _core.init_from_env():
    from .python import _process

    _process.tracing_started(from_env=True)
