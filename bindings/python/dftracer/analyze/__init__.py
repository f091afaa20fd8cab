"""Trace analysis from Python, on the same C++ reader as `dftracer-analyze`.

    import dftracer.analyze as da

    df = da.summary("traces/", by="module,phase", top=20)   # a pandas DataFrame
    print(df.attrs["stats"]["skipped_lines"])

    for batch in da.events("traces/*.pfw.gz", batch_size=100_000):
        ...                                                  # one DataFrame per batch

    da.diff("run_a/", "run_b/", by="module")                 # deltas per group, by impact
    da.module_tree("traces/")                                # self/total per nn.Module path
    da.io("traces/")["by_file"]                              # POSIX/STDIO bytes and time per file

    client = da.local_cluster(n_workers=2)                   # or a dask.distributed.Client
    da.summary("traces/", client=client)                     # same numbers, read on the workers
    da.events("traces/", format="dask", client=client)       # a dask.dataframe
    da.to_parquet("traces/", "out_dir/")                     # Parquet, hive-partitioned by pid

PATHS is a file, directory (searched recursively for *.pfw, *.pfw.gz, *.json,
*.json.gz), glob pattern, or a list of them -- exactly what the command takes.
Our .pfw/.pfw.gz, DFTracer's v1/v2 traces and Chrome trace JSON are read.

Bad input (garbage or half lines, wrongly typed fields, truncated gzip
members, empty files) is skipped and counted, never fatal: the counts are in
`df.attrs["stats"]` (summary) or `EventBatches.stats` (events), and a
SkippedInputWarning says it once. A path that does not exist raises
FileNotFoundError naming it.

Importing this module needs neither torch nor pandas; summary() and
events(format="pandas") import pandas when called.
"""
import numbers
import os
import warnings

from ._common import (  # noqa: F401  (_IMPORT_ERROR: why the extension is missing)
    _IMPORT_ERROR, STEP_CATEGORIES, SkippedInputWarning, _ext, _fs_path, _limits, _module, _path_list, _threads, _warn_skipped,
    _steps_text, _window, _window_bound,
)

SkippedInputWarning.__module__ = __name__  # its public home

__all__ = ["summary", "memory", "steps", "efficiency", "calibrate", "events", "merge", "report", "files", "EventBatches", "SkippedInputWarning", "SUMMARY_COLUMNS",
           "CATEGORY_WALL_COLUMNS",
           "EVENT_COLUMNS", "diff", "module_tree", "io", "IO_COLUMNS", "device", "DIFF_COLUMNS", "MODULE_TREE_COLUMNS", "ranks", "RankAnalysis",
           "to_parquet", "local_cluster"]

# The column lists come from the extension, which generates them from the
# reader's field table (src/format/event_schema.hpp), so they cannot drift.
_KINDS = dict(_ext.EVENT_COLUMN_KINDS) if _ext is not None else {}
#: Columns of summary() after the group key column(s).
SUMMARY_COLUMNS = tuple(_ext.SUMMARY_COLUMNS) if _ext is not None else ()
#: Columns of summary(by="category"): `summary --by category`'s compile vs run in wall time.
CATEGORY_WALL_COLUMNS = ("category", "wall_us", "wall_share", "thread_us", "count")
#: Columns of diff() after the group key column(s).
DIFF_COLUMNS = tuple(_ext.DIFF_COLUMNS) if _ext is not None else ()
#: Columns of module_tree().
MODULE_TREE_COLUMNS = tuple(_ext.MODULE_TREE_COLUMNS) if _ext is not None else ()
#: Columns of io()'s by_file / by_call / by_process tables after their key column.
IO_COLUMNS = ("ops", "reads", "writes", "read_bytes", "write_bytes", "small_reads", "small_writes", "time_us")
#: Columns of each events() batch ("args" only with raw_args=True).
EVENT_COLUMNS = tuple(_KINDS)
_STRING_COLUMNS = frozenset(c for c, k in _KINDS.items() if k == "text")
# Exact integer-ns columns and the float column whose NaN says "absent".
_NS_COLUMNS = {c: c[:-3] for c, k in _KINDS.items() if k == "time_ns"}


def files(paths):
    """The trace files PATHS names, sorted and de-duplicated (FileNotFoundError if one is missing)."""
    return list(_module().expand_inputs(_path_list(paths)))


def local_cluster(n_workers=2, threads_per_worker=1, **kwargs):
    """A dask.distributed Client of a new LocalCluster (n_workers processes) for client=."""
    from .distributed import local_cluster as make

    return make(n_workers, threads_per_worker, **kwargs)


def summary(paths, by="name", top=None, threads=None, *, sort=None, max_line_mib=None, max_document_mib=None,
            from_ts=None, to_ts=None, use_index=True, client=None, steps=None):
    """Complete ("X") events grouped by `by`, as a pandas DataFrame sorted by self time.

    by: "name" (default), "cat", "pid", "tid", "module", "phase", "graph", "step", ...
        (the well-known fields), "category" (compile, forward, backward, optimizer, comm, data,
        gc or other: see docs/analyzer.md), or any "args.<key>" (e.g. "args.step", "args.rank": the
        value as written, a list or object as its JSON text); several as a comma-joined
        string or a list ("module,phase" / ["module", "args.step"]). The key columns are
        named as given. A bad key raises ValueError naming it and the accepted keys.
        by="step" alone: the per-step breakdown of `summary --by step`, steps() (the step
        arg as a key: "args.step"). by="rank": one row per process of
        a torchrun job, the `ranks` table of ranks() (`summary --by rank`), in the order read,
        or with top or sort by that time (self by default), descending. by="category"
        alone: compile vs run in wall time, `summary --by category`'s rows (columns
        CATEGORY_WALL_COLUMNS: category, wall_us, wall_share, thread_us -- the self time of
        its events added over threads -- and count; attrs span_us, processes, traced_us,
        rule, stats); "category,KEY" groups by self time as any key. Neither "step" nor
        "category" takes top or sort (ValueError), as the command.
    top: keep the `top` groups with the most self time (or total time with sort="total"; None: all).
    sort: "self" (None: the default) or "total": the row order, and which time `top` keeps the most of.
    threads: reader threads (None: all cores; else 1 to 1024, never more than the cores
        or the pieces of input there are; anything else raises ValueError).
    max_line_mib, max_document_mib: size limits (default 16 and 1024 MiB): a longer
        line, or a larger whole-document JSON, is skipped and counted in
        stats["oversized"] (a gzip bomb costs memory up to the limit, no more).
    from_ts, to_ts: a time window in the file's ts unit, microseconds since the epoch
        (int, float, or a decimal str for exact nanoseconds), or relative, a str of a
        sign, a number and a unit (s, ms, us, ns): "+1.5s" is 1.5 s after the trace
        start (the earliest ts of any event of PATHS), "-2s" is 2 s before the trace
        end (the latest ts + dur), whichever bound it is given to (from_ts="-2s": the
        last two seconds). Only events with from_ts <= ts < to_ts are summarized
        (metadata always); gzip members whose write-time index puts them outside the
        window are not inflated. With a client the workers apply the window.
    steps: a range of steps, as `--steps`: a Python slice of each process's steps, numbered
        from 0 as steps() numbers them -- "1:" (or slice(1, None)) every step but the first
        (the steady state), "3:10", ":-1", or one step (an int or "4"). Only the events
        inside the chosen steps are read, per process (docs/analyzer.md, "A range of
        steps"); by="step" keeps the chosen steps' rows. An input without steps, or a
        range that picks none, raises ValueError with the command's line; by="rank" takes
        none. With a client each process's steps are found on a worker from its whole
        file, and the workers read the chosen steps' events alone: the same numbers.
    use_index: answer from the files' write-time indexes where they can (every file a
        finalized .pfw.gz of ours, `by` among name, cat, pid, tid, no window, no
        args.flops/bytes in the file); False always reads the events (`--no-index`).
        df.attrs["index"] says which was used; the numbers are the same either way.

    Columns: the key column(s) (str; events without the field are grouped as "(none)"),
    then count (uint64), self_us (duration minus the events nested directly inside each
    event on its thread), total_us, mean_us, min_us, p50_us, p95_us, max_us (microseconds),
    share (self_us over the traced time: the summed self time of all complete events, so
    the shares add up to 1), gflops and gbps (NaN where no
    event of the group carried args.flops / args.bytes). Same numbers as
    `dftracer-analyze summary --format csv`: p50/p95 within 0.78%, the rest exact.

    df.attrs["stats"]: what was read and skipped (files, events, malformed, bad_fields,
    truncated_members, corrupt_members, empty_files, skipped_lines, problems, ...);
    df.attrs["totals"]: complete_events, metadata_events, other_events, groups,
    total_us (summed duration), traced_us (summed self time: each thread's time inside any
    event), span_us (first start to last end), nesting_approximated (parents whose children
    were estimated, past 4096 unparented events on one thread; normally 0).

    client: a dask.distributed Client (default: $DFTRACER_DASK_SCHEDULER's, else none: this
    machine's reader). With one, batches of files and ranges of gzip members of large
    .pfw.gz files are read on the workers, and only their partial aggregates come back
    (distributed.py): the same numbers as without (flops/bytes sums up to float rounding).
    `threads` does not apply then: each worker reads its pieces with one thread.
    """
    import pandas as pd

    if not isinstance(by, str):
        by = ",".join(by)
    if by == "rank" and steps is not None:  # as `summary --by rank --steps`
        raise ValueError("steps: summary by='rank' does not take a step range (the ranks tables are per step already)")
    if by == "rank":  # per process of a torchrun job: _ranks.py
        ordered = top is not None or sort is not None  # as `--by rank --top/--sort`: by time, else as read
        return ranks(paths, threads, max_line_mib=max_line_mib, max_document_mib=max_document_mib, client=client,
                     from_ts=from_ts, to_ts=to_ts, _steps=False, _sort=(sort or "self") if ordered else "",
                     _top=_top(top)).ranks
    if by in ("step", "category") and (top is not None or sort not in (None, "self")):  # as the command
        raise ValueError(f"by={by!r} shows every {by}: no top or sort")
    if sort is None:
        sort = "self"
    if by == "step":  # the per-step breakdown, as `summary --by step`
        return _per_step(paths, threads, max_line_mib=max_line_mib, max_document_mib=max_document_mib,
                         from_ts=from_ts, to_ts=to_ts, client=client, steps=steps)
    if by == "category":  # compile vs run in wall time, as `summary --by category`
        return _category_wall(paths, threads, _limits(max_line_mib, max_document_mib),
                              _window(from_ts, to_ts, steps), _dask().resolve_client(client))
    if top is None:
        top = 0
    elif int(top) < 1:
        raise ValueError(f"top must be a positive number of groups or None, not {top!r}")
    if sort not in ("self", "total"):
        raise ValueError(f"sort must be 'self' or 'total', not {sort!r}")
    limits = _limits(max_line_mib, max_document_mib)
    threads = _threads(threads)
    client = _dask().resolve_client(client)
    if client is None:
        raw = _module().summary(_path_list(paths), by, int(top), threads, **limits, sort=sort,
                                **_window(from_ts, to_ts, steps), use_index=bool(use_index))
    else:
        window = _window(from_ts, to_ts)
        _dask().check_window(_module(), window)  # bad text fails here, before any work
        _module().combine_partials([], by, 0, sort)  # a bad key or sort fails here, before any work
        raw = _dask().summary(client, _module(), files(paths), by, int(top), sort, limits,
                              window=(window["from_us"], window["to_us"]), use_index=bool(use_index),
                              steps_text=None if steps is None else _steps_text(steps))
    memory = [c for c in ("alloc_bytes", "free_bytes", "net_bytes") if c in raw["columns"]]  # memory capture
    order = list(raw["keys"]) + list(SUMMARY_COLUMNS) + memory
    df = pd.DataFrame({c: raw["columns"][c] for c in order}, columns=order)
    df.attrs["stats"] = dict(raw["stats"])
    df.attrs["totals"] = dict(raw["totals"])
    df.attrs["index"] = bool(raw["index"])
    _warn_skipped(raw["stats"])
    return df


def _category_wall(paths, threads, limits, window, client):
    """summary(by="category"): the rows of `summary --by category --format json`."""
    import json

    import pandas as pd

    threads = _threads(threads)
    if client is None:
        text, stats = _module().category_wall_json(_path_list(paths), threads, **limits, **window)
    else:
        inputs = files(paths)
        ns = _dask().window_of(client, _module(), inputs, window, limits)
        text, stats = _dask().category_wall(client, _module(), inputs, limits, ns, steps_text=window.get("steps"))
    doc = json.loads(text)
    df = pd.DataFrame(doc.pop("rows"), columns=list(CATEGORY_WALL_COLUMNS))
    df["count"] = df["count"].astype("uint64")
    doc.pop("skipped")
    df.attrs.update(doc)
    df.attrs["stats"] = dict(stats)
    _warn_skipped(stats)
    return df


def _dask():
    from . import distributed

    return distributed


def steps(paths, threads=None, *, max_line_mib=None, max_document_mib=None, from_ts=None, to_ts=None, client=None,
          steps=None):
    """Per training step, its time split by kind of work, as a pandas DataFrame: the
    rows of `dftracer-analyze summary --by step --format json` (same numbers).

    A step is one iteration of the loop, from its start to the next one's start
    (docs/analyzer.md, "Steps"): found from the step marks Dynamo/dft_ai update(step=...)
    write, the `step` arg, a repeated user region at any depth of the main thread, or
    else torch's optimizer steps (each ends a step).
    Columns: pid, step (0-based within the process), label (the step value, the region
    name or the optimizer step's), start_us, duration_us; compile_us, forward_us, backward_us, optimizer_us,
    comm_us (exposed communication), data_us, gc_us (Python's garbage collections), checkpoint_us (torch.save/load, state_dict calls), other_us, untraced_us (wall time: the duration split by what any thread of
    the process was doing, by priority; they add up to duration_us); traced_us and
    compile_thread_us .. other_thread_us (thread time: self time added over threads);
    compile_share (compile_us / duration_us), outlier (bool), outlier_kind ("slow",
    "fast" or None), end_estimated (the last step of marks or args, whose end no region
    gives).

    df.attrs: "processes" (pid, source -- "region", "marks", "args.step", "optimizer",
    "inference", "" or "helper" for a data-loader worker -- region, steps, model_work), "runs"
    (per process: span_us and its wall time by category), "outside" (thread time of events in no step, by
    category), "first_step_compile_share", "outlier_rule", "nesting", "capped_regions",
    "stats" (what was read and skipped).
    from_ts, to_ts: a time window, as for summary() and `summary --by step --from/--to`:
    the steps are those of the events in it.
    client: as for summary(); whole files are read on the workers (a process's steps
    need all of its events), each keeping the window the client resolved.
    steps: a range of steps as for summary() (`summary --by step --steps`): the chosen
    steps' rows, found over the whole input (with a client too).
    """
    import json

    import pandas as pd

    limits = _limits(max_line_mib, max_document_mib)
    threads = _threads(threads)
    window = _window(from_ts, to_ts, steps)
    client = _dask().resolve_client(client)
    if client is None:
        text, stats = _module().steps_json(_path_list(paths), threads, **limits, **window)
        doc = json.loads(text)
    else:
        inputs = files(paths)
        doc, stats = _dask().steps(client, _module(), inputs, limits, _dask().window_of(client, _module(), inputs,
                                                                                         window, limits))
        _dask().keep_step_rows(_module(), doc, window.get("steps"))
    cats = STEP_CATEGORIES
    columns = (["pid", "step", "label", "start_us", "duration_us"] + [f"{c}_us" for c in cats] +
               ["untraced_us", "traced_us"] + [f"{c}_thread_us" for c in cats] +
               ["compile_share", "outlier", "outlier_kind", "end_estimated"])
    df = pd.DataFrame(doc.pop("steps"), columns=columns)
    df["outlier"] = df["outlier"].astype(bool)
    kind = df["outlier_kind"].astype(object)
    df["outlier_kind"] = kind.where(kind.notna(), None)  # None (as in the JSON), not NaN
    df.attrs.update(doc)
    df.attrs["stats"] = dict(stats)
    _warn_skipped(stats)
    return df


_per_step = steps  # for summary(by="step"), whose parameter `steps` hides this function


def efficiency(paths, by="name", top=None, threads=None, *, sort="self", calibration=None, max_line_mib=None,
               max_document_mib=None, from_ts=None, to_ts=None, steps=None):
    """FLOPs, bytes and how close to this machine's roofline each group ran, as a pandas
    DataFrame: the rows of `dftracer-analyze summary --efficiency --format json`.

    Columns: the group key(s), count, self_us, flops, bytes (sums of the events'
    args.flops / args.bytes), gflops and gbps (achieved over those events' time), ai
    (FLOPs per byte), attainable_gflops (min(peak GFLOP/s, ai x peak GB/s)), peak_frac
    (achieved over attainable; bytes over peak GB/s for groups without FLOPs),
    above_peak (peak_frac > 1: the calibration is too low, not the run above peak; a
    warning says so and df.attrs["above_peak"] holds the line), bound ("compute" or
    "memory"). The peaks come from `calibration` (a file), else
    dftracer-calibration.json beside an input, else the user's cache dir (see
    calibrate()); without one, attainable_gflops and peak_frac are NaN.
    df.attrs: "calibration" (peaks, host, path, or None), "group_by", "skipped", "stats".
    sort: the column the rows are ordered by, descending (NaN last, ties by self time, then key),
        and which `top` keeps: "self" (default), "count", "flops", "bytes", "gflops", "gbps",
        "ai", "attainable_gflops" or "peak_frac" (`--efficiency --sort`); else ValueError.
    from_ts, to_ts: a time window, as for summary() and `summary --efficiency --from/--to`.
    steps: a range of steps, as for summary() (`--efficiency --steps`).
    Read on this machine (no client: the roofline needs no cluster).
    """
    import json

    import pandas as pd

    if not isinstance(by, str):
        by = ",".join(by)
    if by in ("step", "rank"):  # as `summary --efficiency --by step|rank`: their views have no FLOPs
        raise ValueError(f"efficiency works with group keys (name, module, ...), not by={by!r} "
                         "(the step arg as a key: by='args.step')")
    text, stats = _module().efficiency_json(_path_list(paths), by, _top(top), _threads(threads),
                                            calibration=_fs_path(calibration) if calibration else "", sort=sort,
                                            **_limits(max_line_mib, max_document_mib),
                                            **_window(from_ts, to_ts, steps))
    doc = json.loads(text)
    columns = list(doc["group_by"]) + list(_module().EFFICIENCY_COLUMNS)
    df = pd.DataFrame(doc.pop("rows"), columns=columns)
    for c in ("gflops", "gbps", "ai", "attainable_gflops", "peak_frac"):
        df[c] = pd.to_numeric(df[c]).astype(float)
    df.attrs.update(doc)
    df.attrs["stats"] = dict(stats)
    _warn_skipped(stats)
    if doc.get("above_peak"):
        import warnings

        warnings.warn(f"{int(df['above_peak'].sum())} of the groups: {doc['above_peak']}", stacklevel=2)
    return df


def calibrate(directory=None, *, output=None, threads=None, force=False, torch=True):
    """Measures this machine's peaks as `dftracer-analyze calibrate` does (our float32
    matmul and memory triad, and torch's mm, conv2d, copy and add timed in this
    interpreter's Python, sys.executable, unless `torch` is False or $DFTRACER_PYTHON
    names another; at 1 thread and at `threads`, default every CPU; a few seconds), and
    writes them to `output`, else `directory`/dftracer-calibration.json, else
    $XDG_CACHE_HOME/dftracer/calibration.json. On a loaded machine it raises OSError
    unless `force` (then the file is marked "loaded"). Returns the written values as a
    dict (peak_gflops, peak_gbps, peak_gflops_kernel, threads, host, figures, ...)."""
    import json
    import sys

    set_python = torch and not os.environ.get("DFTRACER_PYTHON") and sys.executable
    if set_python:
        os.environ["DFTRACER_PYTHON"] = sys.executable
    try:
        return json.loads(_module().calibrate(_fs_path(directory) if directory else "",
                                              _fs_path(output) if output else "", _threads(threads),
                                              force=bool(force), torch=bool(torch)))
    finally:
        if set_python:
            del os.environ["DFTRACER_PYTHON"]


def _top(top):
    if top is None:
        return 0
    if int(top) < 1:
        raise ValueError(f"top must be a positive number of groups or None, not {top!r}")
    return int(top)


def diff(a, b, by="name", top=None, threads=None, *, sort="self", max_line_mib=None, max_document_mib=None,
         from_ts=None, to_ts=None, client=None, steps=None):
    """Two runs compared group by group, as a pandas DataFrame sorted by impact.

    a, b: each a file, directory, glob or list of them (run A and run B).
    by: any key summary() accepts ("name", "module", "phase", "category", "args.<key>", ...).
    top: keep the `top` groups with the largest |self-time delta| (or `sort`'s; None: all).
    sort: "self" (default), "total" or "count": rows by the |delta| of that column, descending
        (ties by |self delta|, |total delta|, key), as `diff --sort`; else ValueError.

    Columns: the key column(s), then count_a, count_b, count_delta, self_a_us, self_b_us,
    self_delta_us, self_delta_pct, total_a_us, total_b_us, total_delta_us, total_delta_pct
    (delta = B - A; pct relative to A, NaN where A is 0), within_noise (bool: the self
    time changed by no more than noise_pct, in a group found in both runs). A group found
    in one run only has 0 in the other. Rows by |self_delta_us|, then |total_delta_us|, then
    key: the same numbers and order as `dftracer-analyze diff A B --format json`.
    df.attrs["totals"]: groups, traced_a_us, traced_b_us (each run's summed self time),
    total_a_us, total_b_us, complete_events_a, complete_events_b; noise_pct (the larger
    run's step-to-step spread, %; NaN when a run has fewer than 2 steps: no row marked) and
    spread_a, spread_b (steps, step_outliers, step_median_us, step_spread_pct: the JSON's
    a / b), from each run's steps (steps()), as the command;
    df.attrs["stats_a"], df.attrs["stats_b"]: what was read and skipped on each side.
    from_ts, to_ts: a time window, as for summary() and `diff --from/--to`; a relative bound
    is each run's own ("+10s": the first ten seconds of A and of B).
    client: as for summary(): both runs are read on the workers as partial summaries and
    joined on the client; the same numbers.
    """
    import pandas as pd

    if not isinstance(by, str):
        by = ",".join(by)
    limits = _limits(max_line_mib, max_document_mib)
    top = _top(top)
    threads = _threads(threads)
    window = _window(from_ts, to_ts, steps)  # steps: the same range of each run's steps, as `diff --steps`
    client = _dask().resolve_client(client)
    if client is None:
        raw = _module().diff(_path_list(a), _path_list(b), by, top, threads, **limits, **window, sort=sort)
    else:
        _dask().check_window(_module(), window)  # bad text fails here, before any work
        _module().combine_partials([], by, 0, "self")  # a bad key fails here, before any work
        _module().diff_partials([], [], by, 0, sort=sort)  # a bad sort too
        fa, fb = files(a), files(b)
        raw = _dask().diff(client, _module(), fa, fb, by, top, limits, sort=sort, steps_text=window.get("steps"),
                           windows=[_dask().window_of(client, _module(), f, window, limits) for f in (fa, fb)])
    order = list(raw["keys"]) + list(DIFF_COLUMNS) + ["within_noise"]
    df = pd.DataFrame({c: raw["columns"][c] for c in order}, columns=order)
    df["within_noise"] = df["within_noise"].astype(bool)
    df.attrs["totals"] = dict(raw["totals"])
    df.attrs["stats_a"] = dict(raw["stats_a"])
    df.attrs["stats_b"] = dict(raw["stats_b"])
    _warn_skipped(raw["stats_a"])
    _warn_skipped(raw["stats_b"])
    return df


def module_tree(paths, threads=None, *, sort="total", top=None, max_line_mib=None, max_document_mib=None,
                from_ts=None, to_ts=None, client=None, steps=None):
    """Self and total time per nn.Module path (args.module) as a tree, one row a node.

    Rows depth-first (a parent before its children, siblings by total time), as
    `dftracer-analyze summary --by module --tree` prints them. Every dotted prefix of a
    path is a node ("encoder.layer.0" under "encoder.layer" under "encoder"); forward and
    backward ops of a module land on the same node.
    Columns: path (str), depth (0 for a root), self_us (self time of the events whose
    module is exactly this path), total_us (self_us plus the children's total_us), count
    (events of this module and the modules under it), share (total_us over the tree's
    time, the roots' totals). df.attrs["totals"]: tree_us, unattributed_us and
    unattributed_events (events with no module, not in the tree), traced_us;
    df.attrs["stats"]: what was read and skipped.
    sort: "total" (default), "self" or "count": the order of siblings (and roots), descending,
        then path (`--tree --sort`); else ValueError.
    top: keep the `top` first children of every node and the `top` first roots, each with
        its subtree (None: all; `--tree --top`); the totals and shares of the nodes kept are
        unchanged. attrs["totals"]["left_out"]: the nodes cut (each with its subtree).
    from_ts, to_ts: a time window, as for summary() and `summary --by module --tree --from/--to`.
    client: as for summary(): partial summaries by module read on the workers, the tree
    built on the client; the same numbers.
    """
    import pandas as pd

    limits = _limits(max_line_mib, max_document_mib)
    threads = _threads(threads)
    client = _dask().resolve_client(client)
    window = _window(from_ts, to_ts, steps)  # steps: as for summary() (`--tree --steps`)
    top = _top(top)
    _module().module_tree_partials([], sort, top)  # a bad sort fails here, before any work
    if client is None:
        raw = _module().module_tree(_path_list(paths), threads, **limits, **window, sort=sort, top=top)
    else:
        inputs = files(paths)
        raw = _dask().module_tree(client, _module(), inputs, limits, sort=sort, top=top,
                                  window=_dask().window_of(client, _module(), inputs, window, limits),
                                  steps_text=window.get("steps"))
    df = pd.DataFrame({c: raw["columns"][c] for c in MODULE_TREE_COLUMNS}, columns=list(MODULE_TREE_COLUMNS))
    df.attrs["totals"] = dict(raw["totals"])
    df.attrs["stats"] = dict(raw["stats"])
    _warn_skipped(raw["stats"])
    return df


def _int_option(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {v!r}")
    return int(v)


def memory(paths, *, max_line_mib=None, max_document_mib=None, from_ts=None, to_ts=None, steps=None):
    """The memory counter tracks of `dftracer-analyze memory` (memory capture:
    DFTRACER_MEMORY=1): a pandas DataFrame, one row per process and device
    (pid, device, samples, peak_bytes, peak_ts_us, first_bytes, last_bytes);
    attrs "out_of_order", "bad_samples" and "stats"; "planned": the compiled
    graphs' planned peaks (a DataFrame: pid, graph, phase, calls, peak_bytes,
    peak_node, peak_op, modules), apart from the measured rows; and what holds
    each peak (from the capture's per-block events):

    "peaks": a DataFrame, one row per process and device: pid, device,
        peak_bytes, peak_ts_us, traced_bytes (the blocks live at the peak),
        before_trace_bytes (live before the trace began: peak_bytes minus
        traced_bytes), blocks.
    "holders": a DataFrame of those blocks by who allocated them: pid, device,
        by ("op", "module", "phase" or "step"), key ("" none), blocks, bytes,
        rest (True: the row "(rest)" summing the keys past the top 10). Per
        (pid, device, by) the bytes sum to traced_bytes.
    "peaks_without_composition": a DataFrame (pid, device, peak_ts_us,
        peak_bytes) of the peaks whose allocation is not in the trace (the
        writer dropped it): the peak is known from the counter track, what
        holds it is not given.
    "block_events": what the replay skipped or could not pair (counts: bad,
        free_without_alloc, alloc_over_live, late, never_freed).

    from_ts, to_ts: a time window, as for summary() and `memory --from/--to`:
        only the samples and block events with from_ts <= ts < to_ts are read,
        so the peaks are the window's, and the blocks allocated before it and
        live at a peak count in its before_trace_bytes.
    steps: a range of steps, as for summary() (`memory --steps`): only their samples and
        block events are read."""
    import json

    import pandas as pd

    text, stats = _module().memory_json(_path_list(paths), **_limits(max_line_mib, max_document_mib),
                                        **_window(from_ts, to_ts, steps))
    doc = json.loads(text)
    df = pd.DataFrame(doc["series"], columns=["pid", "device", "samples", "peak_bytes", "peak_ts_us", "first_bytes",
                                              "last_bytes"])
    df.attrs["out_of_order"] = doc["out_of_order"]
    df.attrs["bad_samples"] = doc["bad_samples"]
    df.attrs["stats"] = dict(stats)
    df.attrs["planned"] = pd.DataFrame(doc.get("planned", []), columns=["pid", "graph", "phase", "calls", "peak_bytes",
                                                                       "peak_node", "peak_op", "modules"])
    peak_columns = ["pid", "device", "peak_bytes", "peak_ts_us", "traced_bytes", "before_trace_bytes", "blocks"]
    df.attrs["peaks"] = pd.DataFrame([{k: p[k] for k in peak_columns} for p in doc["peaks"]], columns=peak_columns)
    holders = [{"pid": p["pid"], "device": p["device"], "by": by, "key": r["key"], "blocks": r["blocks"],
                "bytes": r["bytes"], "rest": bool(r.get("rest", False))}
               for p in doc["peaks"] for by in ("op", "module", "phase", "step") for r in p["by_" + by]]
    df.attrs["holders"] = pd.DataFrame(holders, columns=["pid", "device", "by", "key", "blocks", "bytes", "rest"])
    unheld_columns = ["pid", "device", "peak_ts_us", "peak_bytes"]
    df.attrs["peaks_without_composition"] = pd.DataFrame(doc.get("peaks_without_composition", []),
                                                         columns=unheld_columns)
    df.attrs["block_events"] = dict(doc["block_events"])
    return df


def io(paths, threads=None, *, small_bytes=4096, bin_ms=1000, max_line_mib=None, max_document_mib=None,
       from_ts=None, to_ts=None, steps=None):
    """The I/O view of `dftracer-analyze io`: what the POSIX and STDIO events say, as a
    dict of pandas DataFrames (the same numbers as `io --format json`, from the same C++).

    "total": a dict with IO_COLUMNS (ops: every I/O call; reads/writes: data calls;
        read_bytes/write_bytes: their `ret` when positive; small_reads/small_writes: data
        calls that moved fewer than `small_bytes`; time_us: summed durations).
    "by_file" (key column "file": the path its FH record names, else "fhash:<hash>"),
    "by_call" ("call": the event name), "by_process" ("pid"): one row per key with
        IO_COLUMNS, longest time_us first. by_file has a "kind" column too: "data"
        (the program's files), "runtime" (Python's imports, shared libraries,
        /proc, trace files) or "checkpoint" (a file a call inside a checkpoint
        event touched: docs/analyzer.md); the command's table lists the data
        files and sums the runtime's in one line.
    "by_kind": {"data": {...}, "runtime": {...}, "checkpoint": {...}}, IO_COLUMNS summed by kind.
    "bandwidth": one row per `bin_ms` bin holding data calls: t_s (seconds since the
        first bin), read_bytes, write_bytes, read_mib_s, write_mib_s.
    "small_bytes", "bin_s": the options used; "stats": what was read and skipped.
    from_ts, to_ts: a time window, as for summary() and `io --from/--to`.
    steps: a range of steps, as for summary() (`io --steps`).
    """
    import json

    import pandas as pd

    text, stats = _module().io_json(_path_list(paths), _threads(threads), _int_option("small_bytes", small_bytes),
                                    _int_option("bin_ms", bin_ms), **_limits(max_line_mib, max_document_mib),
                                    **_window(from_ts, to_ts, steps))
    doc = json.loads(text)
    out = {"total": doc["total"], "small_bytes": doc["small_bytes"], "bin_s": doc["bandwidth"]["bin_s"],
           "by_kind": doc["by_kind"]}
    for table, key in (("by_file", "file"), ("by_call", "call"), ("by_process", "pid")):
        rows = [{key: k, **v} for k, v in doc[table].items()]
        df = pd.DataFrame(rows, columns=[key, *IO_COLUMNS] + (["kind"] if table == "by_file" else []))
        out[table] = df.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)
    bins = pd.DataFrame(doc["bandwidth"]["bins"], columns=["t_s", "read_bytes", "write_bytes"])
    mib_s = 1024.0 * 1024.0 * out["bin_s"]
    bins["read_mib_s"] = bins["read_bytes"] / mib_s
    bins["write_mib_s"] = bins["write_bytes"] / mib_s
    out["bandwidth"] = bins
    out["stats"] = dict(stats)
    _warn_skipped(stats)
    return out


def device(paths, threads=None, *, max_line_mib=None, max_document_mib=None, from_ts=None, to_ts=None):
    """Device time of torch.profiler / Kineto traces, as `dftracer-analyze device`: a dict
    of pandas DataFrames, the same numbers as `device --format json`, from the same C++.

    "op", "kernel", "module", "phase", "category", "stream": one row per key with events,
    device_us, max_us, cpu_us, launch_delay_mean_us, most device time first;
    "step": one row per ProfilerStep (step, file, pid, span_us, gpu_busy_us,
    gpu_idle_us, idle_share, device_us, events, launch_delay_mean_us, bound);
    "totals": device_events, device_us, busy_us, launch_delay_mean_us, linked;
    "stats": what was read and skipped. docs/analyzer.md "Device time" defines each figure.
    from_ts, to_ts: a time window, as for summary() and `device --from/--to`.
    """
    import json

    import pandas as pd

    text, stats = _module().device_json(_path_list(paths), _threads(threads), **_limits(max_line_mib, max_document_mib),
                                        **_window(from_ts, to_ts))
    doc = json.loads(text)
    out = {t: pd.DataFrame(doc.pop(t)) for t in ("op", "kernel", "module", "phase", "category", "stream", "step")}
    doc.pop("skipped", None)
    out["totals"] = doc
    out["stats"] = dict(stats)
    _warn_skipped(stats)
    return out


def _flag(value, name):
    """A yes/no option: a bool (or 0/1), never any truthy value."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)) or \
            getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy's bool
        return bool(value)
    raise TypeError(f"{name} must be True or False, not {value!r}")


def merge(paths, output, threads=None, *, max_line_mib=None, max_document_mib=None, epoch_ts=False, from_ts=None,
          to_ts=None, steps=None):
    """Merge traces into one strict-JSON Chrome trace (`output` .json or .json.gz) for
    Perfetto / chrome://tracing; returns {"events_written", "names_added", "stats", "rank_note"}
    (rank_note: with rank metadata, how many ranks were merged, how well their clocks are
    aligned, and which ranks are missing or cut short; "" otherwise).
    epoch_ts: keep epoch timestamps (`merge --epoch-ts`; default: microseconds from
    otherData.ts_base_us). from_ts, to_ts: a time window, as for summary() and `merge --from/--to`;
    steps: a range of steps, as for summary() (`merge --steps`)."""
    r = _module().merge(_path_list(paths), _fs_path(output), _threads(threads),
                        **_limits(max_line_mib, max_document_mib), epoch_ts=_flag(epoch_ts, "epoch_ts"),
                        **_window(from_ts, to_ts, steps))
    _warn_skipped(r["stats"])
    return r


def events(paths, batch_size=65536, *, format="pandas", ph=None, raw_args=True, threads=1, max_line_mib=None,
           max_document_mib=None, from_ts=None, to_ts=None, client=None):
    """Iterate over every decoded event of PATHS in batches of at most `batch_size` events.

    format="pandas" (default): each batch is a DataFrame; the string columns (name, cat,
        ph, phase, module, ...) are pandas Categoricals (each distinct value is stored once
        per batch; missing or empty values are NaN; use .astype(str) for plain str).
    format="numpy": each batch is a dict of NumPy arrays; string columns are object
        arrays of str (None where missing). No pandas needed.
    Columns: EVENT_COLUMNS -- name, cat, ph, pid, tid (int64; 0 when not numeric),
        ts, dur (float64 microseconds, the Chrome-trace unit, NaN when absent: a
        double of epoch microseconds holds only ~0.25 us, so for exact times use)
        ts_ns, dur_ns (int64 nanoseconds, exact as written; pandas: nullable Int64,
        <NA> when absent; numpy: 0 when absent, see ts); the well-known args
        phase, module, graph, step, epoch, source, shapes, dtype (strings as
        written; a list as its JSON text) and flops, bytes (float64, NaN when
        absent); args (the event's args object as raw JSON text, "" when it has
        none; left out with raw_args=False, which also makes reading faster).
    ph: keep only events with this "ph" ("X" for complete events, "M" for metadata).
    threads: reader threads (None: all cores; else 1 to 1024, as for summary()).
        With 1 (default) batches follow file order (except
        lines at the seams of parallel gzip pieces, which come at the end); with
        more, batches of different file pieces interleave.
    from_ts, to_ts: a time window, as for summary(): only the events with
        from_ts <= ts < to_ts (metadata always), the events `merge --from/--to` writes.

    Reading runs on a background thread, at most two batches ahead of the
    consumer, so memory is bounded by the batch size and not by the trace.
    Returns an EventBatches (an iterator and context manager); its .stats holds
    the counts of what was read and skipped once iteration is over.

    format="dask": a dask.dataframe.DataFrame of all events instead, one partition per
        batch of files or range of gzip members (in input order), read on the workers
        of `client` (or $DFTRACER_DASK_SCHEDULER's, else dask's default scheduler) when
        computed. Same columns; string columns hold str (None where missing), ts_ns and
        dur_ns are Int64. batch_size and threads do not apply.
    """
    window = _window(from_ts, to_ts)
    if format == "dask":
        client = _dask().resolve_client(client)
        meta = _frame_of_arrays({c: [] for c in EVENT_COLUMNS if raw_args or c != "args"})
        limits = _limits(max_line_mib, max_document_mib)
        inputs = files(paths)
        return _dask().events(client, _module(), inputs, bool(raw_args), ph or "", limits, meta,
                              window=_dask().window_of(client, _module(), inputs, window, limits))
    if format not in ("pandas", "numpy"):
        raise ValueError(f"format must be 'pandas', 'numpy' or 'dask', not {format!r}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size!r}")
    stream = _module().open_events(_path_list(paths), int(batch_size), _threads(threads),
                                   bool(raw_args), ph or "", **_limits(max_line_mib, max_document_mib), **window)
    return EventBatches(stream, format)


class EventBatches:
    """Iterator over batches of events (see events()). Close it, or use it in a `with`
    block, to stop reading early; iterating to the end closes it by itself."""

    def __init__(self, stream, format):
        self._stream = stream
        self._format = format
        if format == "pandas":
            import numpy as np
            import pandas as pd

            self._pd = pd
            self._np = np
        self._stats = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._stream is None:
            raise StopIteration
        raw = self._stream.next_batch()
        if raw is None:
            self._stats = dict(self._stream.stats)
            self._stream = None
            _warn_skipped(self._stats, stacklevel=3)
            raise StopIteration
        return self._frame(raw) if self._format == "pandas" else self._arrays(raw)

    @property
    def stats(self):
        """Counts of files, events read and input skipped (malformed, bad_fields, skipped_lines,
        truncated_members, ..., problems); None until the iteration has ended."""
        return self._stats

    def close(self):
        """Stop reading; the background thread skims the rest of the input without decoding it."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _frame(self, raw):
        pd = self._pd
        cols = {}
        for c in EVENT_COLUMNS:
            if c not in raw:
                continue
            v = raw[c]
            if c in _STRING_COLUMNS:
                codes, values = v
                v = pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype=object), validate=False)
            elif c in _NS_COLUMNS:
                v = pd.arrays.IntegerArray(v, self._np.isnan(raw[_NS_COLUMNS[c]]))  # <NA> where absent
            cols[c] = v
        return pd.DataFrame(cols, copy=False)

    @staticmethod
    def _arrays(raw):
        import numpy as np

        out = {}
        for c in EVENT_COLUMNS:
            if c not in raw:
                continue
            v = raw[c]
            if c in _STRING_COLUMNS:
                codes, values = v
                table = np.empty(len(values) + 1, dtype=object)
                table[:-1] = values
                table[-1] = None  # code -1
                v = table[codes]
            elif c == "args":
                a = np.empty(len(v), dtype=object)
                a[:] = v
                v = a
            out[c] = v
        return out


from ._ranks import RankAnalysis, ranks  # noqa: E402  (uses the helpers above)
from ._report import report  # noqa: E402
def _frame_of_arrays(arrays):
    """A pandas DataFrame of a numpy-format batch with plain dtypes (str objects, Int64
    ns columns with <NA> where absent): the same dtypes in every Dask partition."""
    import numpy as np
    import pandas as pd

    cols = {}
    for c in EVENT_COLUMNS:
        if c not in arrays:
            continue
        v = arrays[c]
        if c in _STRING_COLUMNS or c == "args":
            v = pd.array(np.asarray(v, dtype=object), dtype=object)
        elif c in _NS_COLUMNS:
            v = pd.array(np.asarray(v, dtype=np.int64), dtype="Int64")
            v[np.isnan(np.asarray(arrays[_NS_COLUMNS[c]], dtype=np.float64))] = pd.NA
        else:
            v = np.asarray(v, dtype=np.int64 if _KINDS[c] == "id" else np.float64)
        cols[c] = v
    return pd.DataFrame(cols)


def to_parquet(paths, out_dir, *, client=None, max_line_mib=None, max_document_mib=None,
               piece_bytes=None, from_ts=None, to_ts=None):
    """Writes every event of PATHS as a Parquet dataset under `out_dir` (which must not
    exist or be empty: else FileExistsError), one row per event, hive-partitioned by
    rank (out_dir/rank=<rank>/*.parquet) when the traces carry rank metadata (every
    input file has a `rank` metadata event, as torchrun jobs write), else by pid
    (out_dir/pid=<pid>/*.parquet). Columns: see dftracer.analyze.parquet. With a
    Dask `client` (or $DFTRACER_DASK_SCHEDULER) the files' rank metadata is found and
    the files and member ranges are written by the workers (out_dir must then be on a
    file system they share). from_ts, to_ts: a time window, as for summary() and
    `export --from/--to`: the events events(from_ts=, to_ts=) gives (metadata always).
    Returns {"rows": events written, "files": input files, "partitioning": "rank" or
    "pid", "stats": read stats}."""
    from . import parquet

    limits = _limits(max_line_mib, max_document_mib)
    inputs = files(paths)
    window = _window(from_ts, to_ts)
    dist = _dask()
    dist.check_window(_module(), window)  # bad text fails before the output directory is made
    out_dir = os.path.abspath(os.fsdecode(out_dir))
    client = dist.resolve_client(client)
    window = dist.window_of(client, _module(), inputs, window, limits)
    parquet.check_output_dir(out_dir)
    kwargs = {} if piece_bytes is None else {"piece_bytes": int(piece_bytes)}
    pieces = dist.plan_pieces(_module(), inputs, dist._n_workers(client) if client is not None else 1,
                              split_members=client is not None, **kwargs)
    jobs = []
    for p in pieces:
        if p[0] == "files":
            jobs.extend((f, 0, os.path.getsize(f)) for f in p[1])
        else:
            jobs.append((p[1], p[3], p[4]))
    # Each file's {pid: rank} first: a rank may be written anywhere in a file, and the
    # pieces of a split file need it too. By rank only when every file has one.
    if client is None:
        file_ranks = [parquet.process_ranks(f, limits) for f in inputs]
    else:
        file_ranks = client.gather(client.map(parquet.process_ranks, inputs, limits=limits, pure=False))
    by_rank = all(file_ranks)
    ranks_of = dict(zip(inputs, file_ranks))
    args = [(i, path, b, e, out_dir, limits, ranks_of[path] if by_rank else None, window)
            for i, (path, b, e) in enumerate(jobs)]
    if client is None:
        results = [parquet.write_piece(*a) for a in args]
    else:
        results = client.gather(client.map(lambda a: parquet.write_piece(*a), args, pure=False))
    stats = {}
    for _, st in results:
        for k, v in st.items():
            stats[k] = v if isinstance(v, str) else stats.get(k, 0) + v
    stats["problems"] = "; ".join(st["problems"] for _, st in results if st.get("problems"))
    _warn_skipped(stats)
    return {"rows": sum(r for r, _ in results), "files": len(inputs), "partitioning": "rank" if by_rank else "pid",
            "stats": stats}
