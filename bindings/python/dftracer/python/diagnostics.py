"""The tracer's one diagnostics channel, from Python.

`warn(msg)` goes through the core's `dft_warn` (spdlog to stderr, the same
"[dftracer] warning: ..." line the C++ side writes, filtered by
DFTRACER_LOG_LEVEL), so a user sees one format whichever part of the tracer
speaks. Never raises: a warning must not break the traced program.
"""
import sys

__all__ = ["warn"]


def warn(msg: str) -> None:
    """Writes one warning line: "[dftracer] warning: <msg>"."""
    try:
        from .. import _core

        _core.warn(str(msg))
    except Exception:  # the extension failed to load: still say it
        try:
            print(f"[dftracer] warning: {msg}", file=sys.stderr)
        except Exception:
            pass
