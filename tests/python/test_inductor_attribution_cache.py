"""Kernel attribution across Inductor's FX graph cache: the table a kernel
event's module, ATen ops, FLOPs and seq_nr come from is the table of the
graph that runs, whatever other graphs the process or an earlier process
compiled, and a saved table that does not match the wrapper's kernels is
ignored and rebuilt (one warning)."""
import glob
import json
import os

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))

# Trains one step of each model named in ORDER (compiled with the Inductor
# capture backend, "reset" between two: torch._dynamo.reset()) and prints,
# per compiled model in order, its kernel events' static args.
SCRIPT = """
    import json, sys, torch
    sys.path.insert(0, {here!r})
    import trace_reader
    from dftracer.python import dftracer, Dynamo
    from dftracer.python.dynamo_graphs import compile_stats

    class Tanh(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a1 = torch.nn.Linear(8, 8)
            self.a2 = torch.nn.Linear(8, 8)
        def forward(self, x):
            h = self.a1(x)
            return (self.a2(torch.tanh(h)) + h).sum(0)

    class Relu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = torch.nn.Linear(8, 4)
        def forward(self, x):
            return torch.relu(self.b1(x)) * 2

    log = dftracer.initialize_log({prefix!r}, None, -1)
    torch.manual_seed(0)
    models = {{"tanh": Tanh(), "relu": Relu()}}
    x = torch.randn(2, 4, 8)
    results = []  # per compiled call: loss and gradient sums (a graph lowered again computes the same)
    for name in {order!r}:
        if name == "reset":
            torch._dynamo.reset()
            continue
        loss = Dynamo(name, backend="inductor").compile(models[name])(x).sum()
        loss.backward()
        results.append([loss.item()] + [p.grad.sum().item() for p in models[name].parameters()])
        models[name].zero_grad()
    log.finalize()
    events = [e for p in trace_reader.trace_files({tmp!r}, {glob!r}) for e in trace_reader.read_trace(p)]
    graphs, seqs = {{}}, {{}}
    for e in events:
        if e.get("ph") == "X" and e["name"].startswith("kernel."):
            a = e["args"]
            graphs.setdefault(a["graph"], []).append(
                [e["name"], a["phase"], a["module"], a["aten"], a["flops"], a["bytes"]])
            seqs.setdefault(a["graph"], []).append(a["seq_nr"])
    print(json.dumps([seqs[g] for g in sorted(seqs)]))
    print(compile_stats["lowered_again"])
    print(json.dumps(results))
    print(json.dumps([graphs[g] for g in sorted(graphs)]))
"""


def run(run_python, tmp_path, name, order):
    code = SCRIPT.format(here=HERE, prefix=str(tmp_path / name), tmp=str(tmp_path), glob=f"{name}-*.pfw*",
                         order=order)
    r = run_python(code, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache"),
                              "TORCHINDUCTOR_COMPILE_THREADS": "1"}, timeout=600)
    lines = r.stdout.strip().splitlines()
    run.lowered_again, run.seq_nrs = int(lines[-3]), json.loads(lines[-4])
    return json.loads(lines[-1]), json.loads(lines[-2]), r.stderr


def test_cache_shared_by_processes_keeps_each_graph_its_table(run_python, tmp_path):
    """Four processes, one cache directory: fresh; cache hit; another model
    first, then the first from the cache; the first alone again. Each run of
    the first model has the first process's kernel table."""
    (fresh,), (values,), _ = run(run_python, tmp_path, "p1", ["tanh"])
    assert any(k[2] == "a1" for k in fresh) and any(k[4] > 0 for k in fresh)
    (hit,), (hit_values,), _ = run(run_python, tmp_path, "p2", ["tanh"])
    assert hit == fresh and hit_values == values
    fresh_seqs = run.seq_nrs[0]
    (other, third), (_, third_values), _ = run(run_python, tmp_path, "p3", ["relu", "tanh"])
    assert third == fresh and third_values == values
    # Other seq_nrs there (the autograd counter ran for relu first): the saved
    # table is read with its seq_nrs moved, not rebuilt by lowering again.
    assert run.lowered_again == 0
    third_seqs = run.seq_nrs[1]
    shift = {b - a for a, b in zip(fresh_seqs, third_seqs) if a >= 0}
    assert len(shift) == 1 and shift != {0}, (fresh_seqs, third_seqs)
    assert {k[2] for k in other} <= {"b1", ""}
    (fourth,), (fourth_values,), _ = run(run_python, tmp_path, "p4", ["tanh"])
    assert fourth == fresh and fourth_values == values


def test_recompile_after_dynamo_reset_keeps_the_table(run_python, tmp_path):
    """torch._dynamo.reset(), then the same model again (FX graph cache hits,
    lazy backward compile): its kernels have the ATen ops, FLOPs and bytes of
    the first compile (not the other backward's stale provenance read
    against this graph's nodes)."""
    (first, second), (v1, v2), _ = run(run_python, tmp_path, "r", ["tanh", "reset", "tanh"])
    assert v1 == v2
    assert [[k[0], k[1], k[3], k[4], k[5]] for k in second] == [[k[0], k[1], k[3], k[4], k[5]] for k in first]


def test_table_that_does_not_match_is_rebuilt_with_one_warning(run_python, tmp_path):
    """A saved table whose kernel list differs from the wrapper's is
    ignored: one warning line names it, and the graph's table is rebuilt
    (the same as the first process's) and saved again."""
    (fresh,), _, _ = run(run_python, tmp_path, "p1", ["tanh"])
    tables = sorted(glob.glob(str(tmp_path / "cache" / "dftracer" / "*.json")))
    assert len(tables) == 2  # forward and backward
    with open(tables[0]) as f:
        data = json.load(f)
    data["kernels"] = data["kernels"][::-1]
    with open(tables[0], "w") as f:
        json.dump(data, f)
    (again,), _, err = run(run_python, tmp_path, "p2", ["tanh"])
    assert again == fresh
    lines = [ln for ln in err.splitlines() if "does not match" in ln]
    assert len(lines) == 1 and tables[0] in lines[0], err
    with open(tables[0]) as f:
        assert json.load(f)["kernels"] == data["kernels"][::-1]  # rebuilt
