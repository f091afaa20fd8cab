"""pydftracer's `dftracer.python.dbg.ai` (same as dftracer.python.ai here)."""
from ..ai import *  # noqa: F401,F403
from ..ai import __all__  # noqa: F401
