"""pydftracer's `dftracer.python.dbg.torch.profiler` (same as dftracer.python.torch.profiler)."""
from ...torch.profiler import *  # noqa: F401,F403
from ...torch.profiler import __all__  # noqa: F401
