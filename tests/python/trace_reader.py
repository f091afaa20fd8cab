"""Reads dftracer trace files (.pfw and .pfw.gz) back into Python dicts.

Used by every Python test that checks what reached the file. It accepts both
finalized files (`[`, one bare event object a line, `]`; older files also
with a trailing comma on each line) and files cut short by a crash (no `]`,
a cut-off last gzip member or a half-written last line), the way Perfetto
and line-oriented tools read them.
"""
import decimal
import glob
import gzip
import json
import os
import zlib

__all__ = ["read_trace", "read_trace_text", "read_finalized", "trace_files", "read_all", "complete_events"]


def _gunzip_members(raw):
    """Decompresses a multi-member gzip, keeping every complete member.

    A cut-off last member (the process died mid-write) is dropped rather than
    raising, so what was flushed before it is still read.
    """
    out = []
    pos = 0
    while pos < len(raw):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(raw[pos:])
        except zlib.error:
            break
        if not d.eof:  # member cut short
            break
        out.append(chunk)
        consumed = len(raw) - pos - len(d.unused_data)
        pos += consumed
    return b"".join(out)


def read_trace_text(path):
    """Returns the decompressed text of a trace file."""
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".gz"):
        raw = _gunzip_members(raw)
    return raw.decode("utf-8", errors="replace")


def read_finalized(path):
    """Checks the file is a finalized trace in the format we write and
    returns its events: `[` alone on the first line, one bare JSON object a
    line (no trailing comma), `]` alone on the last line. Python's json
    accepts NaN and Infinity, which are not JSON; they are rejected here."""
    def reject(constant):
        raise ValueError(f"{path}: {constant} is not JSON")
    text = read_trace_text(path)
    if not text.endswith("\n"):
        raise ValueError(f"{path}: does not end in a newline")
    lines = text[:-1].split("\n")
    if lines[0] != "[" or lines[-1] != "]":
        raise ValueError(f"{path}: not framed by '[' and ']' lines: {lines[0][:40]!r} ... {lines[-1][:40]!r}")
    events = []
    for i, line in enumerate(lines[1:-1], start=2):
        e = json.loads(line, parse_constant=reject)  # a trailing comma raises here
        if not isinstance(e, dict):
            raise ValueError(f"{path}:{i}: not a JSON object: {line[:200]!r}")
        events.append(e)
    return events


def _with_exact_times(event):
    """Adds `ts_ns` / `dur_ns`, exact integers, beside the float `ts` / `dur`.

    A JSON float holds an epoch-microsecond `ts` only to ~0.25 us, while
    nested events end 20-30 ns apart: comparisons of nesting and order must
    use these."""
    for key in ("ts", "dur"):
        v = event.get(key)
        if isinstance(v, decimal.Decimal):
            event[key + "_ns"] = int(v * 1000)  # exact: Decimal arithmetic
            event[key] = float(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            event[key + "_ns"] = v * 1000
    return event


def _floats(obj):
    """Decimals (other than ts / dur) back to floats, as json.loads gives them."""
    if isinstance(obj, dict):
        return {k: _floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_floats(v) for v in obj]
    if isinstance(obj, decimal.Decimal):
        return float(obj)
    return obj


def read_trace(path):
    """Returns the events of one trace file as a list of dicts, in file order.
    Each event with `ts` / `dur` also gets exact integer `ts_ns` / `dur_ns`.

    Lines `[` and `]` are skipped and a trailing comma is stripped. A line that
    does not parse raises ValueError naming the file and line, except the very
    last line of a file that was cut short (no closing `]`).
    """
    lines = read_trace_text(path).split("\n")
    finalized = any(l.strip() == "]" for l in lines[-3:])
    events = []
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s in ("[", "]"):
            continue
        if s.endswith(","):
            s = s[:-1]
        try:
            e = json.loads(s, parse_float=decimal.Decimal)
            if "args" in e:
                e["args"] = _floats(e["args"])
            events.append(_with_exact_times(e))
        except ValueError as e:
            if i == last and not finalized:
                break
            raise ValueError(f"{path}:{i + 1}: not a JSON event: {e}: {line[:200]!r}") from None
    return events


def trace_files(directory, pattern="*.pfw*"):
    """Sorted list of trace files (.pfw, .pfw.gz) under `directory` (not recursive)."""
    return sorted(p for p in glob.glob(os.path.join(directory, pattern))
                  if p.endswith(".pfw") or p.endswith(".pfw.gz"))


def read_all(directory):
    """{path: [events]} for every trace file in `directory`."""
    return {p: read_trace(p) for p in trace_files(directory)}


def complete_events(events, cat=None, name=None):
    """The "ph":"X" events, optionally only those of one category and/or name."""
    return [e for e in events
            if e.get("ph") == "X"
            and (cat is None or e.get("cat") == cat)
            and (name is None or e.get("name") == name)]


def complete_events_by_thread(events):
    """The complete events with exact times, per tid, each list in nesting
    order: by start, the longer (enclosing) event first at equal starts."""
    by_tid = {}
    for e in events:
        if e.get("ph") == "X" and e.get("dur_ns") is not None:
            by_tid.setdefault(e["tid"], []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts_ns"], -e["dur_ns"]))
    return by_tid


def union_ns(intervals):
    """Nanoseconds covered by the union of (start, end) intervals."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total
