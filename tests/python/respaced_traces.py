"""The same trace written with other JSON whitespace and key orders: what
another writer (Python's json module, a pretty-printer, a tool that sorts
keys) makes of a trace's lines. The analyzer must answer alike for each.

    respace_trace(src, dst, style)   style: one of STYLES

A JSON-lines trace keeps its framing: the same lines in the same order, `[`
and blank lines as they were, a trailing comma where the line had one; only
each event's text is written anew. A whole-document trace (Kineto's) is
written anew as one document in the style.
"""
import gzip
import json

STYLES = ("spaced", "sorted", "sorted_compact", "padded")


class _Number(str):
    """A JSON number's own text: written back unchanged (a float would round
    16-digit microsecond timestamps with decimals)."""


def _load(text):
    return json.loads(text, parse_float=_Number, parse_int=_Number)


def _write(v, style):
    item, comma, sort = (" : ", ", ", False) if style == "padded" else \
        (":", ",", True) if style == "sorted_compact" else (": ", ", ", style == "sorted")
    pad = " " if style == "padded" else ""
    if isinstance(v, dict):
        keys = sorted(v) if sort else list(v)
        body = comma.join(json.dumps(k, ensure_ascii=False) + item + _write(v[k], style) for k in keys)
        return "{" + pad + body + pad + "}" if body else "{" + pad + "}"
    if isinstance(v, list):
        body = comma.join(_write(x, style) for x in v)
        return "[" + pad + body + pad + "]" if body else "[" + pad + "]"
    if isinstance(v, _Number):
        return str.__str__(v)
    return json.dumps(v, ensure_ascii=False)


def dump(v, style):
    """`v` (as _load gives it) as JSON text in `style`: "spaced" as json.dumps
    writes by default (", " and ": "), "sorted" the same with sorted keys,
    "sorted_compact" sorted without spaces, "padded" with a space after `{`
    and `[`, before `}` and `]` and on both sides of `:`."""
    if style not in STYLES:
        raise ValueError(style)
    return _write(v, style)


def _open(path, mode):
    return gzip.open(path, mode + "t", encoding="utf-8") if str(path).endswith(".gz") else \
        open(path, mode, encoding="utf-8")


def respace_trace(src, dst, style):
    """Writes `src` to `dst` (compressed when dst ends in .gz) in `style`;
    returns how many events were rewritten."""
    with _open(src, "r") as f:
        text = f.read()
    try:
        doc = _load(text)  # a whole document (Kineto's); a JSON-lines trace is none
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        with _open(dst, "w") as f:
            f.write(dump(doc, style))
        return len(doc.get("traceEvents", []))
    out, n = [], 0
    for line in text.split("\n"):
        s = line.strip()
        comma = s.endswith(",")
        body = s[:-1].rstrip() if comma else s
        if body.startswith("{") and body.endswith("}"):
            line = dump(_load(body), style) + ("," if comma else "")
            n += 1
        out.append(line)
    with _open(dst, "w") as f:
        f.write("\n".join(out))
    return n
