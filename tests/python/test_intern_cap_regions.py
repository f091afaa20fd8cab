"""Bounded intern table through every Python entry point
that names an event or an arg: dft_fn regions and decorators, dft_ai nodes,
loop and generator wrappers, instants, and the keys of args dicts. A program
that makes a new name (or a new arg key) on every call keeps its memory
bounded: past DFTRACER_INTERN_CAP the name or key is copied into each event,
and the trace reads back the same. String arg values are copied into each
event whatever the cap (they never go through the table).

Each test runs in a fresh interpreter (the cap is read at init).
"""
import json
import os

import pytest

from trace_reader import read_finalized, read_trace_text, trace_files

# One event (or, for "iter", two) per call of one(i), with a name or an arg
# key that is new on every call. The script prints the RSS growth over calls
# [5000, n) -- the table is at its cap before the baseline -- and the stats.
SCRIPT = r"""
import json, os, sys
from dftracer.python import dftracer, dft_fn
from dftracer.python.ai_common import DFTracerAI
from dftracer import _core

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def noop():
    pass

def gen():
    yield 1

fn = dft_fn("test", "fixed")
KIND = "@KIND@"
if KIND == "region":
    def one(i):
        with dft_fn("test", f"r-{i}"):
            pass
elif KIND == "decorated":
    def one(i):
        fn.log(name=f"d-{i}")(noop)()
elif KIND == "flush_in_call":
    def body(i):
        fn.update(args={"i": i})
        fn.flush()  # writes the open call's event now; its return writes nothing more
    def one(i):
        fn.log(name=f"fc-{i}")(body)(i)
elif KIND == "generator":
    def one(i):
        for _ in fn.log(name=f"g-{i}")(gen)():
            pass
elif KIND == "ai":
    def one(i):
        with DFTracerAI(cat="test", name=f"a-{i}"):
            pass
elif KIND == "iter":
    def one(i):
        for _ in fn.iter([i], name=f"it-{i}", iter_name=f"k-{i}"):
            pass
elif KIND == "instant":
    def one(i):
        _core.instant(f"i-{i}", "test", {"n": i})
elif KIND == "update":
    def one(i):
        with fn:
            fn.update(args={f"k-{i}": f"v-{i}", "file": f"/data/{i}.bin"})
elif KIND == "log_event":
    def one(i):
        log.log_event("step", "test", 1700000000000000 + i, 1, {f"k-{i}": i, "file": f"/data/{i}.bin"})

log = dftracer.initialize_log(sys.argv[1] if len(sys.argv) > 1 else "@TRACE@", None, -1)
n = @N@
for i in range(min(5000, n)):
    one(i)
_core.flush()
before = rss()
for i in range(min(5000, n), n):
    one(i)
_core.flush()
growth = rss() - before
stats = _core.stats()
at_cap = isinstance(_core.name_ref("never-seen-before"), str) if hasattr(_core, "name_ref") else None
log.finalize()
print(json.dumps({"growth": growth, "names_inline": stats["names_inline"],
                  "cache": stats["intern_cache_size"], "at_cap": at_cap}))
"""


def run_kind(run_python, trace_dir, kind, n, cap):
    code = (SCRIPT.replace("@KIND@", kind).replace("@N@", str(n))
            .replace("@TRACE@", os.path.join(trace_dir, "t")))
    proc = run_python(code, env={"DFTRACER_INTERN_CAP": str(cap), "DFTRACER_BUFFER_SIZE": "4M",
                                 "DFTRACER_CHUNK_SIZE": "64K", "DFTRACER_DISABLE_IO": "1"},
                      timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc


# 10^6 distinct region names, and 10^6 distinct arg keys with as many
# distinct string values: before the cap reached regions and arg keys, each
# grew RSS by ~100-250 MB here (the core's table and the binding's str -> id
# cache holding every string).
@pytest.mark.parametrize("kind", ["region", "log_event"])
def test_a_million_distinct_names_or_keys_keep_memory_bounded(run_python, trace_dir, kind):
    result, proc = run_kind(run_python, trace_dir, kind, 1_000_000, 1000)
    assert result["growth"] < 32 << 20, result
    assert 1_000_000 - 1000 <= result["names_inline"] <= 1_000_000, result
    assert result["cache"] <= 2000, result
    assert result["at_cap"] is True, result
    assert proc.stderr.count("DFTRACER_INTERN_CAP") == 1, proc.stderr  # one warning, once


def _events(trace_dir):
    (path,) = trace_files(trace_dir)
    return [e for e in read_finalized(path) if e.get("cat") == "test"]


N = 3000
CAP = 100


def _check_names(events, prefix, ph="X", per_call=1):
    named = [e for e in events if e["name"].startswith(prefix)]
    assert sorted(int(e["name"][len(prefix):]) for e in named) == sorted(list(range(N)) * per_call)
    assert all(e["ph"] == ph for e in named)
    return named


# per call: one event; a generator's two (its yield, then its return)
@pytest.mark.parametrize("kind,prefix,per_call", [("region", "r-", 1), ("decorated", "d-", 1),
                                                  ("generator", "g-", 2), ("ai", "a-", 1)])
def test_region_names_past_the_cap_read_back_exactly(run_python, trace_dir, kind, prefix, per_call):
    result, _ = run_kind(run_python, trace_dir, kind, N, CAP)
    assert per_call * (N - CAP) <= result["names_inline"] <= per_call * N, result
    _check_names(_events(trace_dir), prefix, per_call=per_call)


def test_loop_names_and_keys_past_the_cap_read_back_exactly(run_python, trace_dir):
    result, _ = run_kind(run_python, trace_dir, "iter", N, CAP)
    # per call: two names (.iter, .yield) and the key in each of two events
    assert 4 * N - 4 * CAP <= result["names_inline"] <= 4 * N, result
    events = _events(trace_dir)
    for suffix in (".iter", ".yield"):
        named = [e for e in events if e["name"].endswith(suffix)]
        assert sorted(int(e["name"][3:-len(suffix)]) for e in named) == list(range(N))
        for e in named:
            i = int(e["name"][3:-len(suffix)])
            assert e["args"][f"k-{i}"] == 1, e


def test_instant_names_past_the_cap_read_back_exactly(run_python, trace_dir):
    result, _ = run_kind(run_python, trace_dir, "instant", N, CAP)
    assert N - CAP <= result["names_inline"] <= N, result
    for e in _check_names(_events(trace_dir), "i-", ph="i"):
        assert e["args"]["n"] == int(e["name"][2:]), e


@pytest.mark.parametrize("kind", ["update", "log_event"])
def test_arg_keys_and_string_values_past_the_cap_read_back_exactly(run_python, trace_dir, kind):
    result, _ = run_kind(run_python, trace_dir, kind, N, CAP)
    assert N - CAP <= result["names_inline"] <= N, result
    events = _events(trace_dir)
    assert len(events) == N
    seen = set()
    for e in events:
        (key,) = [k for k in e["args"] if k.startswith("k-")]
        i = int(key[2:])
        assert e["args"]["file"] == f"/data/{i}.bin", e
        assert e["args"][key] == (f"v-{i}" if kind == "update" else i), e
        seen.add(i)
    assert seen == set(range(N))


def test_inline_keys_are_written_once_with_the_last_value(run_python, trace_dir):
    # Cap 0: every new key is copied. A key given as sticky arg and again
    # while open keeps the last value (as an interned key does); a key that
    # is not a str is written as str(key); a key with quotes is escaped.
    proc = run_python(f"""
        from dftracer import _core
        from dftracer.python import dftracer, dft_fn
        log = dftracer.initialize_log({os.path.join(trace_dir, "t")!r}, None, -1)
        fn = dft_fn("test", "keys")
        fn.update(args={{"sticky-k": 1, 7: "seven"}})
        with fn:
            fn.update(args={{"sticky-k": 2, 'say "hi"': "q"}})
        print(_core.stats()["names_inline"])
        log.finalize()
    """, env={"DFTRACER_INTERN_CAP": "0", "DFTRACER_DISABLE_IO": "1"})
    assert proc.stdout.split() == ["4"], proc.stdout  # the name and three keys copied (a repeated key once)
    (path,) = trace_files(trace_dir)
    (line,) = [ln for ln in read_trace_text(path).splitlines() if '"keys"' in ln]
    pairs = json.loads(line, object_pairs_hook=lambda kv: kv)
    args = dict(pairs)["args"]
    assert [k for k, _ in args].count("sticky-k") == 1, line
    assert {k: v for k, v in dict(args).items() if k != "hhash"} == {"sticky-k": 2, "7": "seven", 'say "hi"': "q"}, line


def test_update_and_flush_inside_a_call_of_an_inline_named_function(run_python, trace_dir):
    result, _ = run_kind(run_python, trace_dir, "flush_in_call", N, CAP)
    assert N - CAP <= result["names_inline"] <= N, result
    for e in _check_names(_events(trace_dir), "fc-"):
        assert e["args"]["i"] == int(e["name"][3:]), e
