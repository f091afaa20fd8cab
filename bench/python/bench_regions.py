#!/usr/bin/env python3
"""Cost per traced region from Python, side by side, in one run.

    python bench/python/bench_regions.py [--side-python /tmp/pydft-venv/bin/python]

Each column runs in its own fresh interpreter (tracing state is per
process); each figure is the best of several repetitions of a loop, in ns
per region (enter + exit), minus the matching floor measured in the same
process (the empty loop for `with` blocks, a call of an undecorated
function for decorators). The side interpreter is a virtual environment with
pydftracer + its core (PyPI `dftracer`) and viztracer; create it with

    python3 -m venv /tmp/pydft-venv
    /tmp/pydft-venv/bin/pip install pydftracer dftracer viztracer

(pydftracer and this package both import as `dftracer`, so they cannot
share an environment.) Missing tools are reported, not fatal.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

N = 100_000
REPEATS = 15


def best_ns(fn, n=N, repeats=REPEATS):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter_ns()
        fn()
        best = min(best, (time.perf_counter_ns() - t) / n)
    return best


def net_ns(case, floor, n=N, repeats=REPEATS):
    """min(case) - min(floor), the two runs interleaved so that both see the
    same machine load (this matters on a shared machine)."""
    best_c = best_f = float("inf")
    for _ in range(repeats):
        best_f = min(best_f, best_ns(floor, n, 1))
        best_c = min(best_c, best_ns(case, n, 1))
    return best_c - best_f


def floor_fns(n=N):
    """The floors: an empty loop, and a loop calling an empty function."""
    rng = range(n)

    def loop():
        for _ in rng:
            pass

    def plain():
        pass

    def call():
        for _ in rng:
            plain()

    return loop, call


def floors(n=N):
    loop, call = floor_fns(n)
    return best_ns(loop, n), best_ns(call, n)


def bench_dft_api(n=N, before_each=None):
    """The pydftracer API, every form: same code for this package and for
    pydftracer (FORMS lists the rows). `before_each()` runs before each form
    (tracing on: waits until the writer has drained the previous form, so
    that no form is timed against a full buffer -- the writer's own pace)."""
    from dftracer.python import ai, dft_fn, dftracer

    rng = range(n)
    fn = dft_fn("bench")
    region = dft_fn("bench", "reused")

    @fn.log
    def traced():
        pass

    @fn.log_static
    def traced_static():
        pass

    @ai.compute.forward
    def ai_traced():
        pass

    forward = ai.compute.forward

    def ctx_new():
        for _ in rng:
            with dft_fn("bench", "region"):
                pass

    def ctx_reused():
        for _ in rng:
            with region:
                pass

    def deco():
        for _ in rng:
            traced()

    def deco_static():
        for _ in rng:
            traced_static()

    def ai_ctx():
        for _ in rng:
            with forward:
                pass

    def ai_deco():
        for _ in rng:
            ai_traced()

    def ai_start_stop():
        for _ in rng:
            forward.start()
            forward.stop()

    log = dftracer.get_instance()

    def log_event():
        for _ in rng:
            log.log_event("ev", "bench", 1, 1)

    def time_log_event():
        for _ in rng:
            t = log.get_time()
            log.log_event("ev", "bench", t, 1)

    def null_ctx():
        for _ in rng:
            with null:
                pass

    def floor_ctx():
        for _ in rng:
            with floor_cm:
                pass

    def floor_new():
        for _ in rng:
            with floor_new_cls("cat", "name"):
                pass

    def floor_new_mutable():
        for _ in rng:
            with floor_mut_cls("cat", "name"):
                pass

    loop_fn, call_fn = floor_fns(n)
    cases = {
        FORMS[0]: (deco, call_fn),
        FORMS[1]: (deco_static, call_fn),
        FORMS[2]: (ctx_reused, loop_fn),
        FORMS[3]: (ctx_new, loop_fn),
        FORMS[4]: (ai_ctx, loop_fn),
        FORMS[5]: (ai_deco, call_fn),
        FORMS[6]: (ai_start_stop, loop_fn),
        FORMS[7]: (log_event, loop_fn),
        FORMS[8]: (time_log_event, loop_fn),
    }
    try:  # this package only: CPython's floor for `with` on a C context manager
        from dftracer._core import _NullContext

        null = _NullContext()
        cases[NULL_CTX] = (null_ctx, loop_fn)
        from dftracer._core import _FloorContext

        floor_cm = _FloorContext()
        cases[FLOOR_CTX] = (floor_ctx, loop_fn)
        from dftracer._core import _FloorNewContext as floor_new_cls
        from dftracer._core import _FloorNewMutable as floor_mut_cls

        cases[FLOOR_NEW] = (floor_new, loop_fn)
        cases[FLOOR_NEW_MUTABLE] = (floor_new_mutable, loop_fn)
    except ImportError:
        pass
    out = {}
    for k, (case, floor) in cases.items():
        if before_each is not None:
            before_each()
        out[k] = net_ns(case, floor, n)
    return out


FORMS = (
    "@dft_fn(cat).log call",
    "@dft_fn(cat).log_static call",
    "with <reused dft_fn>",
    "with dft_fn(cat, name)",
    "with ai.compute.forward",
    "@ai.compute.forward call",
    "ai...forward.start()+stop()",
    "log_event(name, cat, t, d)",
    "get_time + log_event",
)
# `with` on a C context manager whose __enter__/__exit__ do nothing, written
# with ordinary tp_methods (_core._NullContext): what CPython itself costs.
NULL_CTX = "with <no-op C context manager>"
# `with` on _core._FloorContext, whose class holds unbound builtin
# __enter__/__exit__ (nothing bound or allocated): the least any `with` costs.
FLOOR_CTX = "with <unbound builtins> (floor)"
# `with C(cat, name):` with a new object per statement at the least cost (a
# one-slot free list, the floor's builtins): the floor of `with dft_fn(cat,
# name)`. CPython 3.11 specializes the class call only for an immutable class;
# the mutable one (dft_fn is mutable: user code may set or patch attributes on
# it) takes the generic call.
FLOOR_NEW = "with C(c, n), immutable (floor)"
FLOOR_NEW_MUTABLE = "with C(c, n), mutable (floor)"
# The side-by-side table: form x these columns (labels of COLUMNS below).
TABLE = ("ours-on (DFTRACER_ENABLE=1)", "ours-off", "ours-off (DFTRACER_ENABLE=0)", "before-on", "before-off",
         "pydftracer-on", "pydftracer-off")
# Column headers of the table: ours-off is tracing not started (it may start
# later: the checks run); ours-off0 is DFTRACER_ENABLE=0 (decorators return
# the function unchanged).
HEADERS = {"ours-on (DFTRACER_ENABLE=1)": "ours-on", "ours-off": "ours-off", "ours-off (DFTRACER_ENABLE=0)": "ours-off0",
           "before-on": "before-on", "before-off": "before-off", "pydftracer-on": "pydft-on",
           "pydftracer-off": "pydft-off"}


def worker(kind, trace_dir):
    out = {}
    if kind in ("ours-on", "before-on", "pydftracer-on"):
        from dftracer.python import dftracer

        log = dftracer.initialize_log(os.path.join(trace_dir, kind + ".pfw"), None, -1)
        try:
            from dftracer import _core
        except ImportError:  # pydftracer
            _core = None
        flush = getattr(_core, "flush", None)
        t0, p0 = time.thread_time_ns(), time.process_time_ns()
        out = bench_dft_api(before_each=flush)
        t1, p1 = time.thread_time_ns(), time.process_time_ns()
        if flush is not None and hasattr(_core, "stats"):
            flush()
            st = _core.stats()
            # The other threads' CPU (the writer: format, compress, index)
            # per event, and whether any form met a full buffer.
            out["(writer CPU ns per event)"] = ((p1 - p0) - (t1 - t0)) / max(st["events_written"], 1)
            out["(buffer peak MiB / cap MiB)"] = f"{st['pool_bytes_peak'] / 2**20:.0f} / {st['pool_bytes_cap'] / 2**20:.0f}"
        log.finalize()
    elif kind in ("ours-off", "before-off", "pydftracer-off"):
        out = bench_dft_api()
    elif kind == "viztracer":
        from viztracer import VizTracer, get_tracer, log_sparse

        n = 50_000
        rng = range(n)
        loop, call = floor_fns(n)

        def plain():
            pass

        # log_sparse only wraps when a tracer exists at decoration time.
        tracer = VizTracer(log_sparse=True, tracer_entries=4_000_000, verbose=0,
                           output_file=os.path.join(trace_dir, "viz.json"))

        @log_sparse
        def sparse():
            pass

        tracer.start()

        def sparse_calls():
            for _ in rng:
                sparse()

        def instants():
            for _ in rng:
                tracer.log_instant("i")

        def event_ctx():
            for _ in rng:
                with tracer.log_event("e"):
                    pass

        out["@log_sparse call"] = net_ns(sparse_calls, call, n, 5)
        out["log_instant (one event)"] = net_ns(instants, loop, n, 5)
        out["with log_event(name)"] = net_ns(event_ctx, loop, n, 5)
        tracer.stop()
        tracer.clear()
        full = VizTracer(tracer_entries=4_000_000, verbose=0,
                         output_file=os.path.join(trace_dir, "viz2.json"))

        def calls():
            for _ in rng:
                plain()

        plain_call = best_ns(calls, n, 5)
        full.start()
        traced_call = best_ns(calls, n, 5)
        full.stop()
        full.clear()
        out["function entry+exit (full tracing)"] = traced_call - plain_call
    elif kind == "torch":
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        n = 20_000
        rng = range(n)
        loop, _ = floor_fns(n)

        def rf():
            for _ in rng:
                with record_function("r"):
                    pass

        out["record_function, profiler off"] = net_ns(rf, loop, n, 5)
        with profile(activities=[ProfilerActivity.CPU]):
            out["record_function, profiler on"] = net_ns(rf, loop, n, 3)
    elif kind == "floor":
        loop, call = floors()
        out = {"empty loop iteration": loop, "plain function call + loop": call}
    print(json.dumps(out))


COLUMNS = [
    ("floor", None, {}),
    ("ours-on", None, {"DFTRACER_ENABLE": "1"}),
    ("ours-off", None, {}),
    ("ours-off", None, {"DFTRACER_ENABLE": "0"}),
    ("before-on", "before", {"DFTRACER_ENABLE": "1"}),
    ("before-off", "before", {}),
    ("pydftracer-on", "side", {"DFTRACER_ENABLE": "1"}),
    ("pydftracer-off", "side", {"DFTRACER_ENABLE": "0"}),
    ("viztracer", "side", {}),
    ("torch", None, {}),
]


def _default_side_python():
    for p in ("/tmp/pydft-venv/bin/python", os.path.expanduser("~/pydft-venv/bin/python")):
        if os.path.exists(p):
            return p
    return "/tmp/pydft-venv/bin/python"


def print_table(results):
    """Every pydftracer form, ours and pydftracer's, tracing on and off."""
    cols = [c for c in TABLE if c in results and "error" not in results[c]]
    if not cols:
        return
    print("\n## every form side by side, ns per region (net of the floor)")
    print(f"  {'form':32s}" + "".join(f"{HEADERS[c]:>12s}" for c in cols))
    for form in FORMS + (NULL_CTX, FLOOR_CTX, FLOOR_NEW, FLOOR_NEW_MUTABLE):
        cells = "".join(f"{results[c].get(form, float('nan')):12.1f}" for c in cols)
        print(f"  {form:32s}{cells}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side-python", default=_default_side_python(),
                    help="interpreter with pydftracer, dftracer (PyPI) and viztracer")
    ap.add_argument("--before-python", help="interpreter with another build of this package (the before-on / "
                    "before-off columns, e.g. the main branch's): a change measured beside the old code in one run")
    ap.add_argument("--worker")
    ap.add_argument("--trace-dir")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--columns", help="comma-separated kinds to run (floor, ours-on, ours-off, before-on, "
                    "before-off, pydftracer-on, pydftracer-off, viztracer, torch); default all (before-* "
                    "with --before-python)")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.trace_dir)
        return
    results = {}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    with tempfile.TemporaryDirectory() as td:
        only = set(a.columns.split(",")) if a.columns else None
        for kind, interp, extra in COLUMNS:
            if only is not None and kind not in only or interp == "before" and not a.before_python:
                continue
            label = kind + ("" if not extra or kind.startswith(("pydftracer", "before")) else
                            " (" + ",".join(f"{k}={v}" for k, v in extra.items()) + ")")
            python = {"side": a.side_python, "before": a.before_python}.get(interp, sys.executable)
            if not os.path.exists(python):
                results[label] = {"error": f"{python} not found (see --help to create it)"}
                continue
            env = dict(base_env, **extra)
            env["PYTHONPATH"] = ""
            p = subprocess.run([python, os.path.abspath(__file__), "--worker", kind, "--trace-dir", td],
                               env=env, capture_output=True, text=True, cwd=td)
            if p.returncode != 0:
                results[label] = {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
            else:
                results[label] = json.loads(p.stdout.strip().splitlines()[-1])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# ns per region (enter + exit), best of {REPEATS} minus the floor measured interleaved; {os.cpu_count()} CPUs, load {load:.1f}")
    for label, res in results.items():
        print(f"\n## {label}")
        if "error" in res:
            print(f"  not measured: {res['error']}")
            continue
        for k, v in res.items():
            print(f"  {k:40s} {v:8.1f}" if isinstance(v, float) else f"  {k:40s} {v:>8s}")
    print_table(results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
