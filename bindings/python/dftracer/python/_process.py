"""Child processes: making sure every process that should trace does, and
that its file is complete.

- fork: the core starts a new file in the child by itself. But a
  multiprocessing child made by fork (and so every torch DataLoader worker
  on Linux) ends with os._exit(), which skips atexit, so the core's exit
  handler never runs there. multiprocessing does run its own finalizers
  first; we register one (in each such child) that finalizes the trace.
- spawn / forkserver: the child is a fresh interpreter that traces when it
  imports dftracer with DFTRACER_ENABLE=1 in its environment. When tracing
  was started by initialize_log() rather than by the environment,
  initialize_log() puts DFTRACER_ENABLE/DFTRACER_LOG_FILE/DFTRACER_DATA_DIR
  into os.environ so children inherit them; finalize() restores them.
- exit: the core's C atexit handler finalizes a normal exit, but a Python
  program stopped by Ctrl-C never reaches it: after an uncaught
  KeyboardInterrupt, CPython finalizes the interpreter and then kills
  itself with SIGINT (default action) so the shell sees the signal, and
  C atexit handlers do not run. So the extension finalizes at the end of
  Py_FinalizeEx (Py_AtExit): after every Python atexit handler -- also
  those registered before dftracer was imported, which run after the
  package's own and whose events were lost when the package finalized in
  its atexit handler -- and after the interpreter's teardown (objects'
  __del__, the last flush of sys.stdout). The package's atexit handler
  runs the diagnostics (Python code) and flushes what was recorded so far
  to the file (a teardown that hangs and is killed loses only its own
  events), and finalizes only where Py_AtExit could not be registered
  (install_exit_hook).
"""
import atexit
import os

from .. import _core

_hooks_installed = False
_saved_env = None  # {name: previous value or None} while we own the variables


class _ForkAnchor:
    """multiprocessing.util.register_after_fork keys callbacks by a live,
    weak-referenceable object; this module-level instance is it."""


_anchor = _ForkAnchor()


def _finalize_in_child():
    _core.finalize()


def _after_mp_fork(_obj):
    # Runs in a multiprocessing child made by fork, after multiprocessing has
    # cleared the finalizers inherited from the parent.
    if _core.enabled():
        import multiprocessing.util as mpu

        # Lowest priority: after every other finalizer of the child.
        mpu.Finalize(None, _finalize_in_child, exitpriority=-(2**31))


def _finalize_at_exit():
    try:
        if _core.enabled():
            from . import diagnostics

            diagnostics.run_before_finalize()
        if not getattr(_core, "finalizes_after_the_interpreter", False):
            _core.finalize()  # a no-op when tracing is off or already finalized
        elif _core.enabled():
            # What was recorded so far goes to disk now: a teardown that then
            # hangs (a __del__ that blocks, a process group's destructor) and
            # is SIGKILLed loses only what it recorded itself.
            _core.flush()
    except Exception:  # never turn an exit into a traceback
        pass


def install_exit_hook():
    """Finalizes the trace from Python's exit path (see module doc).

    Called once, when the package is imported: handlers run last-registered
    first, so registering early lets atexit handlers the program registers
    later still record into the trace before it is closed."""
    atexit.register(_finalize_at_exit)


def _install_hooks():
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    try:
        import multiprocessing.util as mpu

        mpu.register_after_fork(_anchor, _after_mp_fork)
    except Exception:  # pragma: no cover - multiprocessing unavailable
        pass


def export_env(prefix, data_dir):
    """Makes spawned children trace like this process (see module doc)."""
    global _saved_env
    values = {"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": prefix}
    if data_dir is not None:
        values["DFTRACER_DATA_DIR"] = str(data_dir)
    if _saved_env is None:
        _saved_env = {k: os.environ.get(k) for k in ("DFTRACER_ENABLE", "DFTRACER_LOG_FILE",
                                                     "DFTRACER_DATA_DIR")}
    os.environ.update(values)


def user_env(name):
    """The variable as the user's environment has it: its value before
    export_env replaced it, while ours is in force."""
    if _saved_env is not None and name in _saved_env:
        return _saved_env[name]
    return os.environ.get(name)


def restore_env():
    """Undoes export_env (called by finalize)."""
    global _saved_env
    if _saved_env is None:
        return
    for k, v in _saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    _saved_env = None


def tracing_started(from_env):
    """Called whenever this process starts tracing."""
    from .logger import _note_tracing_started

    _note_tracing_started()
    _install_hooks()
    from . import gc_events

    gc_events.install()  # garbage collections (DFTRACER_TRACE_GC)
    from . import checkpoint_events

    checkpoint_events.install()  # torch.save/load, state_dict (DFTRACER_TRACE_CHECKPOINT), once torch is imported
    from .distributed import ranks

    # Before the I/O hooks: importing ranks.py's own modules is not the program's I/O.
    ranks.install()  # torch.distributed ranks, clocks and collectives
    from .compile import auto_install

    auto_install.when_tracing_starts()  # torch.compile's phases and optimizer steps, any backend
    from . import cuda as cuda_source

    # Before the I/O hooks too (its library's loading is not the program's I/O);
    # the core stops it before finalizing.
    cuda_source.start()  # device events (DFTRACER_CUDA)
    from . import io as io_tracing

    io_tracing.install()  # POSIX/STDIO events (FUNCTION mode)
