"""pydftracer's `dftracer.python.dbg.logger` (same as dftracer.python.logger here)."""
from ..logger import *  # noqa: F401,F403
from ..logger import __all__  # noqa: F401
