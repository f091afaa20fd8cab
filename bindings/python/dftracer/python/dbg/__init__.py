"""pydftracer's `dftracer.python.dbg`: the same API over its debug build.

Our package has one build; its diagnostics go through DFTRACER_LOG_LEVEL
(`dft_warn`), so this path offers exactly what dftracer.python offers.
"""
from .. import *  # noqa: F401,F403
from .. import __all__  # noqa: F401
