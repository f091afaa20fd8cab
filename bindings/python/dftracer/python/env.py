"""DFTRACER_* settings as read at import, with pydftracer's names.

These are informational (pydftracer exposes them the same way); the core
reads the variables itself. DFTRACER_ENABLE here is True when the variable
was set to a true value when dftracer was imported.
"""
import os

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

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(name):
    """True / False for a set boolean variable, None when unset or unparsable."""
    v = os.environ.get(name)
    if v is None:
        return None
    v = v.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    return None


DFTRACER_ENABLE = _flag(DFTRACER_ENABLE_ENV) is True
DFTRACER_INIT_PRELOAD = os.environ.get(DFTRACER_INIT_ENV, "FUNCTION").strip().upper() == "PRELOAD"
DFTRACER_LOG_LEVEL = os.environ.get(DFTRACER_LOG_LEVEL_ENV, "ERROR").strip().upper()

# DFTRACER_ENABLE=0 (explicitly) is a kill switch: initialize_log() does not
# start tracing and dft_fn.log returns functions unwrapped (zero cost).
# Unset means "off until initialize_log() is called".
TRACING_FORBIDDEN = _flag(DFTRACER_ENABLE_ENV) is False
