"""Memory capture steps aside while torch's profiler runs on the same thread.

torch keeps one profiler state per thread, in the slot where the observer's
allocation reporter sits (``DebugInfoKind::PROFILER_STATE``), and its
profiler refuses to start while anything is there ("Profiler is already
enabled on this thread"). So torch.autograd.profiler's ``_enable_profiler``
(what ``torch.profiler.profile`` and ``torch.autograd.profiler.profile``
call) is wrapped: when memory capture reaches the calling thread, it is
turned off first (torch's profiler then gets the allocation reports), and
turned on again on that thread after ``_disable_profiler``.
"""
from __future__ import annotations

import threading


def install(ext, lock) -> None:
    """Wraps torch.autograd.profiler's enable/disable once per process."""
    import torch.autograd.profiler as tap

    enable, disable = tap._enable_profiler, tap._disable_profiler
    if getattr(enable, "_dftracer_aside", False):
        return
    paused = threading.local()  # .memory: capture was turned off for this thread's profiler

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

    def _disable_profiler(*args, **kwargs):
        try:
            return disable(*args, **kwargs)
        finally:
            if getattr(paused, "memory", False):
                paused.memory = False
                with lock:
                    ext.enable_memory(True)

    _enable_profiler._dftracer_aside = True
    tap._enable_profiler = _enable_profiler
    tap._disable_profiler = _disable_profiler
