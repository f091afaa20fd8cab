"""Traces as a Parquet dataset (Apache Arrow via pyarrow), one row per event, so
DuckDB, Polars, Spark and Dask read them directly.

Columns: name, cat, ph (string), pid, tid (int64), ts, dur (float64 us), ts_ns,
dur_ns (int64 ns, null when absent), the well-known args (phase, module, graph,
step, epoch, source, shapes, dtype: string; flops, bytes: float64), and `args`:
the event's other args as a JSON object text (null when it has none). Hive
partitioned by process: DIR/pid=<pid>/part-<piece>-<n>.parquet; readers give
`pid` back from the directory names (pyarrow.dataset / DuckDB
`hive_partitioning=true`).
"""
import json
import os

PARTITION_COLUMN = "pid"


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
    """One pyarrow Table from a numpy-format batch (dftracer.analyze.events(format="numpy"))."""
    import numpy as np
    import pyarrow as pa

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
            cols[c] = pa.array(v, type=pa.int64(), mask=absent)
        elif k == "id":
            cols[c] = pa.array(v, type=pa.int64())
        else:
            cols[c] = pa.array(v, type=pa.float64())
    cols["args"] = pa.array(_rest_of_args(arrays.get("args", [None] * len(arrays["name"])), known),
                            type=pa.string())
    return pa.table(cols)


def write_piece(piece_id, path, begin, end, out_dir, limits):
    """Writes the events of one piece (a whole file as (0, size), or a member range)
    under out_dir; returns (rows written, read stats). Runs on a Dask worker too."""
    import pyarrow.dataset as pads

    from . import _KINDS, EVENT_COLUMNS, EventBatches, _module

    ext = _module()
    batches, stats = ext.range_events(path, begin, end, 1 << 18, True, "", **limits)
    rows = 0
    for k, b in enumerate(batches):
        t = table_of_arrays(EventBatches._arrays(b), EVENT_COLUMNS, _KINDS)
        if t.num_rows == 0:
            continue
        pads.write_dataset(t, out_dir, format="parquet", partitioning=[PARTITION_COLUMN],
                           partitioning_flavor="hive", basename_template=f"part-{piece_id}-{k}-{{i}}.parquet",
                           existing_data_behavior="overwrite_or_ignore")
        rows += t.num_rows
    return rows, stats


def check_output_dir(out_dir):
    """An export never writes into a directory that holds anything: one line, FileExistsError."""
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise FileExistsError(f"output exists and is not an empty directory: {out_dir}")
    os.makedirs(out_dir, exist_ok=True)
