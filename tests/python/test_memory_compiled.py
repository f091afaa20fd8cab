"""Memory capture inside compiled graphs: what a graph node allocates counts
on that node's event, not on torch's CompiledFunction scope around the graph.

A traced process (compiled_memory_job.py: DFTRACER_ENABLE, _TRACE_EAGER and
_MEMORY from the environment) trains a model compiled with the capture
backend (or our Inductor backend) for a few steps, then one more step under
torch.profiler(profile_memory=True). Its trace file is read back and given
to dftracer-analyze. Checked:

- per op name, the bytes the graph op events (function.<op>.<overload>) of
  one step allocated equal what torch.profiler saw allocated inside the same
  ops of the compiled graphs, to within the wrapped Python scalars (below);
- each alloc event's `op` names the graph op whose event counts its bytes;
- `summary --by module` has the compiled modules' memory, and
  CompiledFunction / CompiledFunctionBackward hold (almost) none;
- Inductor: a kernel's event has the bytes of the output buffers allocated
  for it.
"""
import collections
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

import trace_reader  # noqa: E402
from analyzer_cli import analyzer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3  # traced steps (0: compiles); the last is compared
GRAPH_SCOPES = ("CompiledFunction", "CompiledFunctionBackward")
# A Python number passed to a tensor op (x * 0.5) is wrapped into a 0-dim
# tensor by torch's Python binding before the op's RecordFunction starts:
# torch.profiler counts those bytes on the scope around the op
# (CompiledFunction), the capture on the graph node that made the call. At
# most one such argument per call here, 8 bytes (double or int64).
SCALAR_BYTES = 8


def run_job(tmp_path, which, backend):
    env = dict(os.environ, DFTRACER_ENABLE="1", DFTRACER_TRACE_EAGER="1", DFTRACER_MEMORY="1",
               DFTRACER_LOG_FILE=str(tmp_path / "trace"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))
    truth = tmp_path / "truth.json"
    r = subprocess.run([sys.executable, os.path.join(HERE, "compiled_memory_job.py"), str(truth), which, backend,
                        str(STEPS)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    files = trace_reader.trace_files(str(tmp_path), "trace-*.pfw*")
    assert len(files) == 1, files
    with open(truth) as f:
        return trace_reader.read_trace(files[0]), json.load(f)["alloc"], files[0]


@pytest.fixture(scope="module")
def gpt2_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpt2")
    return run_job(d, "gpt2", "capture")


def graph_ops(events, step=None):
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "dynamo" and e["name"].startswith(("function.", "kernel.")):
            if step is None or e["args"].get("step") == step:
                out.append(e)
    return out


def aten_name(event_name):
    parts = event_name[len("function."):].split(".")
    return "aten::" + parts[0] if len(parts) <= 2 else parts[0] + "::" + parts[1]


def check_per_op_bytes(events, truth):
    ours, calls = collections.Counter(), collections.Counter()
    for e in graph_ops(events, STEPS - 1):
        ours[aten_name(e["name"])] += e["args"].get("alloc_bytes", 0)
        calls[aten_name(e["name"])] += 1
    assert sum(truth.values()) > 0, "torch.profiler saw no allocation inside the graphs"
    for name in sorted(set(ours) | set(truth)):
        extra = ours[name] - truth.get(name, 0)
        assert 0 <= extra <= SCALAR_BYTES * calls[name], (name, ours[name], truth.get(name, 0), calls[name])


def allocated_by_scope(events, after_compile=False):
    """Bytes allocated on CompiledFunction* events, and on graph op events;
    `after_compile`: from step 1 on (step 0 compiles; the lazy backward
    compile runs inside its CompiledFunctionBackward scope)."""
    since = min(e["ts_ns"] for e in events if e.get("ph") == "i" and e["name"] == "step"
                and e["args"].get("step") == 1) if after_compile else 0
    scopes = sum(e["args"].get("alloc_bytes", 0) for e in events
                 if e.get("ph") == "X" and e["name"] in GRAPH_SCOPES and e["ts_ns"] >= since)
    return scopes, sum(e["args"].get("alloc_bytes", 0) for e in graph_ops(events) if e["ts_ns"] >= since)


def test_gpt2_compiled_op_bytes_equal_torch_profiler(gpt2_run):
    events, truth, _ = gpt2_run
    check_per_op_bytes(events, truth)


def test_mlp_compiled_op_bytes_equal_torch_profiler(tmp_path):
    events, truth, _ = run_job(tmp_path, "mlp", "capture")
    check_per_op_bytes(events, truth)
    scopes, ops = allocated_by_scope(events, after_compile=True)
    assert ops > 0 and scopes <= ops // 100, (scopes, ops)


def test_alloc_events_name_the_graph_op(gpt2_run):
    events, _, _ = gpt2_run
    by_op = collections.Counter()
    for e in events:
        if e.get("ph") == "i" and e["name"] == "alloc" and e.get("cat") == "memory":
            by_op[e["args"].get("op")] += e["args"]["size"]
    per_event = collections.Counter()
    for e in graph_ops(events):
        per_event[e["name"]] += e["args"].get("alloc_bytes", 0)
    assert {k: v for k, v in per_event.items() if v} == \
        {k: v for k, v in by_op.items() if k and k.startswith("function.")}
    graph_ops_bytes = sum(per_event.values())
    assert sum(by_op[s] for s in GRAPH_SCOPES) <= graph_ops_bytes // 100, by_op


def test_summary_by_module_has_the_compiled_modules_memory(gpt2_run):
    events, _, path = gpt2_run
    exe = analyzer()
    want = collections.Counter()
    for e in graph_ops(events):
        want[e["args"]["module"] or "(root)"] += e["args"].get("alloc_bytes", 0)
    # The LibTorch observer's events carry the module call around them too:
    # its scopes around a compiled call (the compiled model's module, "", the
    # root) with what they allocate outside the graph's ops, and eager ops
    # outside the graphs (a backward node's, its forward op's module).
    graph = {id(e) for e in graph_ops(events)}
    for e in events:
        if e.get("ph") == "X" and id(e) not in graph and "module" in e.get("args", {}):
            want[e["args"]["module"] or "(root)"] += e["args"].get("alloc_bytes", 0)
    out = subprocess.run([exe, "summary", path, "--by", "module", "--format", "json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["memory"] is True
    rows = {r["module"]: r for r in doc["rows"]}
    for module, alloc in want.items():
        if alloc:
            assert rows[module]["alloc_bytes"] == alloc, module
    assert rows["transformer.h.0.mlp.c_fc"]["alloc_bytes"] > 0
    out = subprocess.run([exe, "summary", path, "--by", "name", "--format", "json"],
                         capture_output=True, text=True, check=True)
    by_name = {r["name"]: r for r in json.loads(out.stdout)["rows"]}
    scopes, ops = allocated_by_scope(events)
    assert sum(by_name[s].get("alloc_bytes", 0) for s in GRAPH_SCOPES if s in by_name) == scopes
    scopes, ops = allocated_by_scope(events, after_compile=True)
    assert ops > 0 and scopes <= ops // 100, (scopes, ops)


def test_inductor_kernel_has_its_output_buffers_bytes(tmp_path):
    events, _, _ = run_job(tmp_path, "mlp", "inductor")
    fwd = [e for e in graph_ops(events, STEPS - 1) if e["args"]["phase"] == "forward"]
    got = [(e["name"], e["args"]["module"], e["args"].get("alloc_bytes", 0)) for e in fwd]
    # fc1's addmm fills a new 32 x 256 float32 buffer, the ReLU runs in place
    # on it, fc2's addmm fills a new 32 x 10 one.
    assert got == [("kernel.extern_kernels.addmm", "fc1", 32 * 256 * 4), ("kernel.cpp_fused_relu_0", "act", 0),
                   ("kernel.extern_kernels.addmm", "fc2", 32 * 10 * 4)]
    scopes, ops = allocated_by_scope(events, after_compile=True)
    assert ops > 0 and scopes <= ops // 100, (scopes, ops)
