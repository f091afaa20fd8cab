"""The tracer's one diagnostics channel, from Python.

`warn(msg)` goes through the core's `dft_warn` (spdlog to stderr, the same
"[dftracer] warning: ..." line the C++ side writes, filtered by
DFTRACER_LOG_LEVEL), so a user sees one format whichever part of the tracer
speaks. Never raises: a warning must not break the traced program.
"""
import sys

__all__ = ["warn", "before_finalize", "run_before_finalize"]

_before_finalize = []


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


def before_finalize(fn) -> None:
    """Registers `fn()` to run when the trace is finalized (dftracer.finalize
    or the exit hook), before the file is closed: messages that can only be
    said once a run is over."""
    if fn not in _before_finalize:
        _before_finalize.append(fn)


def run_before_finalize() -> None:
    """Runs the registered functions; never raises."""
    for fn in list(_before_finalize):
        try:
            fn()
        except Exception:  # noqa: BLE001
            pass
