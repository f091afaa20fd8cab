"""Compile phases and optimizer steps for every traced process, not only one
that imported dftracer.python.dynamo.

A plain ``torch.compile(model)`` (Inductor, or any backend not ours) under
``DFTRACER_ENABLE=1`` recorded no compile event at all: compile_events and
optimizer_events were installed by importing the capture backend, so the
analyzer read "compile 0.0%" for a run whose first step was 70 % compile,
found no optimizer step to end the steps with, and nothing said why. Once
tracing starts, both are installed as soon as torch._dynamo is loaded (now,
or right after the program imports it: importing it here would cost the
program seconds it may never spend). compile_events' note that a graph of
another backend is not traced then comes with it.
"""

_armed = False


def _install() -> None:
    from . import compile_events, optimizer_events

    optimizer_events.install()
    # torch._dynamo may be loading because compile_events.install() itself
    # imports it (the capture backend's first use): that call holds the lock
    # and finishes the install; waiting for it here would never end.
    if not compile_events._install_lock.locked():
        compile_events.install()


def when_tracing_starts() -> None:
    """Installs the compile phase and optimizer step hooks once torch._dynamo
    is loaded (once per process; never raises)."""
    global _armed
    if _armed:
        return
    _armed = True
    try:
        from ..import_hooks import when_imported

        when_imported("torch._dynamo", _install)
    except Exception as e:  # tracing never breaks the traced program
        from ..diagnostics import warn

        warn(f"compile events not installed ({type(e).__name__}: {e}); compile time may read as 0")
