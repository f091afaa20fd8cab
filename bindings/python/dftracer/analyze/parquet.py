"""Traces as a Parquet dataset (Apache Arrow via pyarrow), one row per event, so
DuckDB, Polars, Spark and Dask read them directly.

Columns: name, cat, ph (string), pid, tid (int64), ts, dur (float64 us), ts_ns,
dur_ns (int64 ns, null when absent), the well-known args (phase, module, graph,
step, epoch, source, shapes, dtype: string; flops, bytes: float64), and `args`:
the event's other args as a JSON object text (null when it has none).

Hive partitioned by rank when the traces carry rank metadata (a `"ph":"M"`
event named `rank`, as torchrun jobs write: docs/analyzer.md "Ranks"), by
process otherwise: DIR/rank=<rank>/part-<piece>-<n>.parquet (pid stays a column;
a process of such an export without rank metadata lands in
rank=__HIVE_DEFAULT_PARTITION__) or DIR/pid=<pid>/...; readers give the
partition column back from the directory names (pyarrow.dataset / DuckDB
`hive_partitioning=true`). The rank of a process may be written anywhere in its
file (a process that joins its group late), so each file's rank metadata is
found first (process_ranks, on the workers when there is a client), then the
events are written.
"""
import json
import numbers
import os

PARTITION_COLUMN = "pid"
RANK_COLUMN = "rank"


def _well_known(event_columns, kinds):
    """The args the typed columns hold (every schema column that is not top level)."""
    top = {"name", "cat", "ph", "pid", "tid", "ts", "dur", "ts_ns", "dur_ns", "args"}
    return [c for c in event_columns if c not in top and kinds.get(c) != "time_ns"]


def _rest_of_args(texts, known):
    """Each event's args without the well-known keys, as JSON text (None when nothing is left)."""
    out = []
    for t in texts:
        if not t:
            out.append(None)
            continue
        try:
            a = json.loads(t)
        except ValueError:
            out.append(t)  # kept as written: nothing is lost
            continue
        if not isinstance(a, dict):
            out.append(t)
            continue
        rest = {k: v for k, v in a.items() if k not in known}
        out.append(json.dumps(rest, separators=(",", ":"), ensure_ascii=False) if rest else None)
    return out


def table_of_arrays(arrays, event_columns, kinds):
    """One pyarrow Table from a numpy-format batch (dftracer.analyze.events(format="numpy")).

    Its buffers are Arrow's own, not views of the numpy arrays: write_dataset's
    threads release a batch when its write is done, and a numpy-backed buffer's
    release takes the GIL; one still pending when the interpreter exits makes
    that thread exit inside Arrow's C++ frames, which aborts the process
    ("terminate called without an active exception", apache/arrow#34314)."""
    import numpy as np
    import pyarrow as pa

    def own(a):
        return pa.concat_arrays([a])  # a copy into Arrow's memory

    known = set(_well_known(event_columns, kinds))
    cols = {}
    for c in event_columns:
        if c not in arrays or c == "args":
            continue
        v = arrays[c]
        k = kinds[c]
        if k == "text":
            cols[c] = pa.array(v, type=pa.string())
        elif k == "time_ns":
            absent = np.isnan(arrays[c[:-3]])
            cols[c] = own(pa.array(v, type=pa.int64(), mask=absent))
        elif k == "id":
            cols[c] = own(pa.array(v, type=pa.int64()))
        else:
            cols[c] = own(pa.array(v, type=pa.float64()))
    cols["args"] = pa.array(_rest_of_args(arrays.get("args", [None] * len(arrays["name"])), known),
                            type=pa.string())
    return pa.table(cols)


def _rank_value(args_text):
    """args.value of a `rank` metadata event as an int (None when it is not one)."""
    try:
        v = json.loads(args_text).get("value") if args_text else None
    except (ValueError, AttributeError):
        return None
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else None


def process_ranks(path, limits):
    """{pid: rank} from the rank metadata of one file (the last one of a process wins,
    as in `dftracer-analyze ranks`); {} when it has none. Runs on a Dask worker too."""
    from . import EventBatches, _module

    batches, _stats = _module().range_events(path, 0, os.path.getsize(path), 1 << 16, True, "M", **limits)
    ranks = {}
    for b in batches:
        a = EventBatches._arrays(b)
        for name, pid, args in zip(a["name"], a["pid"], a["args"]):
            if name == RANK_COLUMN:
                r = _rank_value(args)
                if r is not None:
                    ranks[int(pid)] = r
    return ranks


def write_piece(piece_id, path, begin, end, out_dir, limits, ranks=None, window=()):
    """Writes the events of one piece (a whole file as (0, size), or a member range)
    under out_dir, partitioned by pid, or by rank when `ranks` ({pid: rank} of the
    piece's file) is given; `window`: (from_ns, to_ns), the events with from_ns <= ts < to_ns
    (metadata always). Returns (rows written, read stats). Runs on a Dask worker too."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as pads

    from . import _KINDS, EVENT_COLUMNS, EventBatches, _module
    from .distributed import _bounds

    ext = _module()
    batches, stats = ext.range_events(path, begin, end, 1 << 18, True, "", **limits, **_bounds(window))
    rows = 0
    column = PARTITION_COLUMN if ranks is None else RANK_COLUMN
    for k, b in enumerate(batches):
        arrays = EventBatches._arrays(b)
        t = table_of_arrays(arrays, EVENT_COLUMNS, _KINDS)
        if t.num_rows == 0:
            continue
        if ranks is not None:
            found = [ranks.get(int(p)) for p in arrays["pid"]]
            t = t.append_column(RANK_COLUMN, pa.array([r if r is not None else 0 for r in found], type=pa.int64(),
                                                      mask=np.array([r is None for r in found], dtype=bool)))
        pads.write_dataset(t, out_dir, format="parquet", partitioning=[column],
                           partitioning_flavor="hive", basename_template=f"part-{piece_id}-{k}-{{i}}.parquet",
                           existing_data_behavior="overwrite_or_ignore")
        rows += t.num_rows
    return rows, stats


def check_output_dir(out_dir):
    """An export never writes into a directory that holds anything: one line, FileExistsError."""
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise FileExistsError(f"output exists and is not an empty directory: {out_dir}")
    os.makedirs(out_dir, exist_ok=True)
