"""Put first on PYTHONPATH by ``python -m dftracer`` for the interpreters the
traced program starts: imports dftracer (which traces from the environment)
when DFTRACER_ENABLE=1, then runs the ``sitecustomize`` this one shadows,
if any. Never raises: a child that cannot trace still runs."""
import importlib
import os
import sys


def _run_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if mine is not None:
            sys.modules["sitecustomize"] = mine


def _start() -> None:
    if os.environ.get("DFTRACER_ENABLE") != "1":
        return
    try:
        import dftracer  # noqa: F401
    except Exception as e:  # the program runs untraced rather than not at all
        print(f"[dftracer] warning: this child process is not traced: {type(e).__name__}: {e}", file=sys.stderr)


_run_shadowed()
_start()
