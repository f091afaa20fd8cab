"""An optimizer update inlined into a larger compiled graph (torch.optim's
functional step called in a compiled function, beside the model's forward):
its op events (capture backend) and the kernels its ops fused into
(Inductor) are phase optimizer; the forward's stay the graph's phase."""
import collections

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend, dftracer_inductor_backend  # noqa: E402
from torch.optim.sgd import sgd as sgd_step  # noqa: E402

from test_dynamo_helpers import graph_calls, traced  # noqa: E402


@pytest.mark.parametrize("compiler", ["aot_eager", "inductor"])
def test_inlined_optimizer_ops_are_optimizer_phase(tmp_path, monkeypatch, compiler):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 8)
    params = list(m.parameters())
    bufs = [torch.zeros_like(p) for p in params]
    m(torch.randn(2, 8)).sum().backward()
    backend = dftracer_inductor_backend if compiler == "inductor" else dftracer_dynamo_backend

    @torch.compile(backend=backend)
    def train_step(x):
        with torch.no_grad():
            y = m(x)
            sgd_step(params, [p.grad for p in params], bufs, lr=0.1, momentum=0.9, dampening=0.0,
                     weight_decay=0.0, nesterov=False, maximize=False, foreach=False)
        return y

    with traced(tmp_path) as events:
        for _ in range(2):
            train_step(torch.randn(4, 8))
    prefix = "kernel." if compiler == "inductor" else "function."
    evs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "dynamo" and e["name"].startswith(prefix)]
    assert {e["args"]["phase"] for e in graph_calls(events)} == {"inference"}  # one graph holds both

    def aten(e):
        return e["args"].get("aten") or [e["name"].removeprefix("function.")]

    by_phase = collections.defaultdict(set)
    for e in evs:
        by_phase[e["args"]["phase"]].update(aten(e))
    assert any(a.startswith("addmm") for a in by_phase["inference"]), dict(by_phase)
    assert by_phase["optimizer"], dict(by_phase)
    assert not any(a.startswith("addmm") for a in by_phase["optimizer"]), dict(by_phase)
