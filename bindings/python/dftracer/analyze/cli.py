"""The commands of `dftracer-analyze` that run in Python (the C++ command hands
them over, arguments unchanged: src/analyze/cli/python_delegate.cpp):

    dftracer-analyze summary --dask SCHEDULER [--workers N] [--by KEYS] [--top N]
                             [--sort self|total] [--format table|json|csv] [-o FILE]
                             [--from TS] [--to TS] [--no-index] PATH...
    dftracer-analyze export --format parquet -o DIR [--dask SCHEDULER] [--workers N] [--from TS] [--to TS] PATH...

SCHEDULER is a Dask scheduler address (tcp://host:8786) or `local` for a
LocalCluster of --workers processes (default 2) on this machine. The summary
is the C++ reader's, read on the workers and combined here, printed by the
same writers as `summary` without --dask. Errors are one line, exit 2.
"""
import argparse
import os
import sys
import warnings

from . import SkippedInputWarning, _limits, _module, files, to_parquet
from . import distributed


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as the C++ command's usage errors
        sys.stderr.write(f"dftracer-analyze: {message}\n(run 'dftracer-analyze --help' for usage)\n")
        sys.exit(2)


def _parser():
    p = _Parser(prog="dftracer-analyze", add_help=False)
    p.add_argument("command", choices=["summary", "export"])
    p.add_argument("paths", nargs="+")
    p.add_argument("--dask", default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--by", default="name")
    p.add_argument("--top", type=int, default=0)
    p.add_argument("--sort", default="self")
    p.add_argument("--format", default=None)
    p.add_argument("-o", dest="out", default=None)
    p.add_argument("--threads", type=int, default=None)  # accepted for symmetry; the workers use 1 each
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--max-line-mib", type=int, default=None)
    p.add_argument("--max-document-mib", type=int, default=None)
    p.add_argument("--from", dest="from_ts", default="")
    p.add_argument("--to", dest="to_ts", default="")
    p.add_argument("--steps", default=None)
    p.add_argument("--no-index", dest="use_index", action="store_false")  # read the events, as without --dask
    return p


def _client(address, workers):
    if not address:
        return None, None
    if address == "local":
        c = distributed.local_cluster(n_workers=workers)
        return c, c
    return distributed.resolve_client_address(address), None


def _summary(a, client):
    ext = _module()
    fmt = a.format or "table"
    if a.top < 0:
        raise ValueError(f"--top must be a positive number, not {a.top}")
    # A process's steps and the ranks' collectives need whole processes' events, not partial aggregates.
    if a.by == "step":
        raise ValueError("--by step has no --dask form: run it without --dask (Python: "
                         "dftracer.analyze.steps(paths, client=...) reads whole files on the cluster)")
    if a.by == "rank":
        raise ValueError("--by rank reads on this machine: run it without --dask")
    if a.by == "category" and (a.top or a.sort != "self"):
        raise ValueError("--by category shows every category: no --top or --sort")
    ext.combine_partials_text([], a.by, 0, a.sort, fmt)  # bad --by/--sort/--format: before any work
    limits = _limits(a.max_line_mib, a.max_document_mib)
    inputs = files(a.paths)
    for w in (a.from_ts, a.to_ts):
        if w:
            ext.window_is_relative(w)  # a bad --from/--to: before any work
    window = distributed.window_ns(client, ext, inputs, a.from_ts, a.to_ts, limits)
    if a.by == "category":  # compile vs run in wall time, as without --dask
        text, stats = distributed.category_wall(client, ext, inputs, limits, window, fmt, steps_text=a.steps)
    else:
        chosen = distributed.chosen_steps(client, ext, inputs, limits, window, a.steps)  # --steps: each process's
        parts = distributed.partials(client, ext, inputs, a.by, limits, window=window, use_index=a.use_index,
                                     chosen=chosen)
        text = ext.combine_partials_text(parts, a.by, a.top, a.sort, fmt)
        stats = ext.combine_partials(parts, a.by, 1, a.sort)["stats"]  # for the one-line report
    if a.out:
        if os.path.exists(a.out):
            raise FileExistsError(f"output exists: {a.out}")
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if stats.get("problems"):
        sys.stderr.write(f"dftracer-analyze: {stats['problems']}\n")
    return 0 if stats["events"] else 1


def _export(a, client):
    if a.format != "parquet":
        raise ValueError(f"export --format must be parquet, not {a.format!r}")
    if not a.out:
        raise ValueError("export needs -o DIR")
    # The API warns about skipped input (SkippedInputWarning); a command says it in
    # one line on stderr, as the C++ commands do, not as a warning with a source line.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SkippedInputWarning)
        r = to_parquet(a.paths, a.out, client=client, max_line_mib=a.max_line_mib,
                       max_document_mib=a.max_document_mib, from_ts=a.from_ts or None, to_ts=a.to_ts or None)
    for w in caught:
        if issubclass(w.category, SkippedInputWarning):
            sys.stderr.write(f"dftracer-analyze: {str(w.message).removeprefix('dftracer.analyze: ')}\n")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    sys.stderr.write(f"dftracer-analyze: wrote {r['rows']} events of {r['files']} files to {a.out} "
                     f"(partitioned by {r['partitioning']})\n")
    return 0 if r["rows"] else 1


def _join_window_values(argv):
    """`--from -2s` as `--from=-2s`: argparse would take "-2s" for an option."""
    out, it = [], iter(argv)
    for arg in it:
        if arg in ("--from", "--to"):
            out.append(f"{arg}={next(it, '')}")
        else:
            out.append(arg)
    return out


def _refuse_unused(a, argv):
    """An option the command would not use is an error, never dropped (as the C++ command)."""
    given = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    if a.command == "export":
        for opt in ("--by", "--top", "--sort", "--no-index"):
            if opt in given:
                raise ValueError(f"{opt}: export writes every event (no groups, order or cut)")
    if "--workers" in given and a.dask != "local":
        raise ValueError("--workers sizes the cluster of --dask local; a scheduler address has its own workers")


def main(argv=None):
    argv = _join_window_values(sys.argv[1:] if argv is None else argv)
    a = _parser().parse_args(argv)
    owned = None
    try:
        _refuse_unused(a, argv)
        if a.command == "summary" and not a.dask:
            raise ValueError("summary runs in Python only with --dask SCHEDULER")
        client, owned = _client(a.dask, a.workers)
        return _summary(a, client) if a.command == "summary" else _export(a, client)
    except (OSError, ValueError, TypeError) as e:
        sys.stderr.write(f"dftracer-analyze: error: {e}\n")
        return 2
    finally:
        if owned is not None:
            cluster = owned.cluster
            owned.close()
            cluster.close()


if __name__ == "__main__":
    sys.exit(main())
