"""torch.profiler's events in our trace: ``profile(on_trace_ready=trace_handler)``.

    from dftracer.python.torch import trace_handler
    with torch.profiler.profile(on_trace_ready=trace_handler):
        ...

Each profiler event (``FunctionEvent``: ATen ops, user annotations, kernels)
becomes a complete event, cat ``PP``, named by its key, with pydftracer's args
(device, cpu_memory, is_remote, device_memory_usage, input_size,
total_cpu_percent, total_device_percent).

Clock: the profiler gives times relative to its trace start, which kineto
reports in Unix-epoch ns (``trace_start_ns``, read from the wall clock). Our
events are on a monotonic clock anchored to the epoch once, at start; the two
drift apart by whatever the wall clock was stepped or slewed since. So the
handler measures the offset between the wall clock and ours when it runs and
applies it: the profiler's ops land inside the regions that were open when
they ran (pydftracer adds the raw epoch start instead).
"""
import time

from ... import _core
from ..logger import dftracer

__all__ = ["trace_handler"]

_NS_PER_US = 1000


def _trace_start_ns(profiler_result):
    """kineto's trace start in epoch ns, or None (torch versions without it)."""
    results = getattr(getattr(profiler_result, "profiler", None), "kineto_results", None)
    if results is None:
        return None
    for method, ns_per_unit in (("trace_start_ns", 1), ("trace_start_us", 1000)):
        fn = getattr(results, method, None)
        if fn is None:
            continue
        try:
            start = fn()
        except Exception:  # torch version drift: try the next accessor
            continue
        if start:
            return int(start) * ns_per_unit
    return None


def _wall_to_trace_offset_ns():
    """Our clock minus the wall clock, in ns: the tightest of a few bracketed
    reads (a preemption between two reads would widen one bracket)."""
    best = None
    for _ in range(5):
        a = _core.now_ns()
        w = time.time_ns()
        b = _core.now_ns()
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2 - w)
    return best[1]


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def _float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _args(event):
    shapes = getattr(event, "input_shapes", None)
    return {
        "device": _int(getattr(event, "device_type", 0)),
        "cpu_memory": _int(getattr(event, "cpu_memory_usage", 0)),
        "is_remote": _int(getattr(event, "is_remote", 0)),
        "device_memory_usage": _int(getattr(event, "device_memory_usage", 0)),
        "input_size": sum(len(s) for s in shapes) if shapes else 0,
        "total_cpu_percent": _float(getattr(event, "total_cpu_percent", 0.0)),
        "total_device_percent": _float(getattr(event, "total_device_percent", 0.0)),
    }


def trace_handler(profiler_result):
    """torch.profiler's on_trace_ready callback: writes the result's events.

    A no-op while tracing is off. Never raises into the training loop: an
    event that cannot be converted is skipped, and a result without a trace
    start is reported once through the diagnostics channel."""
    if not _core.enabled():
        return
    log = dftracer.get_instance()
    log.mark_used("torch_profiler")
    start_ns = _trace_start_ns(profiler_result)
    if start_ns is None:
        from ..diagnostics import warn

        warn("torch profiler result has no trace start (trace_start_ns); its events are not written")
        return
    base_ns = start_ns + _wall_to_trace_offset_ns()
    try:
        events = profiler_result.events()
    except Exception as e:  # e.g. a result that was already consumed
        from ..diagnostics import warn

        warn(f"torch profiler events could not be read ({type(e).__name__}: {e})")
        return
    for event in events or ():
        try:
            tr = event.time_range
            start_us = (base_ns + tr.start * _NS_PER_US) / _NS_PER_US
            dur_us = max(0.0, float(tr.end - tr.start))
            _core.log_event(str(event.key), "PP", start_us, dur_us, _args(event))
        except (AttributeError, TypeError, ValueError):
            continue
