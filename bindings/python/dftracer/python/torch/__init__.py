"""pydftracer's `dftracer.python.torch`: the torch.profiler bridge."""
from .profiler import *  # noqa: F401,F403
from .profiler import __all__  # noqa: F401
