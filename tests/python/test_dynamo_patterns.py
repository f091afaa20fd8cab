"""torch.compile capture on the patterns real models use, a transformers
BERT encoder, and the untraced (DFTRACER_ENABLE unset) path."""
import json
import textwrap

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from dftracer.python import dftracer_dynamo_backend  # noqa: E402
from dftracer.python.dynamo import graph_count, instrumented_graphs  # noqa: E402

from test_dynamo_helpers import check_counts, op_events, traced  # noqa: E402


def setup_module(module):
    torch._dynamo.reset()


def run_both(make, inputs, tmp_path, train=True, seed=0):
    """Runs a fresh model from `make` under plain aot_eager and under our
    backend (same weights, same RNG seed); checks outputs and grads are
    identical and every graph call's events match its nodes. Returns
    (events, new GraphInfos)."""
    torch.manual_seed(seed)
    ref = make()
    ours = make()
    ours.load_state_dict(ref.state_dict())
    ref_c = torch.compile(ref, backend="aot_eager")
    ours_c = torch.compile(ours, backend=dftracer_dynamo_backend)

    def step(model):
        torch.manual_seed(seed + 1)
        out = model(*inputs)
        flat = out if isinstance(out, (tuple, list)) else (out,)
        if train:
            sum(o.float().square().sum() for o in flat if torch.is_tensor(o)).backward()
        return flat

    n0 = graph_count()
    with traced(tmp_path) as events:
        got = step(ours_c)
    want = step(ref_c)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    if train:
        for (n, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
            if q.grad is not None:
                torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0, msg=n)
    graphs = instrumented_graphs(n0)
    check_counts(events, graphs)
    return events, graphs


class WrappedLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(4, 4)

    def forward(self, x):
        return self.layer1(x) * 100


class Patterns(nn.Module):
    """Wrapped submodule, dropout, split + getitem, in-place op, tuple output."""

    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(4, 4)
        self.wrapped = WrappedLayer()
        self.dropout = nn.Dropout(0.1)
        self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])

    def forward(self, x):
        x = self.wrapped(self.layer1(x))
        x = self.dropout(x)
        a, b = x.split(2, dim=-1)
        a = self.blocks[0](a)
        b = self.blocks[1](b).relu_() * 3
        b.add_(1.0)
        return a, b


def test_patterns_submodules_split_dropout_inplace_tuple(tmp_path):
    events, graphs = run_both(Patterns, (torch.randn(3, 4),), tmp_path)
    fw = op_events(events, "forward")
    names = [e["name"] for e in fw]
    assert "function.split.Tensor" in names and "function.getitem" in names
    assert any("dropout" in n or "bernoulli" in n for n in names), names
    modules = {e["args"]["module"] for e in fw}
    assert {"layer1", "wrapped.layer1", "blocks.0", "blocks.1"} <= modules, modules
    getitems = [e for e in fw if e["name"] == "function.getitem"]
    assert all(e["args"]["bytes"] == 0 for e in getitems)
    assert op_events(events, "backward")


class LazyBuffers(nn.Module):
    """Parameters and a buffer created at the first call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.LazyLinear(3)
        self.register_buffer("scale", None)

    def forward(self, x):
        if self.scale is None:
            self.scale = torch.full((3,), 0.5)
        return self.fc(x) * self.scale


def test_lazily_initialised_module(tmp_path):
    torch.manual_seed(0)
    model = LazyBuffers()
    ref = LazyBuffers()
    model(torch.randn(2, 5))  # materialise, as users do before compiling
    ref(torch.randn(2, 5))
    ref.load_state_dict(model.state_dict())
    x = torch.randn(2, 5)
    n0 = graph_count()
    with traced(tmp_path) as events:
        out = torch.compile(model, backend=dftracer_dynamo_backend)(x)
        out.sum().backward()
    torch.testing.assert_close(out, ref(x))
    check_counts(events, instrumented_graphs(n0))
    assert {e["args"]["module"] for e in op_events(events, "forward")} >= {"fc"}


def test_lazy_module_compiled_before_first_call(tmp_path):
    """The lazy initialisation itself runs under torch.compile."""
    torch.manual_seed(0)
    model = LazyBuffers()
    x = torch.randn(2, 5)
    n0 = graph_count()
    with traced(tmp_path) as events:
        compiled = torch.compile(model, backend=dftracer_dynamo_backend)
        out1 = compiled(x)
        out2 = compiled(x)
    torch.testing.assert_close(out1, out2)
    torch.testing.assert_close(out2, model.fc(x) * 0.5)
    check_counts(events, instrumented_graphs(n0))


def test_bert_encoder_from_config_is_complete(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=128, vocab_size=100, max_position_embeddings=64)
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)

    def make():
        m = transformers.BertModel(cfg)
        m.eval()  # deterministic: dropout off, so outputs compare exactly
        return m

    events, graphs = run_both(lambda: _BertWrap(make()), (ids, mask), tmp_path)
    fw = op_events(events, "forward")
    modules = {e["args"]["module"] for e in fw}
    assert any(m.startswith("bert.encoder.layer.1.attention") for m in modules), sorted(modules)[:20]
    assert any(m.startswith("bert.embeddings") for m in modules)
    assert sum(e["args"]["flops"] for e in fw) > 0
    bw = op_events(events, "backward")
    assert bw and any(e["args"]["module"].startswith("bert.encoder.layer.0") for e in bw)
    # every event carries the full set of args
    keys = {"grad_enabled", "phase", "graph", "node", "module", "shapes", "dtype", "flops", "bytes", "seq_nr"}
    for e in fw + bw:
        assert keys <= set(e["args"]), e


class _BertWrap(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids, mask):
        return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state


def test_disabled_is_plain_aot_eager(run_python, tmp_path):
    """DFTRACER_ENABLE unset: no hook nodes, no file; set: instrumented."""
    code = textwrap.dedent("""
        import glob, json, os, torch
        from dftracer.python import dynamo, dftracer_dynamo_backend
        from dftracer.python.dynamo import instrumented_graphs

        @dynamo.compile
        def f(x):
            return torch.relu(x) + 1

        m = torch.nn.Linear(3, 3)
        c = torch.compile(m, backend=dftracer_dynamo_backend)
        x = torch.randn(2, 3)
        f(x); c(x).sum().backward()
        print(json.dumps({"graphs": len(instrumented_graphs()),
                          "files": glob.glob(os.path.join(os.getcwd(), "tr*"))}))
    """)
    off = run_python(code, env={"DFTRACER_ENABLE": None})
    assert json.loads(off.stdout.strip().splitlines()[-1]) == {"graphs": 0, "files": []}
    on = run_python(code, env={"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": str(tmp_path / "tr")})
    res = json.loads(on.stdout.strip().splitlines()[-1])
    assert res["graphs"] == 3  # f's inference graph, the Linear's forward and backward


def test_graph_compiled_before_tracing_started(run_python, tmp_path):
    """A graph compiled while tracing was off runs uninstrumented: one
    warning line when it runs with tracing on; after torch._dynamo.reset()
    the recompiled graph is traced."""
    code = f"""
        import json, torch
        from dftracer.python import dftracer, dftracer_dynamo_backend
        from dftracer.python.dynamo import instrumented_graphs

        m = torch.nn.Linear(3, 3)
        c = torch.compile(m, backend=dftracer_dynamo_backend)
        x = torch.randn(2, 3)
        want = m(x)
        first = c(x)                      # compiled with tracing off
        log = dftracer.initialize_log({str(tmp_path / "late")!r}, None, -1, enable=True)
        second, third = c(x), c(x)        # uninstrumented: one warning
        before = len(instrumented_graphs())
        torch._dynamo.reset()
        fourth = c(x)                     # recompiled with tracing on
        log.finalize()
        same = all(torch.equal(o, want) for o in (first, second, third, fourth))
        print(json.dumps({{"before": before, "after": len(instrumented_graphs()), "same": same}}))
    """
    r = run_python(code, env={"DFTRACER_ENABLE": None})  # off until the program opts in
    assert r.stderr.count("compiled by dftracer_dynamo_backend while tracing was off") == 1, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"before": 0, "after": 1, "same": True}
    from trace_reader import read_trace, trace_files

    (path,) = trace_files(str(tmp_path), "late-*.pfw*")
    ops = op_events(read_trace(path))
    assert {e["name"] for e in ops} == {"function.addmm.default", "function.t.default"}  # one call
    assert len(ops) == 2
