"""torch.compile capture backend: events, args, phases, flows, FLOPs, graph breaks.

Each test traces into its own file (initialize_log / finalize) and reads the
file back. Models are tiny; compiled models are shared within the module
where the test does not need a fresh compile.
"""
import collections

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from dftracer.python import Dynamo, dftracer_dynamo_backend, dynamo  # noqa: E402
from dftracer.python.dynamo import EXTRA_FLOP_FORMULAS, graph_count, instrumented_graphs  # noqa: E402

import trace_reader  # noqa: E402
from test_dynamo_helpers import check_counts, graph_calls, metadata, op_events, traced  # noqa: E402


def setup_module(module):
    torch._dynamo.reset()
    torch.manual_seed(0)


def new_graphs(before):
    return instrumented_graphs(before)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 7 * 7, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


def test_training_and_inference_events_match_graph_nodes(tmp_path):
    torch.manual_seed(1)
    model = ConvNet()
    ref = ConvNet()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 16, 16)
    n0 = graph_count()
    with traced(tmp_path) as events:
        compiled = torch.compile(model, backend=dftracer_dynamo_backend)
        for _ in range(2):
            out = compiled(x)
            out.square().sum().backward()
        with torch.no_grad():
            inf_out = compiled(x)
    graphs = new_graphs(n0)
    assert {g.phase for g in graphs} == {0, 1, 2}

    # outputs and gradients identical to the untraced model
    ref_out = None
    for _ in range(2):
        ref_out = ref(x)
        ref_out.square().sum().backward()
    torch.testing.assert_close(out, ref_out)
    with torch.no_grad():
        torch.testing.assert_close(inf_out, ref(x))
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=n)

    calls = check_counts(events, graphs)
    assert sorted(calls.values()) == [1, 2, 2]  # inference once, forward and backward twice

    conv = [e for e in op_events(events, "forward") if e["name"] == "function.convolution.default"]
    assert len(conv) == 2
    a = conv[0]["args"]
    assert a["module"] == "conv" and a["grad_enabled"] == 1
    assert a["shapes"] == [[2, 3, 16, 16], [8, 3, 3, 3], [8]]
    assert a["dtype"] == "float32"
    assert a["flops"] == 2 * 2 * 8 * 14 * 14 * 3 * 3 * 3
    assert a["bytes"] == 4 * (2 * 3 * 16 * 16 + 8 * 3 * 3 * 3 + 8 + 2 * 8 * 14 * 14)
    assert a["seq_nr"] >= 0 and a["source"].startswith("test_dynamo.py:")
    assert conv[0]["name"] == "function.convolution.default"
    # backward ops know their layer through the forward's module stack
    bw_modules = {e["args"]["module"] for e in op_events(events, "backward")}
    assert {"conv", "bn", "fc"} <= bw_modules
    # graph-call events enclose their ops
    for g in graph_calls(events):
        assert g["args"]["ops"] == len(next(x for x in graphs if x.graph == g["args"]["graph"]
                                            and ("forward", "backward", "inference")[x.phase] == g["args"]["phase"]).op_names)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(6, 6)
        self.l2 = nn.Linear(6, 2)

    def forward(self, x):
        return self.l2(torch.tanh(self.l1(x)))


def test_phase_and_grad_enabled_under_grad_modes(tmp_path):
    model = MLP()
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    x = torch.randn(3, 6)
    with traced(tmp_path) as events:
        compiled(x).sum().backward()
        with torch.no_grad():
            compiled(x)
        with torch.inference_mode():
            compiled(x)
    fw = op_events(events, "forward")
    bw = op_events(events, "backward")
    inf = op_events(events, "inference")
    assert fw and bw and inf
    assert {e["args"]["grad_enabled"] for e in fw} == {1}
    assert {e["args"]["grad_enabled"] for e in bw} == {0}  # backward runs without create_graph
    assert {e["args"]["grad_enabled"] for e in inf} == {0}
    # no_grad and inference_mode each ran an inference graph
    assert len(graph_calls(events, "inference")) == 2


def test_seq_nr_flows_link_forward_to_backward(tmp_path, monkeypatch):
    # Flows are matched to the op that encloses them by timestamp: at the
    # default whole microseconds, adjacent ops share boundaries and the match
    # is ambiguous, so this test reads nanoseconds.
    monkeypatch.setenv("DFTRACER_TIME_RESOLUTION", "ns")
    model = MLP()
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    x = torch.randn(3, 6)
    with traced(tmp_path) as events:
        for _ in range(3):
            compiled(x).sum().backward()
        compiled(x)  # a forward whose backward never runs: must not shift the pairing
        compiled(x).sum().backward()
    starts = [e for e in events if e.get("ph") == "s"]
    finishes = [e for e in events if e.get("ph") == "f"]
    assert starts and finishes
    assert len({e["id"] for e in starts}) == len(starts), "flow ids must be unique per call"
    assert {e["id"] for e in finishes} <= {e["id"] for e in starts}
    assert len(finishes) == 4 * len(finishes) // 4 and len(finishes) % 4 == 0

    def enclosing(flow):
        for e in op_events(events):
            if e["tid"] == flow["tid"] and e["ts"] <= flow["ts"] <= e["ts"] + e["dur"]:
                return e
        raise AssertionError(f"no op event encloses flow {flow}")

    start_by_id = {e["id"]: enclosing(e) for e in starts}
    for f in finishes:
        fw_op, bw_op = start_by_id[f["id"]], enclosing(f)
        assert fw_op["args"]["phase"] == "forward" and bw_op["args"]["phase"] == "backward"
        assert fw_op["args"]["seq_nr"] == bw_op["args"]["seq_nr"]
        # the forward call that started the arrow precedes the backward that ends it
        assert fw_op["ts"] < bw_op["ts"]
    # each backward pairs with the forward right before it (the 4th forward has none)
    fw_calls = graph_calls(events, "forward")
    bw_calls = graph_calls(events, "backward")
    assert len(fw_calls) == 5 and len(bw_calls) == 4
    for f in finishes:
        fw_op = start_by_id[f["id"]]
        bw_op = enclosing(f)
        later_fw = [c for c in fw_calls if fw_op["ts"] < c["ts"] < bw_op["ts"]]
        assert not later_fw or all(c is fw_calls[3] for c in later_fw)


def test_backwards_in_forward_order_pair_with_their_forward(tmp_path):
    """Two forwards, then their backwards oldest first (two micro-batches
    accumulated): each backward carries its own forward's tags and arrows."""
    d = Dynamo("pairing")
    model = MLP()
    fwd = d.compile(model.forward)
    with traced(tmp_path) as events:
        d.update(step=1)
        l1 = fwd(torch.randn(3, 6)).sum()
        d.update(step=2)
        l2 = fwd(torch.randn(3, 6)).sum()
        l1.backward()
        l2.backward()
    fw_calls = sorted(graph_calls(events, "forward"), key=lambda e: e["ts"])
    bw_calls = sorted(graph_calls(events, "backward"), key=lambda e: e["ts"])
    assert [c["args"]["step"] for c in fw_calls] == [1, 2]
    assert [c["args"]["step"] for c in bw_calls] == [1, 2]
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    for f in (e for e in events if e.get("ph") == "f"):
        s = starts[f["id"]]
        fw_i = next(i for i, c in enumerate(fw_calls) if c["ts"] <= s["ts"] <= c["ts"] + c["dur"])
        bw_i = next(i for i, c in enumerate(bw_calls) if c["ts"] <= f["ts"] <= c["ts"] + c["dur"])
        assert fw_i == bw_i


class Attention(nn.Module):
    def __init__(self, d=16, heads=2, sdpa=True):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.heads, self.sdpa = heads, sdpa

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        if self.sdpa:
            o = F.scaled_dot_product_attention(q, k, v)
        else:
            o = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
        return self.out(o.transpose(1, 2).reshape(b, t, d))


class ConvLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 6 * 6, 3)
        self.w = nn.Parameter(torch.randn(3, 5))

    def forward(self, x):
        y = self.fc(self.conv(x).flatten(1))
        return torch.matmul(y, self.w)


@pytest.mark.parametrize("make,shape", [
    (ConvLinear, (2, 2, 6, 6)),
    (lambda: Attention(sdpa=False), (2, 4, 16)),
    (lambda: Attention(sdpa=True), (2, 4, 16)),
], ids=["conv-linear-matmul", "attention-matmul", "attention-sdpa"])
def test_flops_match_flop_counter_mode(tmp_path, make, shape):
    torch.manual_seed(0)
    model = make()
    x = torch.randn(*shape)
    # FlopCounterMode on the eager model, forward + backward; on CPU it has no
    # entry for SDPA's CPU kernels, EXTRA_FLOP_FORMULAS gives them the
    # registered flash-attention formulas (the table the backend uses).
    with FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS) as fc:
        model(x).sum().backward()
    expected = fc.get_total_flops()
    assert expected > 0
    compiled = torch.compile(model, backend=dftracer_dynamo_backend)
    with traced(tmp_path) as events:
        compiled(x).sum().backward()
    ours = sum(e["args"]["flops"] for e in op_events(events))
    assert ours == expected
    fw = sum(e["args"]["flops"] for e in op_events(events, "forward"))
    with FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS) as fc2:
        with torch.no_grad():
            model(x)
    assert fw == fc2.get_total_flops()


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        y = self.a(x)
        if y.sum().item() > 0:  # data-dependent: graph break
            y = y * 2
        return self.b(y)


def test_graph_breaks_recorded(tmp_path):
    torch._dynamo.reset()
    model = Branchy()
    x = torch.randn(2, 4)
    n0 = graph_count()
    with traced(tmp_path) as events:
        compiled = torch.compile(model, backend=dftracer_dynamo_backend)
        compiled(x).sum().backward()
    graphs = metadata(events, "dynamo.graph")
    assert len(graphs) >= 2
    breaks = metadata(events, "dynamo.graph_break")
    assert breaks and "item" in breaks[0]["reason"]
    assert breaks[0]["frame"].startswith("forward (test_dynamo.py:") and breaks[0]["line"] > 0
    per_frame = metadata(events, "dynamo.graphs_per_frame")
    assert per_frame[-1] == {"frame": breaks[0]["frame"], "graphs": len(graphs)}
    check_counts(events, new_graphs(n0))
    # time between graphs (the break) is visible: graph calls do not overlap
    calls = sorted(graph_calls(events, "forward"), key=lambda e: e["ts"])
    assert len(calls) >= 2
    for c1, c2 in zip(calls, calls[1:]):
        assert c1["ts"] + c1["dur"] <= c2["ts"]


def test_dynamic_shapes_two_sizes(tmp_path):
    model = MLP()
    n0 = graph_count()
    with traced(tmp_path) as events:
        compiled = torch.compile(model, backend=dftracer_dynamo_backend, dynamic=True)
        for n in (3, 7):
            out = compiled(torch.randn(n, 6))
            assert out.shape == (n, 2)
            out.sum().backward()
    graphs = new_graphs(n0)
    assert len([g for g in graphs if g.phase == 0]) == 1, "one dynamic graph serves both sizes"
    check_counts(events, graphs)
    addmm = [e for e in op_events(events, "forward") if e["name"] == "function.addmm.default"]
    # each call's shapes are its own sizes, not the symbol (dynamo_sizes)
    assert [e["args"]["shapes"][1][0] for e in addmm][::len(addmm) // 2] == [3, 7]


def tagged_net(d):
    """A small module whose forward is compiled by `d` in the class body."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        @d.compile
        def forward(self, x):
            return torch.relu(self.fc(x))

    return Net()


def test_dynamo_compile_decorator_forms_and_tags(tmp_path):
    d = Dynamo("mynet", epoch=1, step=0, image_idx=5, image_size=(8, 8))

    @dynamo.compile(fullgraph=True, name="scale_fn", stage="eval")
    def scale(x):
        return x * 3 + 1

    net = tagged_net(d)
    x = torch.randn(2, 4)
    with traced(tmp_path) as events:
        for step in range(2):
            d.update(step=step)
            net(x).sum().backward()
        torch.testing.assert_close(scale(x), x * 3 + 1)
    fw = op_events(events, "forward")
    assert {e["args"]["step"] for e in fw} == {0, 1}
    for e in fw + op_events(events, "backward"):
        a = e["args"]
        assert a["epoch"] == 1 and a["image_idx"] == 5 and a["image_size"] == [8, 8]
    # each backward carries the step of its own forward call
    assert sorted(e["args"]["step"] for e in graph_calls(events, "backward")) == [0, 1]
    regions = [e for e in events if e.get("ph") == "X" and e["name"] == "mynet"]
    assert len(regions) == 2 and regions[0]["cat"] == "dynamo"
    scale_ops = [e for e in op_events(events) if e["args"].get("stage") == "eval"]
    assert scale_ops and {e["name"] for e in scale_ops} >= {"function.mul.Tensor", "function.add.Tensor"}
    assert [e for e in events if e.get("ph") == "X" and e["name"] == "scale_fn"]
    # region events enclose the graph calls made inside them
    r = regions[0]
    inside = [g for g in graph_calls(events, "forward") if r["ts"] <= g["ts"] <= r["ts"] + r["dur"]]
    assert len(inside) == 1


def test_non_finite_tags_are_written_as_null(tmp_path):
    """A diverged loss logged as a tag (NaN, inf, a 0-d tensor holding
    -inf) must not raise out of the compiled forward: JSON has no NaN, so
    the tag is written as null and the file stays strict JSON."""
    d = Dynamo("nanet", step=0)

    @dynamo.compile(name="site_tagged", bound=float("inf"))
    def scale(x):
        return x * 2

    net = tagged_net(d)
    x = torch.randn(2, 4)
    with traced(tmp_path, "nan") as events:
        d.update(step=1, loss=float("nan"))
        net(x).sum().backward()
        d.update(step=2, loss=float("inf"), grad_norm=torch.tensor(float("-inf")))
        net(x).sum().backward()
        torch.testing.assert_close(scale(x), x * 2)
    for path in trace_reader.trace_files(str(tmp_path), "nan-*.pfw*"):
        trace_reader.read_finalized(path)
    fw = op_events(events, "forward")
    assert {e["args"]["step"] for e in fw} == {1, 2}
    for e in fw + op_events(events, "backward"):
        assert "loss" in e["args"] and e["args"]["loss"] is None, e["args"]
    assert all(e["args"]["grad_norm"] is None for e in fw if e["args"]["step"] == 2)
    site = [e for e in op_events(events, "inference") if "bound" in e["args"]]
    assert site and all(e["args"]["bound"] is None for e in site)


def test_unwritable_tag_drops_the_tags_with_one_warning(tmp_path, capfd):
    """A tag whose str() raises cannot be written: the compiled call still
    runs, its events carry no tags, and one warning says why."""

    class Unprintable:
        def __str__(self):
            raise RuntimeError("no str")

    d = Dynamo("badtag", step=3)
    net = tagged_net(d)
    x = torch.randn(2, 4)
    with traced(tmp_path, "badtag") as events:
        d.update(bad=Unprintable())
        net(x)
        net(x)
    fw = op_events(events, "forward")
    assert fw and all("bad" not in e["args"] and "step" not in e["args"] for e in fw)
    err = capfd.readouterr().err
    assert err.count("cannot be written") == 1 and "RuntimeError: no str" in err, err


def test_dynamo_enable_false_and_bare_function(tmp_path):
    off = Dynamo("off", enable=False)

    def f(x):
        return x + 1

    assert off.compile(f) is f

    @dynamo.compile
    def g(x):
        return torch.sin(x) * 2

    x = torch.randn(5)
    with traced(tmp_path) as events:
        torch.testing.assert_close(g(x), torch.sin(x) * 2)
    names = [e["name"] for e in op_events(events, "inference")]
    assert names == ["function.sin.default", "function.mul.Tensor"]
    assert [e for e in events if e.get("ph") == "X" and e["name"].startswith("dynamo.") and e["name"].endswith(".g")]


def test_error_inside_a_graph_leaves_tracing_consistent(tmp_path):
    """An op that raises at run time (an index out of range; a Cholesky of a
    non-PD matrix no longer raises in a graph from torch 2.11: its
    decomposition drops the check) ends the graph call cleanly: the error
    reaches the caller, the open node is closed, and later calls trace as
    before."""
    from dftracer import _core

    @dynamo.compile
    def pick(a, i):
        return torch.index_select(a * 1.0, 0, i) + 1

    good, rows = torch.eye(3), torch.tensor([0, 2])
    with traced(tmp_path) as events:
        pick(good, rows)
        with pytest.raises(IndexError):
            pick(good, torch.tensor([0, 7]))
        assert _core.dynamo_depth() == 0
        torch.testing.assert_close(pick(good, rows), good[[0, 2]] + 1)
    calls = graph_calls(events, "inference")
    assert len(calls) == 3
    names = [e["name"] for e in op_events(events, "inference")]
    assert names.count("function.index_select.default") == 3


def test_compile_a_module_instance_and_bad_input(tmp_path):
    m = nn.Linear(3, 2)
    assert dynamo.compile(m, name="lin") is m
    x = torch.randn(4, 3)
    with traced(tmp_path) as events:
        out = m(x)
    torch.testing.assert_close(out, F.linear(x, m.weight, m.bias))
    assert [e for e in events if e.get("ph") == "X" and e["name"] == "lin"]
    assert "function.addmm.default" in [e["name"] for e in op_events(events, "forward")]
    with pytest.raises(TypeError, match="expected a function or nn.Module"):
        dynamo.compile(42)
