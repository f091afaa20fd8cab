"""The tracer's one diagnostics channel, from Python.

`warn(msg)` goes through the core's `dft_warn` (one line to stderr, the same
"[dftracer] warning: ..." line the C++ side writes, filtered by
DFTRACER_LOG_LEVEL), so a user sees one format whichever part of the tracer
speaks. Never raises: a warning must not break the traced program.
"""
import os
import sys

__all__ = ["warn", "debug", "before_finalize", "run_before_finalize"]

_before_finalize = []


def warn(msg: str) -> None:
    """Writes one warning line: "[dftracer] warning: <msg>".

    The core drops a message while descriptor 2 is not the program's verified
    stderr (a program that closed 0-2 got its data files there). A Python
    program that routed sys.stderr elsewhere on purpose (pytest's capture, a
    notebook, a logging redirect) chose where its stderr goes: the line goes
    to that object then, at the level DFTRACER_LOG_LEVEL allows."""
    try:
        from .. import _core

        if sys.stderr is not None and sys.stderr is not sys.__stderr__ and not _core.stderr_verified():
            level = os.environ.get("DFTRACER_LOG_LEVEL", "warn").strip().lower()
            if level not in ("error", "err", "critical", "off"):
                print(f"[dftracer] warning: {msg}", file=sys.stderr)
            return
        _core.warn(str(msg))
    except Exception:  # the extension failed to load: still say it
        try:
            print(f"[dftracer] warning: {msg}", file=sys.stderr)
        except Exception:
            pass


def debug(msg: str) -> None:
    """Writes one debug line, "[dftracer] debug: <msg>", only at
    DFTRACER_LOG_LEVEL=debug or trace (what the core's log_debug does)."""
    if os.environ.get("DFTRACER_LOG_LEVEL", "").strip().lower() not in ("debug", "trace"):
        return
    try:
        print(f"[dftracer] debug: {msg}", file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - diagnostics never raise
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
