"""The capture backend is aot_eager plus a graph pass: after instrumenting a
graph it hands it to torch's own boxed_nop, so what torch 2.13 does there
(serializable output code for the AOT autograd cache, DebugMode's
interpreter) holds for our backend too."""
import json

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend  # noqa: E402

from test_dynamo_helpers import check_counts, op_events, traced  # noqa: E402


def test_bundled_autograd_cache(run_python, tmp_path):
    """With the AOT autograd cache bundling compiled artifacts, the cache
    needs the compiler's OutputCode (boxed_nop returns one): a copy of
    boxed_nop that returns a plain function makes torch.compile raise
    "expected OutputCode". Two processes in a row (the second may find the
    cache): outputs and grads equal eager's, every call traced."""
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
