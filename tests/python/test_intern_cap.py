"""Bounded intern table: `log_event` with a new name on
every call keeps the process's memory bounded. Past DFTRACER_INTERN_CAP the
names are copied into each record; the trace holds every event with its own
name, and the stats count the inline names.

Each test runs in a fresh interpreter (the cap is read at init).
"""
import json
import os

from trace_reader import read_finalized, trace_files

MILLION_NAMES = r"""
import json, os, sys
from dftracer.python import dftracer
from dftracer import _core

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

log = dftracer.initialize_log(sys.argv[1] if len(sys.argv) > 1 else "TRACE", None, -1)
n = NAMES
for i in range(5000):  # past the cap, so the baseline holds the table at its cap
    log.log_event(f"op-{i}", "test", 1700000000000000 + i, 1)
_core.flush()
before = rss()
for i in range(5000, n):
    log.log_event(f"op-{i}", "test", 1700000000000000 + i, 1)
_core.flush()
growth = rss() - before
stats = _core.stats()
log.finalize()
print(json.dumps({"growth": growth, "names_inline": stats["names_inline"],
                  "cache": stats["intern_cache_size"]}))
"""


def run_names(run_python, trace_dir, names, cap):
    code = MILLION_NAMES.replace("TRACE", os.path.join(trace_dir, "t")).replace("NAMES", str(names))
    proc = run_python(code, env={"DFTRACER_INTERN_CAP": str(cap), "DFTRACER_BUFFER_SIZE": "4M",
                                 "DFTRACER_CHUNK_SIZE": "64K", "DFTRACER_DISABLE_IO": "1"},
                      timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc


def test_a_million_distinct_log_event_names_keep_memory_bounded(run_python, trace_dir):
    result, proc = run_names(run_python, trace_dir, 1_000_000, 1000)
    # Unbounded (before the cap), 10^6 names grew RSS by ~250 MB here: the
    # core's table plus the binding's str -> id cache holding every name.
    assert result["growth"] < 32 << 20, result
    assert 1_000_000 - 1000 <= result["names_inline"] <= 1_000_000, result
    assert result["cache"] <= 2000, result
    assert proc.stderr.count("DFTRACER_INTERN_CAP") == 1, proc.stderr  # one warning, once


def test_inline_names_read_back_like_interned_ones(run_python, trace_dir):
    result, _ = run_names(run_python, trace_dir, 20_000, 100)
    assert result["names_inline"] >= 20_000 - 100
    (path,) = trace_files(trace_dir)
    events = [e for e in read_finalized(path) if e.get("cat") == "test"]
    assert sorted(int(e["name"][3:]) for e in events) == list(range(20_000))
    assert all(e["dur"] == 1 and e["ph"] == "X" for e in events)
