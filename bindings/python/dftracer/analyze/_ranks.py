"""dftracer.analyze.ranks(): the cross-rank view of a torchrun job as
pandas DataFrames, parsed from the JSON text `dftracer-analyze ranks --format json`
prints, so the numbers are the command's own."""
import json
import os

from ._common import _limits, _module, _path_list, _threads, _warn_skipped, _window
from .distributed import SCHEDULER_ENV


class RankAnalysis:
    """The tables of `dftracer-analyze ranks`, one DataFrame each (columns in docs/analyzer.md):

    ranks        one row per process: rank, local_rank, group_rank, world_size, hostname, pid,
                 file, complete (its `end` event was read), count, self_us, total_us, share,
                 comm_us, wait_us, transfer_us, comm_calls, last_arrivals, caused_wait_us,
                 clock_offset_ns, clock_offset_uncertainty_ns
    steps        one row per (step, rank): duration_us, traced_us, comm_us = wait_us + transfer_us,
                 last_arrivals, caused_wait_us, straggler (bool)
    stragglers   one row per step: straggler (rank), caused_wait_us, max_wait_us, late_ranks
                 (space-separated ranks, worst first), slowest_us, fastest_us, absent_ranks (ranks
                 that never arrived at a collective of the whole job in the step: they ended early)
    collectives  one row per collective matched across ranks: id, step, group, name, seq, src,
                 dst (send/recv), group_size, ranks_seen, complete, last_rank, spread_us,
                 waited_us, transfer_us, bytes
    waits        one row per (collective, rank): id, step, rank, arrival_us (after the first
                 arrival), wait_us, transfer_us, dur_us, bytes, last (bool)

    info: world_size, missing_ranks, incomplete_ranks, ended_early, alignment (max_uncertainty_us,
    offsets_unknown, note), partial_collectives, unmatched_comm, duplicate_comm, events,
    skipped, traced_us, and on traces without rank metadata "note" (the line `ranks` prints
    instead of its tables: "no ranks: ..."; the tables still hold one row per process);
    stats: what was read and skipped.
    """

    TABLES = ("ranks", "steps", "stragglers", "collectives", "waits")

    def __init__(self, doc, stats):
        import pandas as pd

        for name in self.TABLES:
            table = doc.pop(name, None)
            df = pd.DataFrame(table["rows"], columns=table["columns"]) if table else None
            setattr(self, name, df)
        self.info = doc
        self.stats = dict(stats)
        for df in (getattr(self, t) for t in self.TABLES):
            if df is not None:
                df.attrs.update(doc)
                df.attrs["stats"] = self.stats

    def __repr__(self):
        n = len(self.ranks) if self.ranks is not None else 0
        return f"RankAnalysis({n} processes, world_size={self.info.get('world_size')})"


# Why ranks() does not run on Dask: matching a collective across ranks needs
# every rank's arrival time of that very call (one record per call and rank),
# and waits, stragglers and wall-time unions are computed from those records
# together. They are events, not aggregates that merge exactly; shipping them
# would send the comm events to the client anyway. So it reads here.
_LOCAL_ONLY = ("ranks() reads on this machine, not on the Dask cluster: matching collectives across ranks needs "
               "each call's per-rank arrival times, which are events, not mergeable aggregates")


def ranks(paths, threads=None, *, max_line_mib=None, max_document_mib=None, from_ts=None, to_ts=None, client=None,
          _steps=True, _sort="", _top=0):
    """Ranks, steps x ranks, stragglers per step, and every collective matched across
    ranks (who arrived last, how long the others waited, transfer time), as a
    RankAnalysis of DataFrames: the numbers of `dftracer-analyze ranks --format json`.

    Missing ranks (fewer files than world_size says), files cut short (no `end` event) and
    collectives seen on some ranks only are reported in `.info`, never an error.
    from_ts, to_ts: a time window, as for summary() and `ranks --from/--to`.
    client: not used to read (one warning line says so): the cross-rank matching needs
    per-call records of every rank, not aggregates, so this machine reads the files.
    """
    if client is not None or os.environ.get(SCHEDULER_ENV, "").strip():
        from ..python.diagnostics import warn

        warn(_LOCAL_ONLY)
    text, stats = _module().ranks_json(_path_list(paths), _threads(threads), _steps,
                                       **_limits(max_line_mib, max_document_mib), **_window(from_ts, to_ts),
                                       sort=_sort, top=_top)
    _warn_skipped(stats)
    return RankAnalysis(json.loads(text), stats)
