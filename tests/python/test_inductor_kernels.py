"""Inductor's kernels in the trace: dftracer_inductor_backend
runs Inductor's own kernels (outputs and grads equal plain Inductor's) and
records one event per kernel call, attributed to modules, ATen ops and
FLOPs; a second process that hits the FX graph cache records the same."""
import json
import os

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench", "dynamo")

# Trains 2 steps and runs 1 inference step of a small model under
# Dynamo(backend="inductor"), and the same under plain torch.compile; prints
# one JSON line of results.
SCRIPT = """
    import json, re, sys, torch
    sys.path.insert(0, {here!r}); sys.path.insert(0, {bench!r})
    import trace_reader
    from torch.utils.flop_counter import FlopCounterMode
    from dftracer.python import dftracer, Dynamo

    def make():
        torch.manual_seed(0)
        if {model!r} == "encoder":  # a 2-layer BERT encoder, no dropout (plain and ours must agree)
            from models import bert_base
            return bert_base(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                             vocab_size=100, max_position_embeddings=16, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0), torch.randint(0, 100, (2, 8))
        from models import Bottleneck
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), Bottleneck(16, 8),
                                  torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 4))
        return net, torch.randn(2, 3, 16, 16)

    ours, x = make()
    plain, _ = make()
    flops_model, _ = make()

    log = dftracer.initialize_log({prefix!r}, None, -1)
    fwd = Dynamo("k", backend="inductor").compile(ours)
    ref = torch.compile(plain)
    same = True
    for step in range(2):
        a, b = fwd(x), ref(x)
        same &= torch.equal(a, b)
        a.float().pow(2).sum().backward()
        b.float().pow(2).sum().backward()
        same &= all(p.grad is None and q.grad is None or torch.equal(p.grad, q.grad)
                    for p, q in zip(ours.parameters(), plain.parameters()))
    with torch.no_grad():
        same &= torch.equal(fwd(x), ref(x))
    log.finalize()

    with FlopCounterMode(display=False) as fc:
        flops_model(x).float().pow(2).sum().backward()
    with FlopCounterMode(display=False) as fi, torch.no_grad():
        flops_model(x)

    # The kernel calls of each generated wrapper's call(), counted from its text.
    from torch._inductor.codecache import PyCodeCache
    # One count per wrapper file (torch 2.11 lists a module it loaded twice twice).
    calls = []
    for path in dict.fromkeys(mod.__file__ for mod in PyCodeCache.modules):
        src = open(path).read()
        body = src[src.index("    def call(self, args):"):]
        body = body[:body.index("runner = Runner(")]
        n = len(re.findall(r"^\\s+(?:buf\\w+ = )?(?:cpp_fused_\\w+|extern_kernels\\.\\w+|torch\\.ops\\.\\w+\\.\\w+\\.\\w+)\\(",
                           body, re.M))
        if "Provenance debug handles" in src:  # only our compiles turn provenance tracking on
            calls.append(n)
    events = [e for p in trace_reader.trace_files({tmp!r}, {glob!r}) for e in trace_reader.read_trace(p)]
    kernels = [dict(name=e["name"], **{{k: v for k, v in e["args"].items() if k != "hhash"}})
               for e in events if e.get("ph") == "X" and e["name"].startswith("kernel.")]
    graphs = [dict(name=e["name"], **{{k: v for k, v in e["args"].items() if k != "hhash"}})
              for e in events if e.get("ph") == "X" and e["name"].startswith("graph.")]
    compile_names = sorted({{e["name"] for e in events if e.get("cat") == "compile"}})
    counters = torch._dynamo.utils.counters["inductor"]
    print(json.dumps(dict(same=bool(same), kernels=kernels, graphs=graphs, calls=calls,
                          flops_train=fc.get_total_flops(), flops_infer=fi.get_total_flops(),
                          by_op_train={{str(k).split(".")[-1]: v for k, v in fc.get_flop_counts()["Global"].items()}},
                          by_op_infer={{str(k).split(".")[-1]: v for k, v in fi.get_flop_counts()["Global"].items()}},
                          compile_names=compile_names, cache_hits=counters["fxgraph_cache_hit"])))
"""


def run(run_python, tmp_path, model, name):
    code = SCRIPT.format(here=HERE, bench=BENCH, model=model, prefix=str(tmp_path / name), tmp=str(tmp_path),
                         glob=f"{name}-*.pfw*")
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["encoder", "cnn"])
def test_inductor_kernel_events(run_python, tmp_path, model):
    if model == "encoder":
        pytest.importorskip("transformers")
    res = run(run_python, tmp_path, model, "first")
    assert res["same"], "outputs or grads differ from plain Inductor's"

    # one event per kernel call per graph call, as many as the wrapper's call() makes
    graphs = res["graphs"]
    assert sorted(g["phase"] for g in graphs) == ["backward", "backward", "forward", "forward", "inference"]
    kernels = res["kernels"]
    assert len(kernels) == sum(g["ops"] for g in graphs)
    per_phase = {g["phase"]: g["ops"] for g in graphs}
    assert sorted(per_phase.values()) == sorted(res["calls"]), (per_phase, res["calls"])
    for k in kernels:
        assert k["modules"] and k["aten"], k  # attributed to >= 1 module and ATen op
        assert k["kernel"] in ("cpp", "extern", "fallback")
    # kernels in graph order, call after call
    fw = [k["node"] for k in kernels if k["phase"] == "forward"]
    assert fw == list(range(per_phase["forward"])) * 2

    # FLOPs per step equal FlopCounterMode's on the eager model, for the ops
    # Inductor keeps as they are (the linear layers' matmuls, convolutions:
    # extern kernels). Attention is not compared: eager runs SDPA, and Inductor
    # on CPU decomposes it into bmm + softmax, whose FLOPs are those of the
    # decomposition.
    kept = {"mm", "addmm", "convolution", "convolution_backward"}

    def ours(phases):
        return sum(k["flops"] for k in kernels if k["phase"] in phases
                   and {a.split(".")[0] for a in k["aten"]} & kept)

    def eager(by_op):
        return sum(v for op, v in by_op.items() if op in kept)

    assert eager(res["by_op_train"]) > 0
    assert ours(("forward", "backward")) == 2 * eager(res["by_op_train"])
    assert ours(("inference",)) == eager(res["by_op_infer"])
    if model == "cnn":  # nothing decomposed: all of it
        assert sum(k["flops"] for k in kernels if k["phase"] != "inference") == 2 * res["flops_train"]
        assert sum(k["flops"] for k in kernels if k["phase"] == "inference") == res["flops_infer"]
    assert {"dynamo.trace", "backend_compile", "aot_autograd", "dftracer.instrument"} <= set(res["compile_names"])

    # a second process hits the FX graph cache and records the same events
    again = run(run_python, tmp_path, model, "second")
    assert again["cache_hits"] > 0 and again["same"]
    # (seq_nr aside: autograd's counter depends on what the process ran
    # before, and a fresh lowering runs more than a cache hit does)
    strip = lambda ks: [{k: v for k, v in e.items() if k not in ("graph", "seq_nr")} for e in ks]  # noqa: E731
    assert strip(again["kernels"]) == strip(kernels)


def test_cpp_wrapper_runs_unmarked_with_one_warning(run_python, tmp_path):
    """Inductor's cpp_wrapper mode generates C++ kernel calls that cannot be
    marked: forward and backward graphs compile as plain Inductor's (outputs
    and grads equal), record no kernel events, and say so in exactly one
    warning that names cpp_wrapper."""
    code = f"""
        import json, sys, torch
        sys.path.insert(0, {HERE!r})
        import trace_reader
        from dftracer.python import dftracer, Dynamo

        torch._inductor.config.cpp_wrapper = True
        def make():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        ours, plain = make(), make()
        x = torch.randn(3, 8)
        log = dftracer.initialize_log({str(tmp_path / "cw")!r}, None, -1)
        a = Dynamo("cw", backend="inductor").compile(ours)(x)
        b = torch.compile(plain)(x)
        a.sum().backward()
        b.sum().backward()
        same = torch.equal(a, b) and all(torch.equal(p.grad, q.grad) for p, q in zip(ours.parameters(), plain.parameters()))
        log.finalize()
        events = [e for p in trace_reader.trace_files({str(tmp_path)!r}, "cw-*.pfw*") for e in trace_reader.read_trace(p)]
        print(json.dumps({{"same": same, "kernels": sum(e.get("name", "").startswith("kernel.") for e in events)}}))
    """
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["same"] and res["kernels"] == 0, res
    # The plain torch.compile's graphs are not traced either: one line of their own says so.
    warnings = [line for line in r.stderr.splitlines() if "[dftracer] warning" in line]
    assert len([w for w in warnings if "cpp_wrapper" in w]) == 1, r.stderr
    assert len([w for w in warnings if "other than dftracer's" in w]) == 1, r.stderr
    assert len(warnings) == 2, r.stderr


def test_trace_eager_records_inductor_kernels_under_plain_torch_compile(run_python, tmp_path):
    """trace_eager() under plain torch.compile (Inductor, no dftracer
    backend): with cpp.enable_kernel_profile on, each C++ kernel call is an
    event (cat "inductor", Inductor's name graph_<n>_cpp_...), inside its
    CompiledFunction / CompiledFunctionBackward event; without it, none."""
    code = f"""
        import collections, json, sys, torch
        sys.path.insert(0, {HERE!r})
        import trace_reader
        from dftracer.python import dftracer, trace_eager

        log = dftracer.initialize_log({str(tmp_path / "te")!r}, None, -1)
        trace_eager()
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 2))
        profiled = torch.compile(m, options={{"cpp.enable_kernel_profile": True}})
        plain = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()))
        x = torch.randn(4, 8)
        for _ in range(3):
            profiled(x).sum().backward()
            plain(x).sum().backward()
        log.finalize()
        events = [e for p in trace_reader.trace_files({str(tmp_path)!r}, "te-*.pfw*") for e in trace_reader.read_trace(p)]
        x_events = [e for e in events if e.get("ph") == "X"]
        kernels = [e for e in x_events if e["cat"] == "inductor"]
        scopes = [e for e in x_events if e["name"] in ("CompiledFunction", "CompiledFunctionBackward")]
        inside = all(any(s["tid"] == k["tid"] and s["ts_ns"] <= k["ts_ns"] and
                         k["ts_ns"] + k["dur_ns"] <= s["ts_ns"] + s["dur_ns"] for s in scopes) for k in kernels)
        print(json.dumps({{"counts": collections.Counter(k["name"] for k in kernels), "inside": inside}}))
    """
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    counts = res["counts"]
    # the profiled model's forward kernel and its backward kernels, once per iteration; none of the other model
    assert counts and all(name.startswith("graph_") and "_cpp_" in name for name in counts), counts
    assert set(counts.values()) == {3}, counts
    assert any("backward" in name for name in counts) and len(counts) >= 2, counts
    assert res["inside"]


def test_trace_eager_records_extern_kernels_once(run_python, tmp_path):
    """trace_eager() records the ATen ops a compiled graph's code calls
    itself (Inductor's extern kernels: the linear layers' addmm/mm) under
    plain torch.compile, once per call and not the ops nested in them; in a
    graph our Inductor backend instrumented, the kernel events are the only
    record of them (no ATen event inside its graph events)."""
    code = f"""
        import collections, json, sys, torch
        sys.path.insert(0, {HERE!r})
        import trace_reader
        from dftracer.python import dftracer, trace_eager, Dynamo

        def make():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        plain = torch.compile(make())
        ours = Dynamo("ek", backend="inductor").compile(make())
        x = torch.randn(4, 8)
        log = dftracer.initialize_log({str(tmp_path / "ek")!r}, None, -1)
        trace_eager()
        for _ in range(3):
            plain(x).sum().backward()
            ours(x).sum().backward()
        log.finalize()
        events = [e for p in trace_reader.trace_files({str(tmp_path)!r}, "ek-*.pfw*") for e in trace_reader.read_trace(p)]
        x_events = [e for e in events if e.get("ph") == "X"]

        def inside(e, outer):
            return any(o["tid"] == e["tid"] and o["ts_ns"] <= e["ts_ns"] and
                       e["ts_ns"] + e["dur_ns"] <= o["ts_ns"] + o["dur_ns"] for o in outer)

        scopes = [e for e in x_events if e["name"] in ("CompiledFunction", "CompiledFunctionBackward")]
        graphs = [e for e in x_events if e["name"].startswith("graph.")]
        aten = [e for e in x_events if e["cat"] == "aten" and inside(e, scopes)]
        print(json.dumps({{
            "plain": collections.Counter(e["name"] for e in aten if not inside(e, graphs)),
            "ours": collections.Counter(e["name"] for e in aten if inside(e, graphs)),
            "nested": sum(inside(e, [o for o in aten if o is not e]) for e in aten),
            "kernels": collections.Counter(e["name"] for e in x_events if e["name"].startswith("kernel.extern")),
        }}))
    """
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    plain, kernels = res["plain"], res["kernels"]
    # the linear layers' matmuls, forward and backward, 3 steps: as many as our extern kernel events
    matmuls = {k: v for k, v in plain.items() if k in ("aten::addmm", "aten::mm")}
    assert matmuls and all(v % 3 == 0 for v in matmuls.values()), plain
    assert sum(matmuls.values()) == sum(kernels.values()) > 0, (plain, kernels)
    assert res["ours"] == {} and res["nested"] == 0, res


def test_flows_link_forward_kernels_to_backward_kernels(tmp_path, monkeypatch):
    """Flow arrows (``s``/``f`` with matching ids) go from a forward kernel
    to the backward kernel of the same seq_nr, each backward call finishing
    the flows its own forward call started."""
    from dftracer.python import Dynamo

    from test_dynamo_helpers import traced

    monkeypatch.setenv("DFTRACER_TIME_RESOLUTION", "ns")  # flows matched to kernels by timestamp
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 2))
    fwd = Dynamo("flows", backend="inductor").compile(m)
    x = torch.randn(4, 8)
    with traced(tmp_path, "flows") as events:
        for _ in range(3):
            fwd(x).sum().backward()
    kernels = [e for e in events if e.get("ph") == "X" and e["name"].startswith("kernel.")]

    def enclosing(flow):
        hits = [k for k in kernels if k["tid"] == flow["tid"] and k["ts"] <= flow["ts"] <= k["ts"] + k["dur"]]
        assert len(hits) == 1, (flow, hits)
        return hits[0]

    starts = {e["id"]: enclosing(e) for e in events if e.get("ph") == "s"}
    finishes = [(e["id"], enclosing(e)) for e in events if e.get("ph") == "f"]
    assert len(starts) == len([e for e in events if e.get("ph") == "s"]), "flow ids must be unique per call"
    assert finishes and len(finishes) % 3 == 0  # the same arrows each step
    for fid, bw in finishes:
        fw = starts[fid]
        assert fw["args"]["phase"] == "forward" and bw["args"]["phase"] == "backward"
        assert fw["args"]["seq_nr"] == bw["args"]["seq_nr"] >= 0 and fw["ts"] < bw["ts"]
    # every backward kernel whose seq_nr a forward kernel has ends an arrow, once per step
    fw_seqs = {k["args"]["seq_nr"] for k in kernels if k["args"]["phase"] == "forward"}
    bw_seqs = {k["args"]["seq_nr"] for k in kernels if k["args"]["phase"] == "backward"}
    assert len(finishes) == 3 * len((fw_seqs & bw_seqs) - {-1})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the Triton kernel path needs a GPU")
def test_triton_kernels_are_marked_on_cuda(tmp_path):
    """On CUDA, Inductor's Triton kernels (``kernel.run(...)`` calls) are
    marked like C++ kernels (kind "triton"); the event spans the launch on
    the host (device time per kernel is not recorded yet)."""
    from dftracer.python import Dynamo

    from test_dynamo_helpers import traced

    torch._dynamo.reset()
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)).cuda()
    x = torch.randn(8, 64, device="cuda")
    with traced(tmp_path, "cuda") as events:
        out = Dynamo("cuda", backend="inductor").compile(m)(x)
        torch.cuda.synchronize()
    torch.testing.assert_close(out, m(x))
    kinds = {e["args"]["kernel"] for e in events if e.get("ph") == "X" and e["name"].startswith("kernel.")}
    assert "triton" in kinds, kinds
