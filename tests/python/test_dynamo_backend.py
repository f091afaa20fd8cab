"""The capture backend is aot_eager plus a graph pass: after instrumenting a
graph it hands it to torch's own boxed_nop, so what torch 2.13 does there
(serializable output code for the AOT autograd cache, DebugMode's
interpreter) holds for our backend too."""
import json

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend  # noqa: E402

from test_dynamo_helpers import check_counts, op_events, traced  # noqa: E402
from trace_reader import read_trace, trace_files  # noqa: E402


def test_bundled_autograd_cache(run_python, tmp_path):
    """With the AOT autograd cache bundling compiled artifacts, the cache
    needs the compiler's OutputCode (boxed_nop returns one): a copy of
    boxed_nop that returns a plain function makes torch.compile raise
    "expected OutputCode". Two processes in a row (the second may find the
    cache): outputs and grads equal eager's, every call traced. Skipped where
    torch's own aot_eager cannot bundle either (torch 2.11: its boxed_nop
    returns a plain function)."""
    code = f"""
        import json, sys, torch
        sys.path.insert(0, {str(__import__("os").path.dirname(__file__))!r})
        from dftracer.python import dftracer_dynamo_backend
        from dftracer.python.dynamo import instrumented_graphs
        from test_dynamo_helpers import check_counts, op_events, traced

        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        ref.load_state_dict(m.state_dict())
        x = torch.randn(5, 3)
        with torch._functorch.config.patch(force_autograd_cache=True, bundled_autograd_cache=True):
            try:  # torch's own aot_eager, on another graph
                torch.compile(torch.nn.Linear(2, 2), backend="aot_eager")(torch.randn(1, 2)).sum().backward()
            except AssertionError as e:
                if "expected OutputCode" not in str(e):
                    raise
                print(json.dumps({{"torch_cannot": str(e)}}))
                sys.exit(0)
            c = torch.compile(m, backend=dftracer_dynamo_backend)
            with traced({str(tmp_path)!r}, "run@RUN@") as events:
                out = c(x)
                out.sum().backward()
        want = ref(x)
        want.sum().backward()
        calls = check_counts(events, instrumented_graphs())
        print(json.dumps({{"same": torch.equal(out, want) and all(
                               torch.equal(p.grad, q.grad) for p, q in zip(m.parameters(), ref.parameters())),
                           "calls": sorted(calls.values()), "ops": len(op_events(events))}}))
    """
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    for i in range(2):
        r = run_python(code.replace("@RUN@", str(i)), env=env)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if "torch_cannot" in res:
            pytest.skip(f"torch's own aot_eager cannot bundle the AOT autograd cache here: {res['torch_cannot']}")
        assert res["same"] and res["calls"] == [1, 1] and res["ops"] > 0, r.stderr


def test_debug_mode_interpreter_runs_traced_graphs(tmp_path):
    """DebugMode(run_compile_with_interpreter=True) runs compiled graphs op by
    op through its interpreter (boxed_nop's doing): it sees our graph's ops,
    and the hook nodes still record every op event."""
    from torch.utils._debug_mode import DebugMode

    torch._dynamo.reset()
    m = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    with traced(tmp_path) as events:
        c = torch.compile(m, backend=dftracer_dynamo_backend)
        with DebugMode(run_compile_with_interpreter=True) as dm:
            out = c(x)
    torch.testing.assert_close(out, m(x), rtol=0, atol=0)
    log = dm.debug_string()
    assert "aot_eager region (compile)" in log and "addmm" in log, log
    check_counts(events, [])
    assert [e["name"] for e in op_events(events)] == ["function.t.default", "function.addmm.default"]


def test_graph_tables_let_dropped_graphs_go(tmp_path):
    """A long run keeps recompiling (here: new shapes, dynamic=False, then
    models dropped and torch._dynamo.reset()); the Python tables of
    instrumented graphs and of forward seq_nrs hold only graphs that can
    still run, so they shrink back once the compiled graphs are gone. With
    plain dicts and lists they would keep every graph ever compiled."""
    import gc

    from dftracer.python.compile import dynamo_pairing
    from dftracer.python.dynamo import graph_count, instrumented_graphs

    torch._dynamo.reset()
    gc.collect()
    live0, seqs0, n0 = len(instrumented_graphs()), dynamo_pairing.table_sizes()["fw_by_seq"], graph_count()
    with traced(tmp_path) as events:
        m = torch.nn.Linear(3, 2)
        c = torch.compile(m, backend=dftracer_dynamo_backend, dynamic=False)
        for rows in range(1, 7):  # a recompile per batch size
            c(torch.randn(rows, 3)).sum().backward()
        alive = instrumented_graphs(n0)
        seqs_alive = dynamo_pairing.table_sizes()["fw_by_seq"]
        del c, m
        torch._dynamo.reset()
        gc.collect()
    check_counts(events, alive)
    assert graph_count() - n0 == 12 and len(alive) == 12  # 6 forward + 6 backward
    assert seqs_alive > seqs0
    del alive
    gc.collect()
    assert len(instrumented_graphs()) <= live0
    assert dynamo_pairing.table_sizes()["fw_by_seq"] <= seqs0


def test_graph_slots_used_up_compiles_uninstrumented(run_python, tmp_path):
    """The C++ side's 65536 graph slots are never freed; once they are used
    up, a new graph is compiled uninstrumented with one warning line, and
    the program runs on with the right results."""
    code = f"""
        import json, torch
        from dftracer import _core
        from dftracer.python import dftracer, dftracer_dynamo_backend
        log = dftracer.initialize_log({str(tmp_path / "full")!r}, None, -1)
        n = 0
        try:
            while True:
                _core.dynamo_register_graph("graph.inference", "", 2, [], [], [], 0, -1)
                n += 1
        except ValueError:
            pass
        outs = []
        for k in (2, 3):
            m = torch.nn.Linear(k, 2)
            x = torch.randn(4, k)
            out = torch.compile(m, backend=dftracer_dynamo_backend)(x)
            out.sum().backward()
            outs.append(torch.equal(out, m(x)))
        log.finalize()
        print(json.dumps({{"slots": n, "same": outs}}))
    """
    r = run_python(code, env={})
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"slots": 65536, "same": [True, True]}
    warnings = [ln for ln in r.stderr.splitlines() if "runs uninstrumented" in ln]
    assert len(warnings) == 1 and "too many graphs" in warnings[0], r.stderr


def test_dead_graphs_free_their_slots(run_python, tmp_path):
    """Recompiles and torch._dynamo.reset() free the C++
    slots of the graphs they drop. With all but 4 of the 65536 slots held,
    ten compile/reset rounds (forward + backward graph each) all run
    instrumented: every round's ops are in the trace, no warning."""
    code = f"""
        import gc, json, torch
        from dftracer import _core
        from dftracer.python import dftracer, dftracer_dynamo_backend
        log = dftracer.initialize_log({str(tmp_path / "reuse")!r}, None, -1)
        while _core.dynamo_registered_graphs() < 65536 - 4:
            _core.dynamo_register_graph("graph.inference", "", 2, [], [], [], 0, -1)
        same = []
        for k in range(2, 12):
            m = torch.nn.Linear(k, 3)
            x = torch.randn(4, k)
            f = torch.compile(m, backend=dftracer_dynamo_backend)
            out = f(x)
            out.sum().backward()
            same.append(torch.equal(out, m(x)))
            del f, out
            torch._dynamo.reset()
            gc.collect()
        live = _core.dynamo_registered_graphs()
        log.finalize()
        print(json.dumps({{"same": same, "live": live}}))
    """
    r = run_python(code, env={})
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["same"] == [True] * 10
    assert result["live"] <= 65536 - 4 + 2, result  # at most the last round's graphs still booked
    assert "runs uninstrumented" not in r.stderr, r.stderr
    events = [e for f in trace_files(str(tmp_path)) for e in read_trace(f)]
    calls = [e for e in events if e.get("ph") == "X" and e["name"] in ("graph.forward", "graph.backward")]
    assert len([e for e in calls if e["name"] == "graph.forward"]) == 10, calls
    assert len([e for e in calls if e["name"] == "graph.backward"]) == 10, calls
