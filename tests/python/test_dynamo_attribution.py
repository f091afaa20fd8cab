"""What op and kernel events are attributed to: module paths that are paths
of the compiled model's named_modules() however forward was reached (a
``*args`` wrapper, a child frame compiled on its own after a graph break),
compiled optimizer steps as optimizer work, and models or graphs for which
there is nothing to trace."""
import collections
import csv
import functools
import io
import subprocess

import pytest

torch = pytest.importorskip("torch")

from dftracer.python import dftracer_dynamo_backend  # noqa: E402

from analyzer_cli import analyzer  # noqa: E402
from test_dynamo_helpers import graph_calls, op_events, traced  # noqa: E402


def _module_values(events):
    return [e["args"]["module"] for e in op_events(events)]


def _kernel_events(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "dynamo" and e["name"].startswith("kernel.")]


# ------------------------------------------------------- *args wrappers
def _takes_args(forward):
    """A decorator as transformers 5.x puts on forward: the frame Dynamo
    compiles is this wrapper, so module sources read L['args'][0]...."""
    @functools.wraps(forward)
    def wrapper(*args, **kwargs):
        return forward(*args, **kwargs)
    return wrapper


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class _Wrapped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([_Mlp(), _Mlp()])
        self.head = torch.nn.Linear(8, 2)

    @_takes_args
    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


@pytest.mark.parametrize("compiler", ["aot_eager", "inductor"])
def test_args_wrapper_paths_are_named_modules(tmp_path, monkeypatch, compiler):
    """A forward reached through ``def wrapper(*args)``: Dynamo's sources are
    L['args'][0].layers[0].up; events name layers.0.up, the model's own path,
    in both backends (Inductor's kernels take the same module paths)."""
    from dftracer.python import dftracer_inductor_backend

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))  # lowered here, not a cache hit
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = _Wrapped()
    backend = dftracer_inductor_backend if compiler == "inductor" else dftracer_dynamo_backend
    c = torch.compile(m, backend=backend)
    with traced(tmp_path) as events:
        c(torch.randn(4, 8)).sum().backward()
    names = {n for n, _ in m.named_modules()}
    evs = _kernel_events(events) if compiler == "inductor" else op_events(events)
    mods = [e["args"]["module"] for e in evs if e["args"]["module"]]
    assert mods, [e["name"] for e in evs]
    assert all(p in names for p in mods), collections.Counter(mods)
    assert {"layers.0.up", "layers.1.down", "head"} <= set(mods)
    if compiler == "inductor":  # every module a kernel lists, not only the first
        assert all(p in names for e in evs for p in e["args"]["modules"])


def test_wrapper_source_without_identity_drops_args_root():
    """Where a module cannot be found by identity, Dynamo's source is
    cleaned: a ``*args`` wrapper's module argument is the root, as self is."""
    from dftracer.python.compile.dynamo_nodes import clean_module_path

    assert clean_module_path("L['args'][0].model.layers[0].mlp") == "model.layers.0.mlp"
    assert clean_module_path("L['args'][0]") == ""
    assert clean_module_path("L['self'].encoder._modules['0']") == "encoder.0"
    assert clean_module_path("L['model'].fc") == "model.fc"


def test_llama_module_paths_are_named_modules(tmp_path):
    """transformers' LlamaForCausalLM reaches forward through a ``*args``
    wrapper: a training step's op events name paths of its named_modules()
    (model.layers.0.mlp.gate_proj), none starting with ``args``."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg)
    c = torch.compile(m, backend=dftracer_dynamo_backend)
    ids = torch.randint(0, 64, (2, 8))
    with traced(tmp_path) as events:
        c(input_ids=ids, labels=ids).loss.backward()
    names = {n for n, _ in m.named_modules()}
    mods = [p for p in _module_values(events) if p]
    assert len(mods) > 100
    assert not [p for p in mods if p.startswith("args")]
    assert sum(p in names for p in mods) >= 0.95 * len(mods), collections.Counter(p for p in mods if p not in names)
    assert "model.layers.0.mlp.gate_proj" in mods and "model.layers.1.self_attn.q_proj" in mods


# ------------------------------------------------- graph breaks in children
class _Conv(torch.nn.Module):
    def __init__(s, c):  # noqa: N805 - the first parameter is named s on purpose
        super().__init__()
        s.conv = torch.nn.Conv2d(c, c, 3, padding=1)
        s.act = torch.nn.SiLU()

    def forward(s, x):  # noqa: N805
        return s.act(s.conv(x))


class _Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1 = _Conv(c)
        self.cv2 = _Conv(c)

    def forward(self, x):
        y = self.cv1(x)
        if y.sum().item() > 1e9:  # a graph break inside a child's forward
            y = y * 2
        return self.cv2(y)


class _Net(torch.nn.Module):
    """A YOLO-like parent: its children, called in a loop, hold graph breaks,
    so Dynamo compiles each child's frame on its own."""

    def __init__(self):
        super().__init__()
        self.model = torch.nn.ModuleList([_Conv(4), _Block(4), _Conv(4)])

    def forward(self, x):
        for m in self.model:
            x = m(x)
        return x


def test_graph_break_child_frames_get_model_paths(tmp_path):
    """Child frames compiled on their own (forward(s, x), a break in a
    child's forward): events name model.1.cv1.conv, not conv / cv1.conv /
    s.conv; the child's own ops (the sum before .item()) name the child."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = _Net()
    c = torch.compile(net, backend=dftracer_dynamo_backend)
    x = torch.randn(1, 4, 8, 8)
    with traced(tmp_path) as events:
        with torch.no_grad():
            c(x)
        c(x).sum().backward()
    names = {n for n, _ in net.named_modules()}
    mods = _module_values(events)
    assert mods
    assert all(p and p in names for p in mods), collections.Counter(mods)
    assert {"model.0.conv", "model.1.cv1.conv", "model.1.cv2.act", "model.1"} <= set(mods)


# ---------------------------------------------------- compiled optimizers
def _category_self(trace_files):
    out = subprocess.run([analyzer(), "summary", "--by", "category", "--format", "csv", *trace_files],
                         check=True, capture_output=True, text=True).stdout
    return {r["category"]: float(r["wall_us"]) for r in csv.DictReader(io.StringIO(out))}


@pytest.mark.parametrize("compiler", ["aot_eager", "inductor"])
def test_compiled_optimizer_step_is_optimizer_work(tmp_path, monkeypatch, compiler):
    """torch.compile(opt.step): its op (kernel) events and graph calls have
    phase "optimizer"; the analyzer puts them in the optimizer category,
    none in forward. torch's optimizer hook event around the call (if any)
    encloses the graph call, so nothing is counted twice."""
    from dftracer.python import dftracer_inductor_backend
    from trace_reader import trace_files

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 8)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    backend = dftracer_inductor_backend if compiler == "inductor" else dftracer_dynamo_backend
    step = torch.compile(opt.step, backend=backend)
    with traced(tmp_path) as events:
        for _ in range(2):
            m(torch.randn(4, 8)).sum().backward()
            step()
    ops = _kernel_events(events) if compiler == "inductor" else op_events(events)
    assert ops and {e["args"]["phase"] for e in ops} == {"optimizer"}
    graphs = graph_calls(events)
    assert graphs and {e["name"] for e in graphs} == {"graph.optimizer"}
    hooks = [e for e in events if e.get("ph") == "X" and e["name"].startswith("Optimizer.step#")]
    for h in hooks:
        assert sum(h["ts"] <= g["ts"] and g["ts"] + g["dur"] <= h["ts"] + h["dur"] for g in graphs) == 1
    cats = _category_self(trace_files(str(tmp_path)))
    assert cats.get("optimizer", 0) > 0
    assert cats.get("forward", 0) == 0, cats


def test_optimizer_inlined_in_a_compiled_region(tmp_path):
    """opt.step() inside a compiled training function: the optimizer's ops
    (their source is torch.optim's code) are phase optimizer; the model's
    forward ops stay forward."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    @torch.compile(backend=dftracer_dynamo_backend)
    def train(x):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()

    with traced(tmp_path) as events:
        train(torch.randn(4, 8))
        train(torch.randn(4, 8))
    phases = collections.Counter(e["args"]["phase"] for e in op_events(events))
    assert phases["optimizer"] > 0 and phases["forward"] > 0 and phases["backward"] > 0, phases
    assert all("linear" not in e["name"] and "addmm" not in e["name"]
               for e in op_events(events, phase="optimizer"))


# ------------------------------------------- nothing captured, nothing to trace
def test_model_without_graph_is_named_once(run_python):
    """An nn.LSTM compiles no graph under torch 2.13 (Dynamo runs it
    eagerly): the trace has no op of it, and one line says so and how to
    trace it; a model with graphs gets no such line."""
    r = run_python("""
        import torch
        from dftracer.python import dftracer, dftracer_dynamo_backend
        log = dftracer.initialize_log(None, None, -1)
        lstm = torch.compile(torch.nn.LSTM(8, 16, batch_first=True), backend=dftracer_dynamo_backend)
        lin = torch.compile(torch.nn.Linear(8, 8), backend=dftracer_dynamo_backend)
        for _ in range(3):
            out, _ = lstm(torch.randn(2, 5, 8))
            out.sum().backward()
            lin(torch.randn(2, 8)).sum().backward()
        log.finalize()
    """)
    lines = [ln for ln in r.stderr.splitlines() if "captured no graph" in ln]
    assert len(lines) == 1, r.stderr
    assert "LSTM" in lines[0] and "DFTRACER_TRACE_EAGER=1" in lines[0] and "Linear" not in lines[0]


def test_compiled_ddp_without_graph_is_named(run_python, tmp_path):
    """torch.compile(DDP(nn.Sequential(...))) compiles no graph under torch
    2.13 (one gloo rank here): the line names DistributedDataParallel."""
    r = run_python(f"""
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0, world_size=1)
        from dftracer.python import dftracer, dftracer_dynamo_backend
        log = dftracer.initialize_log(None, None, -1)
        m = DDP(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))
        c = torch.compile(m, backend=dftracer_dynamo_backend)
        for _ in range(2):
            c(torch.randn(4, 8)).sum().backward()
        log.finalize()
        dist.destroy_process_group()
    """)
    lines = [ln for ln in r.stderr.splitlines() if "captured no graph" in ln]
    assert len(lines) == 1 and "DistributedDataParallel" in lines[0], r.stderr


def test_other_backend_is_named_once(run_python):
    """torch.compile with a backend that is not dftracer's (here "eager";
    "inductor" the same) while tracing, in a process that loaded dftracer's
    compile capture: one line says its graphs are not traced and which
    backend traces them."""
    r = run_python("""
        import torch
        from dftracer.python import dftracer, dftracer_dynamo_backend
        log = dftracer.initialize_log(None, None, -1)
        a = torch.compile(torch.nn.Linear(8, 8), backend="eager")
        b = torch.compile(torch.nn.Linear(8, 4), backend="eager")
        a(torch.randn(2, 8)); b(torch.randn(2, 8))
        log.finalize()
    """)
    lines = [ln for ln in r.stderr.splitlines() if "other than dftracer's" in ln]
    assert len(lines) == 1, r.stderr
    assert "dftracer_inductor_backend" in lines[0]


def test_inductor_graph_without_ops_is_no_warning(tmp_path, capfd):
    """A graph with no op reaches Inductor's inner compiler, which returns
    its forward as is (no wrapper code, no kernel): nothing to trace, and no
    warning that "an Inductor graph runs without kernel events"."""
    from dftracer.python.inductor import inductor_backend
    from torch._functorch.aot_autograd import make_boxed_func

    gm = torch.fx.symbolic_trace(lambda x: x)

    def compile_fx_inner(g, example_inputs, **kwargs):  # Inductor's answer for a graph without calls
        return make_boxed_func(g.forward)

    with traced(tmp_path):
        out = inductor_backend._make_inner(compile_fx_inner, 0)(gm, [torch.ones(2)], is_inference=True)
        assert torch.equal(out([torch.ones(2)]), torch.ones(2))
    assert "without kernel events" not in capfd.readouterr().err
