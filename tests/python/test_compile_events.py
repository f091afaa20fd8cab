"""Compile time in the trace: torch.compile's phases under the
capture backend and Dynamo.compile are cat "compile" events on the compiling
thread, nested phase in phase, in the step that compiled and in no other."""
import json
import os

import pytest

torch = pytest.importorskip("torch")

from trace_reader import complete_events_by_thread  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# A 3-step training loop under Dynamo.compile (each step a dft_fn region with
# its step number), then a step with a new batch size: dynamic=False makes it
# a recompile. Prints the trace's events as JSON lines read back by trace_reader.
LOOP = """
    import json, sys, torch
    sys.path.insert(0, {here!r})
    import trace_reader
    from dftracer.python import dftracer, dft_fn, Dynamo, trace_eager

    log = dftracer.initialize_log({prefix!r}, None, -1)
    if {eager!r}:
        trace_eager()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    d = Dynamo("train")
    fwd = d.compile(model, dynamic=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    region = dft_fn("train")
    for step, batch in enumerate((4, 4, 4, 5)):
        d.update(step=step)
        with dft_fn("train", name="train_step", step=step):
            opt.zero_grad()
            fwd(torch.randn(batch, 8)).sum().backward()
            opt.step()
    log.finalize()
    for path in trace_reader.trace_files({tmp!r}, "ce-*.pfw*"):
        for e in trace_reader.read_trace(path):
            print(json.dumps(e))
"""


def run_loop(run_python, tmp_path, eager):
    r = run_python(LOOP.format(here=HERE, prefix=str(tmp_path / "ce"), tmp=str(tmp_path), eager=eager),
                   env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def span(e):
    return e["ts_ns"], e["ts_ns"] + e["dur_ns"]


def contains(outer, inner):
    (a0, a1), (b0, b1) = span(outer), span(inner)
    return a0 <= b0 and b1 <= a1


def parent(e, candidates):
    """The innermost of `candidates` that contains `e` (same thread)."""
    around = [c for c in candidates if c is not e and c["tid"] == e["tid"] and contains(c, e)]
    return min(around, key=lambda c: c["dur_ns"]) if around else None


def steps_of(events):
    steps = sorted((e for e in events if e.get("ph") == "X" and e["name"] == "train_step"),
                   key=lambda e: e["args"]["step"])
    assert [s["args"]["step"] for s in steps] == [0, 1, 2, 3]
    return steps


def check_no_partial_overlap(events):
    """Any two complete events of one thread are disjoint or nested."""
    for evs in complete_events_by_thread(events).values():
        open_ends = []  # ends of the open intervals, innermost last
        for e in evs:
            b0, b1 = span(e)
            while open_ends and open_ends[-1][0] <= b0:
                open_ends.pop()
            if open_ends:
                end, outer = open_ends[-1]
                assert b1 <= end, f"{e['name']} ({e['cat']}) overlaps {outer['name']} ({outer['cat']}) partially"
            open_ends.append((b1, e))


@pytest.mark.parametrize("eager", [False, True], ids=["backend", "trace_eager"])
def test_compile_events_in_compiling_steps_only(run_python, tmp_path, eager):
    events = run_loop(run_python, tmp_path, eager)
    compile_evs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "compile"]
    steps = steps_of(events)
    by_step = {s["args"]["step"]: [e for e in compile_evs if contains(s, e)] for s in steps}
    # every compile event is inside a step; steps 1 and 2 ran compiled code only
    assert sum(len(v) for v in by_step.values()) == len(compile_evs)
    assert by_step[1] == [] and by_step[2] == []
    for step in (0, 3):
        names = {e["name"] for e in by_step[step]}
        assert {"dynamo.trace", "backend_compile", "aot_autograd", "dftracer.instrument"} <= names, (step, names)
    # the first step's backward graph is compiled lazily, at the first .backward()
    assert [e["args"].get("phase") for e in by_step[0] if e["name"] == "dftracer.instrument"].count("backward") == 1

    # recompile: only in step 3, with torch's reason, around that step's dynamo.trace
    recompiles = [e for e in compile_evs if e["name"] == "recompile"]
    assert len(recompiles) == 1 and recompiles[0] in by_step[3]
    assert "size mismatch" in recompiles[0]["args"]["reason"], recompiles[0]["args"]
    trace3 = [e for e in by_step[3] if e["name"] == "dynamo.trace"]
    assert len(trace3) == 1 and contains(recompiles[0], trace3[0])

    # dynamo.trace says which frame, where, and which compile
    first = [e for e in by_step[0] if e["name"] == "dynamo.trace"]
    assert len(first) == 1
    a = first[0]["args"]
    # (torch compiles nn.Sequential's forward through its inlining wrapper,
    # external_utils.inner: the event names the function it wraps)
    assert a["frame"] == "forward" and a["file"].endswith(os.path.join("nn", "modules", "container.py")), a
    assert a["line"] > 0 and trace3[0]["args"]["frame"] == "forward", trace3[0]["args"]
    assert recompiles[0]["args"]["frame"] == "forward", recompiles[0]["args"]
    assert a["compile_id"] == "0/0" and trace3[0]["args"]["compile_id"] == "0/1"
    assert a["step"] == 0  # the active Dynamo.compile call's tags

    # nesting: our pass inside AOT autograd (forward) or the lazy backward compile,
    # AOT autograd inside the backend call, the backend call inside dynamo.trace
    for e in compile_evs:
        p = parent(e, compile_evs)
        if e["name"] == "dftracer.instrument":
            want = "aot_autograd" if e["args"]["phase"] != "backward" else "backend_compile"
            assert p is not None and p["name"] == want, (e["args"], p and p["name"])
        elif e["name"] == "aot_autograd":
            assert p is not None and p["name"] == "backend_compile"
        elif e["name"] == "backend_compile" and e["args"].get("phase") != "backward":
            assert p is not None and p["name"] in ("compile_attempt_0", "dynamo.trace")
        elif e["name"] == "dynamo.trace":  # outermost, or inside its recompile event
            assert p is None or p["cat"] != "compile" or p["name"] == "recompile", p["name"]
        elif e["name"] in ("recompile", "backend_compile"):  # outermost phases
            assert p is None or p["cat"] != "compile", (e["name"], p["name"])
    check_no_partial_overlap(events)
    if eager:  # the eager observer recorded the optimizer's ops, and no op inside a compile phase
        aten = [e for e in events if e.get("ph") == "X" and e.get("cat") == "aten"]
        assert aten
        for e in aten:
            p = parent(e, compile_evs)
            assert p is None, (e["name"], p["name"])
