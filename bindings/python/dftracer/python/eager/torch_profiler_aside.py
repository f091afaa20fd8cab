"""Memory capture steps aside while torch's profiler runs on the same thread.

torch keeps one profiler state per thread, in the slot where the observer's
allocation reporter sits (``DebugInfoKind::PROFILER_STATE``), and its
profiler refuses to start while anything is there ("Profiler is already
enabled on this thread"). So torch.autograd.profiler's ``_enable_profiler``
(what ``torch.profiler.profile`` and ``torch.autograd.profiler.profile``
call) is wrapped: when memory capture reaches the calling thread, it is
turned off first (torch's profiler then gets the allocation reports), and
turned on again on that thread after ``_disable_profiler``. Those are
private torch names: torch_compat.wrap_profiler_start_stop does the patch,
and says in one warning line when this torch lacks them.
"""
from __future__ import annotations

import threading

from ..torch_compat import wrap_profiler_start_stop


def install(ext, lock) -> bool:
    """Wraps torch's profiler's enable/disable once per process (through
    torch_compat: False, after one warning line, when they cannot be)."""
    paused = threading.local()  # .memory: capture was turned off for this thread's profiler

    def wrap_enable(enable):
        def _enable_profiler(*args, **kwargs):
            with lock:
                aside = bool(ext.memory_reported_on_this_thread())
                if aside:
                    ext.enable_memory(False)
            try:
                result = enable(*args, **kwargs)
            except BaseException:
                if aside:
                    with lock:
                        ext.enable_memory(True)
                raise
            paused.memory = aside
            return result

        return _enable_profiler

    def wrap_disable(disable):
        def _disable_profiler(*args, **kwargs):
            try:
                return disable(*args, **kwargs)
            finally:
                if getattr(paused, "memory", False):
                    paused.memory = False
                    with lock:
                        ext.enable_memory(True)

        return _disable_profiler

    return wrap_profiler_start_stop(wrap_enable, wrap_disable)
