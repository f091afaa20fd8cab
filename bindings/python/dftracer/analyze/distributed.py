"""dftracer.analyze on a Dask cluster: the C++ reader mapped over pieces of the
input on the workers, partial aggregates combined on the client.

    import dftracer.analyze as da
    client = da.local_cluster(n_workers=2)             # or dask.distributed.Client("tcp://host:8786")
    df = da.summary("runs/", by="name", client=client)  # same numbers as without a client
    ddf = da.events("runs/", format="dask", client=client)
    da.to_parquet("runs/", "runs.parquet", client=client)

A piece is a batch of whole files, or one range of gzip members of a large
.pfw.gz (its .idx lists the members). For summary() a worker returns only
bytes of aggregates (partial_summary.hpp): exact integer counts and sums, the
mergeable log histograms behind p50/p95, and the self-time runs of each thread
that may still nest with another piece's events; the client's combine step
resolves those, so a thread split over pieces gets the self times of a single
read. steps() needs whole processes, so it maps over whole files only.

Environment: DFTRACER_DASK_SCHEDULER=ADDRESS makes every call without a client
use a client of that scheduler.
"""
import json
import os

SCHEDULER_ENV = "DFTRACER_DASK_SCHEDULER"
# A piece of work: about this many compressed bytes...
DEFAULT_PIECE_BYTES = 32 << 20
# ...or this share of the files, so every worker gets several pieces.
_PIECES_PER_WORKER = 4

_clients = {}


def local_cluster(n_workers=2, threads_per_worker=1, **kwargs):
    """A dask.distributed Client of a new LocalCluster on this machine: `n_workers`
    worker processes of `threads_per_worker` threads, dashboard on a free port (kwargs go to
    LocalCluster). Close it with client.close(); client.cluster.close()."""
    from dask.distributed import Client, LocalCluster

    kwargs.setdefault("dashboard_address", ":0")  # any free port: never fight over 8787
    kwargs.setdefault("processes", True)
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, **kwargs)
    return Client(cluster)


def resolve_client(client):
    """The client to use: `client` if given, else one of $DFTRACER_DASK_SCHEDULER
    (kept for later calls), else None (the local reader)."""
    if client is not None:
        return client
    address = os.environ.get(SCHEDULER_ENV, "").strip()
    return resolve_client_address(address, f"{SCHEDULER_ENV}={address}") if address else None


def resolve_client_address(address, what=None):
    """A client of the scheduler at `address`, kept for later calls; OSError (one line) when unreachable."""
    if address not in _clients:
        from dask.distributed import Client

        try:
            _clients[address] = Client(address, timeout="30s")
        except (OSError, TimeoutError) as e:
            raise OSError(f"{what or address}: cannot reach the Dask scheduler: {e}") from None
    return _clients[address]


def _n_workers(client):
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # a client without scheduler info: plan for two
        return 2


def plan_pieces(ext, files, n_workers, piece_bytes=None, split_members=True, whole_if_indexed=False):
    """The pieces of `files`: ("files", [path], [file id]) batches of whole files in
    file order, and ("range", path, file id, begin, end) for the member ranges of a
    .pfw.gz larger than piece_bytes (with split_members; not with whole_if_indexed when
    its write-time index answers the query: a worker then inflates none of it)."""
    if piece_bytes is None:
        piece_bytes = DEFAULT_PIECE_BYTES
    sizes = [os.path.getsize(f) for f in files]
    per_batch = max(1, -(-len(files) // (n_workers * _PIECES_PER_WORKER)))
    pieces, batch, ids, batch_bytes = [], [], [], 0

    def close_batch():
        nonlocal batch, ids, batch_bytes
        if batch:
            pieces.append(("files", batch, ids))
        batch, ids, batch_bytes = [], [], 0

    for i, (f, size) in enumerate(zip(files, sizes)):
        if split_members and size > piece_bytes and f.endswith(".gz") and not (
                whole_if_indexed and ext.index_answers(f)):
            ranges = ext.member_ranges(f, piece_bytes)
            if len(ranges) > 1:
                close_batch()
                pieces.extend(("range", f, i, b, e) for b, e in ranges)
                continue
        batch.append(f)
        ids.append(i)
        batch_bytes += size
        if len(batch) >= per_batch or batch_bytes >= piece_bytes:
            close_batch()
    close_batch()
    return pieces


# --- worker side: each function imports the extension where it runs --------

def _ext():
    from .. import _analyze

    return _analyze


def _bounds(window):
    """(from_ns, to_ns) as the extension's keyword arguments ({} for no window)."""
    return dict(zip(("from_ns", "to_ns"), window))


def _us_text(ns, open_value):
    """An absolute bound in ns as the exact decimal text of microseconds ("" when open)."""
    if ns == open_value:
        return ""
    sign = "-" if ns < 0 else ""
    return f"{sign}{abs(ns) // 1000}.{abs(ns) % 1000:03d}"


def _partial(piece, spans=None, *, by, limits, window=(), use_index=True, runtime=None):
    ext = _ext()
    bounds = _bounds(window)
    spans = _spans_of(spans)
    if piece[0] == "files":  # finalized .pfw.gz files answer from their .idx here (nothing inflated)
        return ext.partial_summary(piece[1], piece[2], by, 1, **limits, **bounds, use_index=use_index, spans=spans,
                                   runtime=_runtime_of(runtime))
    _, path, file_id, begin, end = piece
    return ext.partial_summary_range(path, file_id, begin, end, by, **limits, **bounds, spans=spans,
                                     runtime=_runtime_of(runtime))


def _piece_spans(pieces, chosen):
    """Each piece's step filter, as JSON text (None for none; text travels to the
    workers as it is): `chosen` ({(file id, pid): [(ts_ns, end_ns)]} over the whole
    input) as [[file's index in the piece, pid, spans]]."""
    if chosen is None:
        return [None] * len(pieces)
    out = []
    for piece in pieces:
        local = {file_id: i for i, file_id in enumerate(piece[2] if piece[0] == "files" else [piece[2]])}
        out.append(json.dumps([[local[f], pid, spans] for (f, pid), spans in chosen.items() if f in local]))
    return out


def _spans_of(text):
    """A piece's step filter from _piece_spans()' text, as the extension takes it."""
    if text is None:
        return None
    return [(f, pid, [tuple(s) for s in spans]) for f, pid, spans in json.loads(text)]


def _runtime_of(text):
    """runtime_files()' fhashes from the JSON text they travel as (a list argument of
    client.map would be taken for a collection of tasks), as the extension takes them."""
    return None if text is None else json.loads(text)


def _chosen_part(piece, text, limits, window=()):
    return piece[2], _ext().chosen_steps(piece[1], text, 1, **limits, **_bounds(window))


def _names_part(piece, limits):
    return _ext().file_names(piece[1], 1, **limits)


def _time_range(piece, limits):
    return _ext().time_range(piece[1], 1, **limits)


def _steps_part(piece, spans=None, *, limits, window=(), runtime=None):
    # steps_json takes the window as text: the client's resolved ns, exactly.
    texts = {}
    if window:
        texts = {"from_us": _us_text(window[0], -(1 << 63)), "to_us": _us_text(window[1], (1 << 63) - 1)}
    text, stats = _ext().steps_json(piece[1], 1, **limits, **texts, spans=_spans_of(spans),
                                    runtime=_runtime_of(runtime))
    return piece[2][0], text, stats


def _piece_frame(piece, raw_args, ph, limits, window=()):
    from . import _frame_of_arrays, EventBatches

    ext = _ext()
    out = []
    if piece[0] == "files":
        paths = [(f, 0, os.path.getsize(f)) for f in piece[1]]
    else:
        paths = [(piece[1], piece[3], piece[4])]
    for path, begin, end in paths:
        batches, _stats = ext.range_events(path, begin, end, 1 << 20, raw_args, ph, **limits, **_bounds(window))
        out.extend(_frame_of_arrays(EventBatches._arrays(b)) for b in batches)
    return out


def _frames_concat(frames, meta):
    import pandas as pd

    frames = [f for f in frames if len(f)]
    if not frames:
        return meta.copy()
    return pd.concat(frames, ignore_index=True)


# --- client side -----------------------------------------------------------

def window_ns(client, ext, files, from_text, to_text, limits):
    """(from_ns, to_ns) of a window's bounds (absolute microseconds, or "+1.5s" / "-2s"
    relative to the trace start / end: trace_window.hpp). For a relative bound the
    workers find the time range of their whole files (from the write-time indexes where
    they can) and the client takes the earliest start and latest end: a few numbers
    travel, never events. () when there is no window."""
    if not from_text and not to_text:
        return ()
    rng = (False, 0, 0)
    if any(ext.window_is_relative(t) for t in (from_text, to_text) if t):
        if client is None:  # events(format="dask") on dask's default scheduler, to_parquet(): read here
            found = [r for r in [ext.time_range(files, 0, **limits)] if r[0]]
        else:
            pieces = plan_pieces(ext, files, _n_workers(client), split_members=False)
            found = [r for r in client.gather(client.map(_time_range, pieces, limits=limits, pure=False)) if r[0]]
        if found:
            rng = (True, min(r[1] for r in found), max(r[2] for r in found))
    return tuple(ext.resolve_window(from_text, to_text, *rng))


def check_window(ext, window):
    """A window's texts ({"from_us", "to_us"}) checked before any work: ValueError for bad text."""
    for t in (window["from_us"], window["to_us"]):
        if t:
            ext.window_is_relative(t)


def window_of(client, ext, files, window, limits):
    """window_ns() of a window given as {"from_us", "to_us"} texts (a relative bound: `files`' own start / end)."""
    return window_ns(client, ext, files, window["from_us"], window["to_us"], limits)


# The keys a write-time index answers (src/analyze/read/index_summary.cpp).
_INDEXED_KEYS = {"name", "cat", "pid", "tid"}


def _partial_futures(client, ext, files, by, limits, piece_bytes=None, window=(), use_index=True, chosen=None,
                     runtime=None):
    # A large file whose index answers stays whole: its worker inflates none of it.
    keys = {k.strip() for k in by.split(",")}
    indexable = use_index and not window and chosen is None and keys <= _INDEXED_KEYS
    if runtime is None and "category" in keys:  # the category of an I/O call: data, or other on a runtime file
        runtime = runtime_files(client, ext, files, limits)
    pieces = plan_pieces(ext, files, _n_workers(client), piece_bytes, whole_if_indexed=indexable)
    return client.map(_partial, pieces, _piece_spans(pieces, chosen), by=by, limits=limits, window=tuple(window),
                      use_index=use_index, runtime=None if runtime is None else json.dumps(runtime), pure=False)


def partials(client, ext, files, by, limits, piece_bytes=None, window=(), use_index=True, chosen=None, runtime=None):
    """The partial aggregates (bytes) of every piece of `files`, read on the cluster;
    `window` = (from_ns, to_ns) applies a time window on the workers, `chosen`
    (chosen_steps()) a step filter; `runtime` the whole input's runtime_files()
    (found here when None and `by` holds the category)."""
    return client.gather(_partial_futures(client, ext, files, by, limits, piece_bytes, window, use_index, chosen,
                                          runtime))


def runtime_files(client, ext, files, limits):
    """The runtime's own files of the whole input (sorted fhashes: imports, libraries,
    `io`'s runtime files), whose I/O is other work, not data: each worker reads the
    FH records of its whole files, the client judges all the paths at once, as one
    read does. One more read, decoding the FH lines alone."""
    pieces = plan_pieces(ext, files, _n_workers(client), split_members=False)
    parts = client.gather(client.map(_names_part, pieces, limits=limits, pure=False))
    return ext.runtime_fhashes([tuple(name) for part in parts for name in part])


def chosen_steps(client, ext, files, limits, window, text):
    """The step filter of a range (`--steps` text) over `files`: {(file id, pid):
    [(ts_ns, end_ns)]} of the steps it picks in each process, None without a range.
    Each process's steps are found on a worker from its whole file (as steps()), a
    helper process (no model work beside one with some) keeps none, and a range that
    picks no step anywhere is a ValueError with the command's line."""
    if text is None:
        return None
    ext.pick_steps(text, 0)  # bad text fails here, before any work
    pieces = plan_pieces(ext, files, _n_workers(client), split_members=False)
    found = []
    for ids, rows in client.gather(client.map(_chosen_part, pieces, text=text, limits=limits, window=tuple(window),
                                              pure=False)):
        found += [(ids[f], pid, work, n, spans) for f, pid, work, n, spans in rows]
    if any(work for _, _, work, _, _ in found):  # as _drop_helper_steps
        found = [p for p in found if p[2]]
    chosen = {(f, pid): [tuple(s) for s in spans] for f, pid, _, _, spans in found if spans}
    if not chosen:
        raise ValueError(ext.step_range_error(text, max((n for *_, n, _ in found), default=0)))
    return chosen


def diff(client, ext, files_a, files_b, by, top, limits, piece_bytes=None, windows=((), ()), sort="self",
         steps_text=None):
    """diff()'s raw dict: each run's partial summaries read on the cluster (both runs'
    pieces queued at once), the two combined summaries joined on the client;
    `windows`: each run's (from_ns, to_ns); `steps_text`: a step range of each run."""
    chosen = [chosen_steps(client, ext, files, limits, w, steps_text)
              for files, w in ((files_a, windows[0]), (files_b, windows[1]))]
    fa = _partial_futures(client, ext, files_a, by, limits, piece_bytes, window=windows[0], chosen=chosen[0])
    fb = _partial_futures(client, ext, files_b, by, limits, piece_bytes, window=windows[1], chosen=chosen[1])
    spreads = []  # the noise estimate, as `diff`: each run's step durations and outliers (of its chosen steps' read)
    for files, window, c in ((files_a, windows[0], chosen[0]), (files_b, windows[1], chosen[1])):
        rows = steps(client, ext, files, limits, window, chosen=c, runtime=[])[0]["steps"]  # durations alone
        spreads += [[r["duration_us"] for r in rows], [bool(r["outlier"]) for r in rows]]
    return ext.diff_partials(client.gather(fa), client.gather(fb), by, top, *spreads, sort=sort)


def module_tree(client, ext, files, limits, piece_bytes=None, window=(), sort="total", top=0, steps_text=None):
    """module_tree()'s raw dict: partial summaries by module, combined into the tree."""
    chosen = chosen_steps(client, ext, files, limits, window, steps_text)
    return ext.module_tree_partials(partials(client, ext, files, "module", limits, piece_bytes, window,
                                             chosen=chosen), sort, top)


def summary(client, ext, files, by, top, sort, limits, piece_bytes=None, window=("", ""), use_index=True,
            steps_text=None):
    """summary()'s raw dict, computed on the cluster; `window` = the (from, to) bounds' texts;
    `steps_text` a step range."""
    ns = window_ns(client, ext, files, window[0], window[1], limits)
    chosen = chosen_steps(client, ext, files, limits, ns, steps_text)
    return ext.combine_partials(partials(client, ext, files, by, limits, piece_bytes, ns, use_index, chosen),
                                by, top, sort)


def steps(client, ext, files, limits, window=(), chosen=None, runtime=None):
    """steps()'s JSON document and stats, from whole files mapped over the workers;
    `window` = (from_ns, to_ns), resolved against the whole input; `chosen`
    (chosen_steps()) reads the chosen steps' events alone; `runtime`: the whole
    input's runtime_files() (found here when None)."""
    if runtime is None:
        runtime = runtime_files(client, ext, files, limits)
    pieces = [p for p in plan_pieces(ext, files, _n_workers(client), split_members=False)]
    results = client.gather(client.map(_steps_part, pieces, _piece_spans(pieces, chosen), limits=limits,
                                       window=tuple(window), runtime=json.dumps(runtime), pure=False))
    doc, stats = None, {}
    for first_id, text, st in results:
        part = json.loads(text)
        for p in part["processes"]:
            p["file_index"] += first_id
        if doc is None:
            doc = part
        else:
            doc["processes"] += part["processes"]
            doc["runs"] += part["runs"]
            doc["steps"] += part["steps"]
            doc["capped_regions"] += part["capped_regions"]
            for k, v in part["outside"].items():
                doc["outside"][k] += v
            for k, v in part["nesting"].items():
                doc["nesting"][k] += v
            doc["events"] += part["events"]
            if doc["first_step_compile_share"] is None:
                doc["first_step_compile_share"] = part["first_step_compile_share"]
        for k, v in st.items():
            stats[k] = stats.get(k, 0) + v if not isinstance(v, str) else v
    problems = [r[2]["problems"] for r in results if r[2].get("problems")]
    stats["problems"] = "; ".join(problems)
    _drop_helper_steps(doc)
    return doc, stats


def keep_step_rows(ext, doc, text):
    """steps()'s document cut to the steps a range picks in each process, as
    `summary --by step --steps` (the steps found over the whole input); ValueError
    with the command's line when it keeps none."""
    if text is None:
        return
    rows, kept, most = doc["steps"], [], 0
    at = 0
    for p in doc["processes"]:  # rows run by process, as the processes
        n = p["steps"]
        most = max(most, n)
        picked = [rows[at + i] for i in ext.pick_steps(text, n)]
        at += n
        p["steps"] = len(picked)
        kept += picked
    if not kept:
        raise ValueError(ext.step_range_error(text, most))
    doc["steps"] = kept


def category_wall(client, ext, files, limits, ns, format="json", steps_text=None):
    """`summary --by category --format FORMAT`'s text and the read stats: the processes'
    runs from steps() on whole files, the thread time from partial summaries by
    category, joined by the command's writer; `ns` = (from_ns, to_ns) or (); `steps_text`
    a step range (both read the chosen steps alone)."""
    chosen = chosen_steps(client, ext, files, limits, ns, steps_text)
    runtime = runtime_files(client, ext, files, limits)
    doc, stats = steps(client, ext, files, limits, ns, chosen=chosen, runtime=runtime)
    parts = partials(client, ext, files, "category", limits, window=ns, chosen=chosen, runtime=runtime)
    runs = doc["runs"] if doc else []
    from ._common import STEP_CATEGORIES as cats

    text = ext.category_wall_partials(parts, [r["source"] for r in runs], [r["span_us"] for r in runs],
                                      [[r[f"{c}_us"] for c in cats] for r in runs],
                                      [r["untraced_us"] for r in runs], format)
    return text, stats


def _drop_helper_steps(doc):
    """A process without model work beside one with it is a helper (a
    DataLoader worker) and has no steps, as steps.cpp decides for one read:
    a file read alone on a worker cannot see the other processes."""
    if not doc or not any(p["model_work"] for p in doc["processes"]):
        return
    helpers = {p["pid"] for p in doc["processes"] if not p["model_work"]}
    for p in doc["processes"]:
        if p["pid"] in helpers:
            p["source"], p["region"], p["steps"] = "helper", "", 0
    for r in doc["runs"]:
        if r["pid"] in helpers:
            r["source"] = "helper"
    doc["steps"] = [r for r in doc["steps"] if r["pid"] not in helpers]


def events(client, ext, files, raw_args, ph, limits, meta, piece_bytes=None, window=()):
    """A dask.dataframe of the events: one partition per piece, in input order;
    `window` = (from_ns, to_ns) kept by every piece."""
    import dask.dataframe as dd
    from dask import delayed

    pieces = plan_pieces(ext, files, _n_workers(client) if client is not None else 2, piece_bytes)
    parts = [delayed(_frames_concat)(delayed(_piece_frame)(p, raw_args, ph, limits, tuple(window)), meta)
             for p in pieces]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)
