"""pydftracer's `dftracer.python.dbg.torch` (same as dftracer.python.torch here)."""
from ...torch import *  # noqa: F401,F403
from ...torch import __all__  # noqa: F401
