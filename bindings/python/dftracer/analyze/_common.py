"""What dftracer.analyze's modules share: the extension (or why it is
missing), the warning for skipped input and the argument checks every
function applies. Its own module so that the package's other modules
(_ranks.py, cli.py) import it without importing the package's __init__ back.
"""
import numbers
import os
import warnings

try:
    from .. import _analyze as _ext

    _IMPORT_ERROR = None
except ImportError as e:  # built without the analyzer (no simdjson)
    _ext = None
    _IMPORT_ERROR = e


# The kinds of work of steps() and summary(by="category"), in the analyzer's order
# (kStepCategories, src/analyze/analyses/steps.hpp).
STEP_CATEGORIES = ("compile", "forward", "backward", "optimizer", "comm", "data", "gc", "checkpoint", "other")


class SkippedInputWarning(UserWarning):
    """Some input was skipped (malformed lines, truncated gzip members...): see the stats."""


def _module():
    if _ext is None:
        raise ImportError(f"dftracer was built without the trace analyzer (dftracer._analyze): {_IMPORT_ERROR}")
    return _ext


def _path_list(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [_fs_path(p) for p in paths]
    if not out:
        raise ValueError("no input path given")
    return out


def _fs_path(p):
    """`p` as a str path; ValueError for a NUL byte in it, as open() raises (no system
    call sees past one: "a.pfw\\0junk" would be read or written as "a.pfw")."""
    p = os.fsdecode(p)
    if "\0" in p:
        raise ValueError(f"embedded null byte in path: {p!r}")
    return p


def _threads(threads):
    """One rule for every function: None = all cores, else an int from 1 to MAX_THREADS
    (the reader then uses no more than the cores and the pieces of input there are)."""
    if threads is None:
        return 0  # all cores
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError(f"threads must be an int or None, not {threads!r}")
    limit = _module().MAX_THREADS
    if not 1 <= threads <= limit:
        raise ValueError(f"threads must be between 1 and {limit}, not {threads!r}")
    return int(threads)


def _warn_skipped(stats, stacklevel=3):
    if stats.get("problems"):
        warnings.warn(f"dftracer.analyze: {stats['problems']}", SkippedInputWarning, stacklevel=stacklevel)


def _window_bound(name, v):
    """A from_ts/to_ts bound as text ("" = none): the exact decimal text of microseconds,
    or a relative str as given ("+1.5s", "-2s"; checked by the extension)."""
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, str)):
        raise TypeError(f"{name} must be microseconds (int, float or decimal str), a relative time str "
                        f"('+1.5s', '-2s') or None, not {v!r}")
    return v if isinstance(v, str) else repr(int(v) if isinstance(v, numbers.Integral) else float(v))


def _steps_text(steps):
    """A step range as --steps' text: a str as given ("1:", "3:10", ":-1", "4"), an int (that
    step alone) or a slice of ints without a step (slice(1, None): "1:")."""
    if isinstance(steps, str):
        return steps
    if isinstance(steps, numbers.Integral) and not isinstance(steps, bool):
        return str(int(steps))
    if isinstance(steps, slice) and steps.step is None and all(
            v is None or (isinstance(v, numbers.Integral) and not isinstance(v, bool)) for v in (steps.start, steps.stop)):
        return ("" if steps.start is None else str(int(steps.start))) + ":" + \
               ("" if steps.stop is None else str(int(steps.stop)))
    raise TypeError(f"steps must be a range of steps as --steps takes it (a str such as '1:', an int, or a slice of "
                    f"ints without a step), not {steps!r}")


def _window(from_ts, to_ts, steps=None):
    """The window as the extension's keyword arguments from_us, to_us (the texts of
    --from/--to), and steps (--steps' text) when a step range is given."""
    w = {"from_us": _window_bound("from_ts", from_ts), "to_us": _window_bound("to_ts", to_ts)}
    if steps is not None:
        w["steps"] = _steps_text(steps)
    return w


def _limits(max_line_mib, max_document_mib):
    """The reader's size limits as keyword arguments of the extension (None: the default)."""
    out = {}
    for name, v in (("max_line_mib", max_line_mib), ("max_document_mib", max_document_mib)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must be an int or None, not {v!r}")
            out[name] = int(v)
    return out
