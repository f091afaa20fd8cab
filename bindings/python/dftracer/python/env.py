"""DFTRACER_* settings as read at import, with pydftracer's names.

These are informational (pydftracer exposes them the same way); the core
reads the variables itself. DFTRACER_ENABLE here is True when the variable
was exactly "1" when dftracer was imported (pydftracer's rule). The value is
read by the core (`_core.env_enable`), so Python and C++ never disagree on
what DFTRACER_ENABLE means.
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

_ENABLE_SETTING = _core.env_enable()  # True ("1"), False (set to anything else) or None (unset)
DFTRACER_ENABLE = _ENABLE_SETTING is True
DFTRACER_INIT_PRELOAD = os.environ.get(DFTRACER_INIT_ENV, "FUNCTION").strip().upper() == "PRELOAD"
DFTRACER_LOG_LEVEL = os.environ.get(DFTRACER_LOG_LEVEL_ENV, "ERROR").strip().upper()

# DFTRACER_ENABLE set to anything but "1" keeps tracing off for good, even
# for initialize_log(enable=True) (enforced by the core); here it also makes
# dft_fn.log return functions unwrapped (zero cost). Unset means "off unless
# the program opts in with initialize_log(..., enable=True)".
TRACING_FORBIDDEN = _ENABLE_SETTING is False
