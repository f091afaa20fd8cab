"""dftracer.analyze.report(): `dftracer-analyze report -o FILE`'s HTML page,
written by the same C++ (src/analyze/outputs/report/)."""
import numbers

from ._common import _fs_path, _limits, _module, _path_list, _threads, _warn_skipped, _window


def report(paths, output, top=20, threads=None, *, calibration=None, max_line_mib=None, max_document_mib=None,
           from_ts=None, to_ts=None, steps=None):
    """Writes one self-contained HTML page to `output`, as `dftracer-analyze report -o OUTPUT`
    (the same bytes: one C++ writer): it opens on the answer (top self-time ops and modules,
    compile vs run, per step), then the module tree, the roofline, steps per process over
    time and the skipped input.

    top: rows of the ops, modules, compile and regions charts (`--top`, default 20).
    calibration: the peaks for the roofline (`--calibration`; default as for efficiency()).
    from_ts, to_ts: a time window, as for summary() and `report --from/--to`.
    steps: a range of steps, as for summary() (`report --steps`): the whole page is theirs.
    Returns {"answer": the lines the command prints (str), "events": events read,
    "stats": what was read and skipped}. An output that is one of the inputs, or that cannot
    be written, raises OSError.
    """
    if isinstance(top, bool) or not isinstance(top, numbers.Integral) or top < 1:
        raise ValueError(f"top must be a positive number of rows, not {top!r}")
    answer, stats = _module().report(_path_list(paths), _fs_path(output), int(top), _threads(threads),
                                     calibration=_fs_path(calibration) if calibration else "",
                                     **_limits(max_line_mib, max_document_mib),
                                     **_window(from_ts, to_ts, steps))
    _warn_skipped(stats)
    return {"answer": answer, "events": stats["events"], "stats": dict(stats)}
