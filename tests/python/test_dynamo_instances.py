"""One compiled graph run for several instances of a module class: each
call's op and kernel events name the instance actually called."""
import collections

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend, dftracer_inductor_backend  # noqa: E402

from test_dynamo_helpers import op_events, traced  # noqa: E402


class _Child(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        if y.sum().item() > 1e9:  # a graph break: this frame is compiled on its own, once for the class
            y = y * 2
        return torch.relu(y)


class _Parent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Child() for _ in range(3)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def _events(events, compiler):
    if compiler == "aot_eager":
        return op_events(events)
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "dynamo" and e["name"].startswith("kernel.")]


@pytest.mark.parametrize("compiler", ["aot_eager", "inductor"])
def test_reused_child_graph_names_each_instance(tmp_path, monkeypatch, compiler):
    """blocks.1 and blocks.2 run the graph Dynamo compiled for blocks.1's
    frame (same class, graph break in forward): the events of each call name
    that call's block, forward and backward, and every block's events are as
    many as the others'."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = _Parent()
    backend = dftracer_inductor_backend if compiler == "inductor" else dftracer_dynamo_backend
    c = torch.compile(m, backend=backend)
    x = torch.randn(4, 8)
    with traced(tmp_path) as events:
        for _ in range(2):
            c(x).sum().backward()
    names = {n for n, _ in m.named_modules()}
    evs = _events(events, compiler)
    per_phase = collections.defaultdict(collections.Counter)
    for e in evs:
        mod = e["args"]["module"]
        assert mod == "" or mod in names, mod
        block = ".".join(mod.split(".")[:2]) if mod.startswith("blocks.") else None
        if block is not None:
            per_phase[e["args"]["phase"]][block] += 1
    for phase in ("forward", "backward"):
        counts = per_phase[phase]
        assert set(counts) == {"blocks.0", "blocks.1", "blocks.2"}, (phase, dict(per_phase))
        # blocks.0 is inlined into the parent's frame up to its break; 1 and 2 share one graph
        assert counts["blocks.1"] == counts["blocks.2"], (phase, counts)
