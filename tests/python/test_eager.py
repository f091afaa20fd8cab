"""Eager ATen op tracing (dftracer.python.eager / the LibTorch observer).

Each test traces into its own file and reads the real file back. Checked:
op names and counts against torch.profiler's view of the same code, nesting,
shapes, the switch as context manager / function / environment variable,
thread ids of ops run by the autograd engine on another thread, and no
double counting with the torch.compile capture backend.
"""
import collections
import os
import threading

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)",
                allow_module_level=True)

import trace_reader  # noqa: E402
from dftracer.python.eager import eager_enabled, trace_eager  # noqa: E402
from test_dynamo_helpers import graph_calls, op_events, traced  # noqa: E402


def aten_events(events, cat="aten"):
    return trace_reader.complete_events(events, cat=cat)


def names(events):
    return collections.Counter(e["name"] for e in events)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train_step(model, x):
    model(x).sum().backward()


def test_ops_match_torch_profiler_and_switch_restores(tmp_path):
    torch.manual_seed(0)
    model, x = Mlp(), torch.randn(2, 8)
    train_step(model, x)  # warm up: lazy init ops do not run twice
    assert not eager_enabled()
    with traced(tmp_path) as events:
        torch.sin(x)  # before the switch: not recorded
        with trace_eager() as handle:
            assert eager_enabled() and isinstance(handle, trace_eager)
            train_step(model, x)
        assert not eager_enabled()
        torch.cos(x)  # after: not recorded
    ours = names(aten_events(events))
    assert "aten::sin" not in ours and "aten::cos" not in ours

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        train_step(model, x)
    # prof.events(), what key_averages() counts: a same-named only child
    # (aten::sum -> aten::sum.dim_IntList, an overload redispatch) is merged
    # into its parent, and the observer does not record it.
    theirs = collections.Counter(e.name for e in prof.events() if e.name.startswith("aten::"))
    assert ours == theirs
    raw = collections.Counter(e.name() for e in prof.profiler.kineto_results.events() if e.name().startswith("aten::"))
    assert raw["aten::sum"] > theirs["aten::sum"]  # the raw events hold the redispatch
    assert ours["aten::linear"] == 2 and ours["aten::addmm"] == 2 and ours["aten::relu"] == 1
    # autograd nodes of the backward are their own category
    nodes = names(aten_events(events, "autograd"))
    assert nodes["AddmmBackward0"] == 2 and nodes["ReluBackward0"] == 1


def test_nesting_and_seq_nr(tmp_path):
    model, x = Mlp(), torch.randn(2, 8, requires_grad=True)
    with traced(tmp_path) as events, trace_eager():
        train_step(model, x)
    ops = aten_events(events)
    linears = [e for e in ops if e["name"] == "aten::linear"]
    for addmm in (e for e in ops if e["name"] == "aten::addmm"):
        # Exact ns: the two ends are 20-30 ns apart, below a float's ~0.25 us.
        assert any(p["tid"] == addmm["tid"] and p["ts_ns"] <= addmm["ts_ns"]
                   and addmm["ts_ns"] + addmm["dur_ns"] <= p["ts_ns"] + p["dur_ns"] for p in linears), addmm
    relu = next(e for e in ops if e["name"] == "aten::relu")
    nodes = aten_events(events, "autograd")
    relu_bw = next(e for e in nodes if e["name"] == "ReluBackward0")
    assert relu["args"]["seq_nr"] == relu_bw["args"]["seq_nr"] >= 0
    # One event per autograd node (the engine's scope, written as the node),
    # holding the node's ATen ops.
    assert names(nodes) == {"SumBackward0": 1, "AddmmBackward0": 2, "ReluBackward0": 1, "TBackward0": 2,
                            "torch::autograd::AccumulateGrad": 5}
    assert not [e for e in events if "evaluate_function" in e.get("name", "")]
    (thr_bw,) = [e for e in ops if e["name"] == "aten::threshold_backward"]
    assert relu_bw["ts"] <= thr_bw["ts"] and thr_bw["ts"] + thr_bw["dur"] <= relu_bw["ts"] + relu_bw["dur"]


def test_function_form_and_shapes(tmp_path):
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with traced(tmp_path) as events:
        trace_eager(shapes=True)
        try:
            torch.mm(a, b)
        finally:
            trace_eager(False)
        assert not eager_enabled()
        torch.mm(b.t(), a.t())
    mms = [e for e in aten_events(events) if e["name"] == "aten::mm"]
    assert len(mms) == 1
    assert mms[0]["args"]["shapes"] == "[[4, 8], [8, 3]]"


def test_nested_switches_restore_previous_state(tmp_path):
    x = torch.randn(3)
    with traced(tmp_path) as events:
        with trace_eager(shapes=True):
            with trace_eager(False):
                torch.sin(x)
            torch.cos(x)
            with trace_eager():  # shapes off inside
                torch.tan(x)
            torch.exp(x)
    ops = {e["name"]: e for e in aten_events(events)}
    assert "aten::sin" not in ops
    assert ops["aten::cos"]["args"]["shapes"] == "[[3]]"
    assert "shapes" not in ops["aten::tan"]["args"]
    assert ops["aten::exp"]["args"]["shapes"] == "[[3]]"


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="enabled must be a bool"):
        trace_eager("yes")
    with pytest.raises(TypeError, match="shapes must be a bool"):
        trace_eager(shapes=1)
    assert not eager_enabled()


def test_backward_on_another_thread_has_that_threads_tid(tmp_path):
    torch.manual_seed(0)
    model, x = Mlp(), torch.randn(2, 8)
    tids = {}

    def backward(loss):
        tids["worker"] = threading.get_native_id()
        loss.backward()

    with traced(tmp_path) as events, trace_eager():
        loss = model(x).sum()
        t = threading.Thread(target=backward, args=(loss,))
        t.start()
        t.join()
    main = threading.get_native_id()
    assert tids["worker"] != main
    ops = aten_events(events)
    fwd = [e for e in ops if e["name"] in ("aten::linear", "aten::relu")]
    bwd = [e for e in ops if e["name"] == "aten::threshold_backward"]
    nodes = aten_events(events, "autograd")
    assert len(fwd) == 3 and len(bwd) == 1 and len(nodes) >= 4
    assert {e["tid"] for e in fwd} == {main}
    assert {e["tid"] for e in bwd + nodes} == {tids["worker"]}


def test_nothing_recorded_while_tracing_is_off(tmp_path):
    x = torch.randn(3)
    with trace_eager():
        torch.sin(x)  # observer on, core off: no crash, nothing kept
    with traced(tmp_path) as events:
        torch.cos(x)
    assert not aten_events(events)


# ------------------------------------------------------------ environment


ENV_SNIPPET = """
import os, sys
{first}
{second}
x = torch.randn(4, 4)
torch.mm(x, x)
from dftracer.python import dftracer
dftracer.get_instance().finalize()
"""
IMPORT_DFTRACER = "import dftracer.python, dftracer.python.eager"


@pytest.mark.parametrize("order", ["dftracer_first", "torch_first"])
@pytest.mark.parametrize("value", ["1", "shapes"])
def test_environment_variable(run_python, trace_dir, order, value):
    first, second = IMPORT_DFTRACER, "import torch"
    if order == "torch_first":
        first, second = second, first
    run_python(ENV_SNIPPET.format(first=first, second=second),
               env={"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "env"),
                    "DFTRACER_TRACE_EAGER": value})
    (path,) = trace_reader.trace_files(trace_dir)
    mms = [e for e in aten_events(trace_reader.read_trace(path)) if e["name"] == "aten::mm"]
    assert len(mms) == 1
    assert ("shapes" in mms[0]["args"]) == (value == "shapes")


def test_environment_variable_bad_value_warns_and_stays_off(run_python, trace_dir):
    proc = run_python(ENV_SNIPPET.format(first="import torch", second=IMPORT_DFTRACER),
                      env={"DFTRACER_ENABLE": "1", "DFTRACER_LOG_FILE": os.path.join(trace_dir, "env"),
                           "DFTRACER_TRACE_EAGER": "sometimes"})
    warnings = [l for l in proc.stderr.splitlines() if "DFTRACER_TRACE_EAGER" in l]
    assert len(warnings) == 1 and '"sometimes"' in warnings[0]
    (path,) = trace_reader.trace_files(trace_dir)
    assert not aten_events(trace_reader.read_trace(path))


def test_exported_from_dftracer_python():
    import dftracer.python

    assert dftracer.python.trace_eager is trace_eager


# --------------------------------------------- with the capture backend


@torch._dynamo.disable
def eager_middle(y):
    # Runs eagerly between the two compiled graphs of Breaky.forward.
    return torch.cumsum(y, 1).sigmoid()


class Breaky(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(eager_middle(self.a(x).relu()))


def inside_any(e, calls):
    return any(c["tid"] == e["tid"] and c["ts"] <= e["ts"] and e["ts"] + e["dur"] <= c["ts"] + c["dur"]
               for c in calls)


def compiled_breaky():
    from dftracer.python import dftracer_dynamo_backend

    torch._dynamo.reset()
    torch.manual_seed(0)
    return torch.compile(Breaky(), backend=dftracer_dynamo_backend)


def test_training_graph_break_no_double_counting(tmp_path):
    model, x = compiled_breaky(), torch.randn(2, 4)
    with traced(tmp_path, "warm"):
        train_step(model, x)  # compiles forward and (lazily) backward graphs
    steps = 2
    with traced(tmp_path) as events, trace_eager():
        for _ in range(steps):
            train_step(model, x)
    calls = graph_calls(events)
    assert len(graph_calls(events, "forward")) == 2 * steps
    assert len(graph_calls(events, "backward")) == 2 * steps
    # The compiled graphs' ops are recorded once, by the capture backend ...
    assert any(e["name"] == "function.addmm.default" for e in op_events(events, "forward"))
    ops = aten_events(events)
    assert not [e for e in ops if inside_any(e, calls)]
    assert not [e for e in ops if e["name"] in ("aten::addmm", "aten::relu")]
    # ... and the eager ops between the graphs by the observer, forward and backward.
    n = names(ops)
    assert n["aten::sigmoid"] == steps and n["aten::sigmoid_backward"] == steps
    # cumsum's backward is a reversed cumsum: once per step in each direction
    cumsum_bw = [e for e in aten_events(events, "autograd") if e["name"] == "CumsumBackward0"]
    cumsums = [e for e in ops if e["name"] == "aten::cumsum"]
    assert len(cumsums) == 2 * steps
    assert len([e for e in cumsums if inside_any(e, cumsum_bw)]) == steps
    nodes = names(aten_events(events, "autograd"))
    assert nodes["CumsumBackward0"] == steps and nodes["SigmoidBackward0"] == steps
    assert nodes["CompiledFunctionBackward"] == 2 * steps
    # all in one trace, one thread
    assert len({e["tid"] for e in ops + calls}) == 1


def test_inference_graph_break_no_double_counting(tmp_path):
    from dftracer import _core

    if not hasattr(_core, "dynamo_depth_fn"):
        pytest.skip("dftracer._core does not export the capture hooks' graph-depth probe "
                    "(dynamo_depth_fn); inference graphs cannot be told apart without it")
    model, x = compiled_breaky(), torch.randn(2, 4)
    with torch.no_grad():
        # Compile while tracing is on: graphs compiled with tracing off stay
        # plain aot_eager (no hooks), as the capture backend documents.
        with traced(tmp_path, "warm"):
            model(x)
        with traced(tmp_path) as events, trace_eager():
            model(x)
    calls = graph_calls(events, "inference")
    assert len(calls) == 2
    ops = aten_events(events)
    assert not [e for e in ops if inside_any(e, calls)]
    n = names(ops)
    assert n["aten::cumsum"] == 1 and n["aten::sigmoid"] == 1
    assert "aten::addmm" not in n and "aten::relu" not in n


def test_compilation_ops_are_not_recorded(tmp_path):
    # The first step compiles (forward now, backward lazily at .backward());
    # the fake-tensor ops Dynamo and AOT autograd run to trace the graphs are
    # not the program's ops: the first step records what the second does.
    with trace_eager():  # pause hooks installed first: compiled_breaky() resets Dynamo,
        pass             # which clears compile callbacks; ours must survive that
    model, x = compiled_breaky(), torch.randn(2, 4)
    with traced(tmp_path, "first") as first, trace_eager():
        train_step(model, x)
    model.zero_grad(set_to_none=True)  # the same gradient accumulation (detach, not add_)
    with traced(tmp_path, "second") as second, trace_eager():
        train_step(model, x)
    assert len(graph_calls(first)) == len(graph_calls(second)) == 4
    assert names(aten_events(first)) == names(aten_events(second))
