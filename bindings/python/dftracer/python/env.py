"""DFTRACER_* settings as read at import, with pydftracer's names.

These are informational (pydftracer exposes them the same way); the core
reads the variables itself. DFTRACER_ENABLE here is True when the variable
was set to a true value when dftracer was imported. Booleans are parsed by
the core (`_core.env_enable`), so Python and C++ never disagree on what
DFTRACER_ENABLE means.
"""
import os

from .. import _core

__all__ = [
    "DFTRACER_ENABLE",
    "DFTRACER_INIT_PRELOAD",
    "DFTRACER_LOG_LEVEL",
    "DFTRACER_ENABLE_ENV",
    "DFTRACER_LOG_FILE_ENV",
    "DFTRACER_DATA_DIR_ENV",
    "DFTRACER_INIT_ENV",
    "DFTRACER_LOG_LEVEL_ENV",
]

DFTRACER_ENABLE_ENV = "DFTRACER_ENABLE"
DFTRACER_LOG_FILE_ENV = "DFTRACER_LOG_FILE"
DFTRACER_DATA_DIR_ENV = "DFTRACER_DATA_DIR"
DFTRACER_INIT_ENV = "DFTRACER_INIT"
DFTRACER_LOG_LEVEL_ENV = "DFTRACER_LOG_LEVEL"

_ENABLE_SETTING = _core.env_enable()  # True, False or None (unset / not a boolean)
DFTRACER_ENABLE = _ENABLE_SETTING is True
DFTRACER_INIT_PRELOAD = os.environ.get(DFTRACER_INIT_ENV, "FUNCTION").strip().upper() == "PRELOAD"
DFTRACER_LOG_LEVEL = os.environ.get(DFTRACER_LOG_LEVEL_ENV, "ERROR").strip().upper()

# DFTRACER_ENABLE=0 (explicitly) is a kill switch, enforced by the core
# (dft_init starts nothing); here it also makes dft_fn.log return functions
# unwrapped (zero cost). Unset means "off until initialize_log() is called".
TRACING_FORBIDDEN = _ENABLE_SETTING is False
