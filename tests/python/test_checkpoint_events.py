"""Checkpoint events (dftracer/python/checkpoint_events.py) and what the
analysis makes of them.

A real eager training loop (the LibTorch observer on) evaluates and saves a
checkpoint (`torch.save(model.state_dict(), path)`) after each epoch, as
training scripts do. `model.state_dict()` detaches every parameter with grad
mode on, ops the observer writes as forward work: before checkpoint events,
the step after each save began at those ops and held the whole save (the
file writes as data, the pickling untraced) and was flagged slow. Checked:
one event per outermost call with the class's name, the save's file writes
and the state_dict's ops inside them, the steps as the loop's perf_counter
brackets allow with no checkpoint time in any, the checkpoint's own category
in the run's wall time and `summary --by category`, and nothing recorded and
torch's own functions in place under DFTRACER_TRACE_CHECKPOINT=0.
"""
import json
import subprocess

import pytest

pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

from analyzer_cli import analyzer  # noqa: E402
from conftest import run_python_in  # noqa: E402
from test_step_shapes import CLOCK_SLACK_S, loop_bounds, steps_json  # noqa: E402
from trace_reader import read_trace, trace_files  # noqa: E402

LOOP = """
import json, os, time, torch
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
import torch.nn as nn
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
train = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(5)]
val = [(torch.randn(128, 64), torch.randint(0, 10, (128,))) for _ in range(4)]
path = os.path.join(os.environ["TRACE_DIR"], "ckpt.pt")
its = []
with trace_eager():
    for epoch in range(2):
        model.train()
        for x, y in train:
            t0 = time.perf_counter()
            opt.zero_grad()
            t0b = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            t1a = time.perf_counter()
            opt.step()
            its.append([t0, t0b, t1a, time.perf_counter(), epoch])
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(x).argmax(-1) == y).sum()) for x, y in val)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    state = torch.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
log.finalize()
with open(os.path.join(os.environ["TRACE_DIR"], "loop.json"), "w") as f:
    json.dump({"iterations": its, "wrapped": getattr(torch.save, "__dftracer_wrapped__", None) is not None}, f)
"""


def run_loop(tmp_path, env=None):
    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), LOOP, env={"TRACE_DIR": str(d), **(env or {})}, timeout=300)
    with open(d / "loop.json") as f:
        loop = json.load(f)
    [path] = trace_files(str(d))
    return d, path, loop


def inside(e, r):
    return r["ts_ns"] <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= r["ts_ns"] + r["dur_ns"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    return run_loop(tmp_path_factory.mktemp("ckpt"))


def test_one_event_per_outermost_call_holding_its_ops_and_writes(traced):
    d, path, loop = traced
    assert loop["wrapped"]
    events = [e for e in read_trace(path) if e.get("ph") == "X"]
    ckpt = [e for e in events if e.get("cat") == "checkpoint"]
    names = sorted(e["name"] for e in ckpt)
    # per epoch: the model's and the optimizer's state_dict, the save; then one load of each
    assert names == sorted(["Sequential.state_dict", "SGD.state_dict", "torch.save"] * 2 +
                           ["torch.load", "Sequential.load_state_dict", "SGD.load_state_dict"]), names
    sd = [e for e in ckpt if e["name"] == "Sequential.state_dict"]
    for s in sd:  # its parameters' detaches (grad mode on: phase forward) are inside it
        detaches = [e for e in events if e["name"] == "aten::detach" and inside(e, s)]
        assert len(detaches) >= 6, s
    saves = [e for e in ckpt if e["name"] == "torch.save"]
    writes = [e for e in events if e.get("cat") in ("POSIX", "STDIO") and e["name"] in ("write", "writev", "fwrite")]
    assert all(any(inside(w, s) for w in writes) for s in saves), saves


def test_steps_leave_the_checkpoints_out(traced):
    d, path, loop = traced
    doc = steps_json(d)
    rows = doc["steps"]
    bounds = loop_bounds(loop["iterations"], "optimizer")
    assert len(rows) == len(bounds) == 10, [r["duration_us"] for r in rows]
    for i, (r, (lo, hi)) in enumerate(zip(rows, bounds)):
        g = r["duration_us"] / 1e6
        assert lo - CLOCK_SLACK_S <= g <= hi + CLOCK_SLACK_S, f"step {i}: {g:.6f} s, the loop's brackets {lo:.6f}..{hi:.6f} s"
    for i, r in enumerate(rows):
        assert r["checkpoint_us"] == 0, (i, r)
    # the run's checkpoint time: its checkpoint events (one thread, disjoint)
    # less the garbage collections inside them (gc comes first)
    [run] = [x for x in doc["runs"] if x["pid"] == rows[0]["pid"]]
    events = [e for e in read_trace(path) if e.get("ph") == "X"]
    ckpt = [e for e in events if e.get("cat") == "checkpoint"]
    gcs = [g for g in events if g.get("cat") == "gc"]
    overlap = sum(max(0, min(g["ts"] + g["dur"], c["ts"] + c["dur"]) - max(g["ts"], c["ts"])) for g in gcs for c in ckpt)
    held = sum(e["dur"] for e in ckpt) - overlap
    assert abs(run["checkpoint_us"] - held) <= 2 * len(ckpt), (run, held, overlap)


def test_summary_by_category_has_the_checkpoints(traced):
    d, path, loop = traced
    p = subprocess.run([analyzer(), "summary", str(d), "--by", "category", "--format", "json"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {r["category"]: r for r in json.loads(p.stdout)["rows"]}
    assert rows["checkpoint"]["count"] == 9 and rows["checkpoint"]["wall_us"] > 0, rows["checkpoint"]


def test_off_records_nothing_and_leaves_torch_as_it_is(tmp_path):
    d, path, loop = run_loop(tmp_path, env={"DFTRACER_TRACE_CHECKPOINT": "0"})
    assert not loop["wrapped"]
    assert not [e for e in read_trace(path) if e.get("cat") == "checkpoint"]


def test_the_report_charts_the_checkpoint_calls_with_the_regions(traced):
    d, path, loop = traced
    out = d.parent / "report.html"
    p = subprocess.run([analyzer(), "report", str(d), "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "checkpoint " in p.stdout  # the compile-vs-run line's split
    # its own line: the 9 calls, none in a step, the longest, the names with the most time
    [line] = [x for x in p.stdout.splitlines() if x.startswith("Checkpoints: ")]
    assert line.startswith("Checkpoints: 9 calls, ") and ", 0.0% of the steps'; the longest " in line, line
    assert "torch.save " in line.split("most time: ")[1], line
    html = out.read_text()
    at = html.index('"regions":') + len('"regions":')
    regions, _ = json.JSONDecoder().raw_decode(html, at)  # [[name, count, ...], ...]
    assert "torch.save" in [r[0] for r in regions], regions


LIBRARIES = """
import json, os, torch
from dftracer.python import dftracer
d = os.environ["TRACE_DIR"]
log = dftracer.initialize_log(os.path.join(d, "run.pfw"), None, -1)
import safetensors.torch as st
import torch.distributed.checkpoint as dcp
from safetensors.torch import save_file  # bound after the import: the wrapper
import transformers as t
torch.manual_seed(0)
model = t.GPT2LMHeadModel(t.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16))
save_file({"w": torch.randn(4, 4)}, os.path.join(d, "a.safetensors"))
st.load_file(os.path.join(d, "a.safetensors"))
lin = torch.nn.Linear(4, 4)
dcp.save({"w": torch.randn(4, 4)}, checkpoint_id=os.path.join(d, "dcp"))
dcp.load({"w": torch.empty(4, 4)}, checkpoint_id=os.path.join(d, "dcp"))
model.save_pretrained(os.path.join(d, "hf"))
log.finalize()
"""


def test_safetensors_dcp_and_save_pretrained_are_one_event_each(tmp_path):
    """Hugging Face's weights go through safetensors, and `save_pretrained`
    does tensor work of its own (views finding tied weights) between its
    state_dict() and the file: each outermost call is one event, holding the
    safetensors write and the state_dict inside it."""
    pytest.importorskip("safetensors")
    pytest.importorskip("transformers")
    d = tmp_path / "trace"
    d.mkdir()
    run_python_in(str(tmp_path), LIBRARIES, env={"TRACE_DIR": str(d)}, timeout=300)
    [path] = trace_files(str(d))
    events = [e for e in read_trace(path) if e.get("ph") == "X"]
    ckpt = [e for e in events if e.get("cat") == "checkpoint"]
    assert [e["name"] for e in sorted(ckpt, key=lambda e: e["ts_ns"])] == [
        "safetensors.save_file", "safetensors.load_file", "dcp.save", "dcp.load",
        "GPT2LMHeadModel.save_pretrained"], ckpt
    [sp] = [e for e in ckpt if e["name"] == "GPT2LMHeadModel.save_pretrained"]
    writes = [e for e in events if e.get("cat") in ("POSIX", "STDIO") and e["name"] in ("write", "writev", "fwrite")]
    assert any(inside(w, sp) for w in writes), "the weights' file write is inside save_pretrained"


SHARDS = """
import os, sys, torch
d = os.environ["TRACE_DIR"]
shards = os.path.join(os.path.dirname(d), "shards")
os.makedirs(shards, exist_ok=True)
for i in range(8):
    torch.save({"x": torch.randn(16), "y": i % 2}, os.path.join(shards, f"{i}.pt"))  # before tracing: no event
from dftracer.python import dftracer
log = dftracer.initialize_log(os.path.join(d, "run.pfw"), None, -1)

class Shards(torch.utils.data.Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        s = torch.load(os.path.join(shards, f"{i}.pt"))
        return s["x"], s["y"]

model = torch.nn.Linear(16, 2)
for x, y in torch.utils.data.DataLoader(Shards(), batch_size=4, num_workers=int(sys.argv[1])):
    model(x)
torch.save(model.state_dict(), os.path.join(shards, "model.pt"))
log.finalize()
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_loading_its_samples_with_torch_load_is_no_checkpoint(tmp_path, workers):
    d = tmp_path / "trace"
    d.mkdir()
    script = tmp_path / "shards.py"
    script.write_text(SHARDS)
    run_python_in(str(tmp_path), f"import runpy, sys; sys.argv = ['shards.py', '{workers}']; "
                  f"runpy.run_path({str(script)!r}, run_name='__main__')", env={"TRACE_DIR": str(d)}, timeout=300)
    events = [e for f in trace_files(str(d)) for e in read_trace(f) if e.get("ph") == "X"]
    # the samples' loads: no event; the model's save after the loop: its two
    assert [e["name"] for e in events if e.get("cat") == "checkpoint"] == ["Linear.state_dict", "torch.save"]


def test_the_saved_files_io_is_checkpoint_io_not_data(traced):
    d, path, loop = traced
    p = subprocess.run([analyzer(), "io", str(d), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    [ckpt] = [f for f in doc["by_file"] if f.endswith("ckpt.pt")]
    assert doc["by_file"][ckpt]["kind"] == "checkpoint", doc["by_file"][ckpt]
    assert doc["by_kind"]["checkpoint"]["write_bytes"] >= doc["by_file"][ckpt]["write_bytes"] > 0
