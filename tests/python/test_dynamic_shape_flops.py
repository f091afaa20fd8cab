"""Dynamic shapes: a graph compiled with symbolic sizes reports each call's
FLOPs at the sizes that call ran with (not the compile-time hints), in both
capture backends: a dynamic=True attention block run at two sequence
lengths, in alternation, matches FlopCounterMode at each length."""
import json
import os

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = """
    import json, sys, torch
    sys.path.insert(0, {here!r})
    import trace_reader
    from torch.utils.flop_counter import FlopCounterMode
    from dftracer.python import dftracer, Dynamo

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(16, 48)
            self.out = torch.nn.Linear(16, 16)
        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, -1)
            return self.out(torch.softmax(q @ k.transpose(1, 2), -1) @ v)

    torch.manual_seed(0)
    m = Attention()
    log = dftracer.initialize_log({prefix!r}, None, -1)
    f = Dynamo("dyn", backend={backend!r}).compile(m, dynamic=True)
    for s in {lengths!r}:
        f(torch.randn(2, s, 16)).sum().backward()
    log.finalize()
    want = {{}}
    for s in set({lengths!r}):
        with FlopCounterMode(display=False) as fc:
            m(torch.randn(2, s, 16)).sum().backward()
        want[s] = fc.get_total_flops()
    events = [e for p in trace_reader.trace_files({tmp!r}, {glob!r}) for e in trace_reader.read_trace(p)]
    events = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "dynamo"), key=lambda e: e["ts"])
    calls = [[e["name"], e["ts"], e["ts"] + e["dur"], 0, []] for e in events if e["name"].startswith("graph.")]
    for e in events:
        if e["name"].startswith(("function.", "kernel.")):
            c = next(c for c in calls if c[1] <= e["ts"] <= c[2])
            c[3] += e["args"]["flops"]
            c[4].append(e["args"].get("shapes"))
    print(json.dumps(dict(want=[want[s] for s in {lengths!r}], calls=[[c[0], c[3], c[4]] for c in calls])))
"""

LENGTHS = [16, 32, 16, 32]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_flops_follow_the_sizes_each_call_ran_with(run_python, tmp_path, backend):
    code = SCRIPT.format(here=HERE, prefix=str(tmp_path / "dyn"), tmp=str(tmp_path), glob="dyn-*.pfw*",
                         backend=backend, lengths=LENGTHS)
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"),
                              "TORCHINDUCTOR_COMPILE_THREADS": "1"}, timeout=600)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    calls = out["calls"]
    assert [c[0] for c in calls] == ["graph.forward", "graph.backward"] * len(LENGTHS)
    for step, want in enumerate(out["want"]):
        got = calls[2 * step][1] + calls[2 * step + 1][1]
        assert abs(got - want) <= 0.01 * want, (step, LENGTHS[step], got, want)
    if backend == "aot_eager":  # op events' shapes are the call's too, never a symbol
        for step, s in enumerate(LENGTHS):
            dims = {d for shapes in calls[2 * step][2] for shape in shapes for d in shape}
            assert s in dims and not any(isinstance(d, str) for d in dims), (step, dims)
