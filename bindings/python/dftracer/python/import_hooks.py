"""Runs setup code right after a module is imported, or now when it is
already: what tracing installs around torch._dynamo waits for the program to
import it (seconds) rather than importing it itself."""
from __future__ import annotations

import sys
from typing import Callable

from .diagnostics import warn


def when_imported(name: str, then: Callable[[], None]) -> None:
    """Runs ``then()`` now if module ``name`` is loaded, else right after
    its import (once per callback). A failing callback is one warning: tracing
    never breaks the traced program's import."""
    if name in sys.modules:
        _run(then, name)
        return
    for f in sys.meta_path:
        if isinstance(f, _AfterImport) and f.name == name:
            if then not in f.callbacks:
                f.callbacks.append(then)
            return
    finder = _AfterImport(name)
    finder.callbacks.append(then)
    sys.meta_path.insert(0, finder)


class _AfterImport:
    """A one-shot meta path finder: runs its callbacks, in the order they were
    added, right after module `name` has finished executing. Lets
    DFTRACER_TRACE_EAGER apply to a program that imports dftracer before torch
    (dftracer itself never imports torch), and the compile pause and the
    compile/optimizer hooks wait for torch._dynamo instead of importing it.
    One finder per module name holds every callback for it: two finders for
    the same name would each see the other's import, and only the first would
    run."""

    def __init__(self, name):
        self.name = name
        self.callbacks = []

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module
        callbacks = self.callbacks

        def exec_module(module):
            original(module)
            try:
                del loader.exec_module  # back to the class's method
            except AttributeError:
                pass
            for then in callbacks:
                _run(then, name)

        loader.exec_module = exec_module
        return spec


def _run(then: Callable[[], None], name: str) -> None:
    try:
        then()
    except Exception as e:  # tracing never breaks the traced program
        warn(f"tracing setup after importing {name} failed: {e}")
