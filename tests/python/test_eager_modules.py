"""Module attribution of eager ops, end to end: each eager ATen op's
``args.module`` is the path of the nn.Module whose forward ran it, as the
compiled graphs' op events name it (docs/capture.md, "Module paths").

A traced process runs a model with nesting, a ModuleList called in reverse
order, a module called twice, a module registered under two names, tied
weights, a submodule whose forward raises (caught by its caller), a module
called directly from the program and another model called inside the
forward without being registered (each a root of its own), and the same model
trained on two threads at once. The ground truth comes from the test's own
per-module hooks: each opens a ``record_function("gt:<path>")`` scope (the
path from ``named_modules()``) in its forward pre-hook and closes it in its
forward hook; the observer records the scopes, and the module of an ATen op
is the path of the innermost such scope around it on its thread (exact ns).
Backward: an autograd node, and each op inside it, has the module of the
forward op with the node's seq_nr on the same thread.

The analyzer then gives per-module totals for the eager trace
(``summary --by module``, ``--tree``) with the same module paths as a
compiled run of the same model.
"""
import collections
import json
import subprocess

import pytest
from test_analyze_self_time import analyzer_exe
from trace_reader import complete_events, read_trace, trace_files

pytest.importorskip("torch")
try:
    from dftracer import _eager  # noqa: F401
except ImportError:
    pytest.skip("dftracer was built without the LibTorch observer (dftracer._eager)", allow_module_level=True)

MODEL = """
import os, threading, torch
import torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
V, D = 32, 16


class Bad(nn.Module):
    def forward(self, x):
        x.sin()
        raise ValueError("bad forward")


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)

    def forward(self, x):
        return torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2), -1) @ x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x).tanh()


class Net(nn.Module):
    def __init__(self, bad, extra=False):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.shared = nn.Linear(D, D)
        self.alias = self.shared          # one module under two names: named "shared"
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.emb.weight  # tied weights
        self.bad = Bad() if bad else None
        # Another model called inside forward, not registered: a root of its own.
        object.__setattr__(self, "extra", nn.Sequential(nn.Linear(D, D), nn.ReLU()) if extra else None)

    def forward(self, idx):
        x = self.emb(idx)
        for b in reversed(self.blocks):
            x = b(x)
        x = self.alias(self.shared(x).relu())   # the same module called twice
        if self.bad is not None:
            try:
                self.bad(x)
            except ValueError:
                pass
        if self.extra is not None:
            x = x + self.extra(x)
        x = x * 0.5                          # the model's own op: the root ""
        return self.head(x)
"""

RUN = MODEL + """
MODE = os.environ["MODE"]
from dftracer.python import dftracer
if MODE != "compiled":
    from dftracer.python import trace_eager
model = Net(bad=MODE != "compiled", extra=MODE == "ground_truth")
idx = torch.randint(0, V, (2, 6))


open_calls = threading.local()


def markers(model):
    # The ground truth: a record_function scope per module call, opened after
    # dftracer's module pre-hook and closed after its forward hook, named by
    # the module's path in the model; a module called with no module call
    # open on its thread is the outermost one: "".
    for path, m in model.named_modules():
        def pre(mod, args, path=path):
            depth = getattr(open_calls, "depth", 0)
            open_calls.depth = depth + 1
            rf = torch.autograd.profiler.record_function("gt:" + (path if depth else ""))
            rf.__enter__()
            mod.__dict__.setdefault("_gt", []).append(rf)

        def post(mod, args, out):
            open_calls.depth -= 1
            mod.__dict__["_gt"].pop().__exit__(None, None, None)
        m.register_forward_pre_hook(pre)
        m.register_forward_hook(post, always_call=True)


def step(m, x):
    loss = m(x).logsumexp(-1).mean()
    loss.backward()


log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run"), None, -1)
if MODE == "compiled":
    from dftracer.python import dftracer_dynamo_backend
    cm = torch.compile(model, backend=dftracer_dynamo_backend)
    for _ in range(2):
        step(cm, idx)
else:
    if MODE == "ground_truth":
        markers(model)
        markers(model.extra)
    with trace_eager():
        step(model, idx)
        model.head(model.emb(idx))  # a submodule called from the program: a root ("") of its own
        if MODE == "ground_truth":
            other = Net(bad=True)
            markers(other)
            threads = [threading.Thread(target=lambda m=m: [step(m, idx) for _ in range(3)]) for m in (model, other)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
log.finalize()
"""


def run_mode(tmp_path, mode, env=None):
    from conftest import run_python_in

    d = tmp_path / mode
    d.mkdir()
    run_python_in(str(d), RUN, env={"MODE": mode, "TRACE_DIR": str(d), "DFTRACER_DISABLE_IO": "1", **(env or {})},
                  timeout=600)
    [path] = trace_files(str(d))
    return path


def innermost(scopes, e):
    """The innermost scope (sorted by start, outer first) around event `e`."""
    best = None
    for s in scopes:
        if s["ts_ns"] > e["ts_ns"]:
            break
        if e["ts_ns"] + e["dur_ns"] <= s["ts_ns"] + s["dur_ns"] and s is not e:
            best = s
    return best


def by_thread(events):
    out = collections.defaultdict(list)
    for e in events:
        out[e["tid"]].append(e)
    for evs in out.values():
        evs.sort(key=lambda e: (e["ts_ns"], -e["dur_ns"]))
    return out


def test_eager_ops_carry_the_module_whose_forward_ran_them(tmp_path):
    events = read_trace(run_mode(tmp_path, "ground_truth"))
    ops = [e for e in complete_events(events, cat="aten") if not e["name"].startswith("profiler::")]
    nodes = complete_events(events, cat="autograd")
    gt = by_thread(e for e in complete_events(events, cat="torch") if e["name"].startswith("gt:"))
    assert len({e["tid"] for e in ops}) >= 3, "the main thread and two training threads"
    # The scopes themselves: opened after dftracer's pre-hook, so in their module.
    for s in (s for v in gt.values() for s in v):
        assert s.get("args", {}).get("module") == s["name"][3:], s

    fwd_module = {}  # (tid, seq_nr) -> module of the forward ops with that seq_nr
    in_node = by_thread(nodes)
    checked = collections.Counter()
    for e in ops:
        if innermost(in_node.get(e["tid"], []), e) is not None:
            continue  # backward, below
        scope = innermost(gt.get(e["tid"], []), e)
        want = scope["name"][3:] if scope is not None else None
        assert e.get("args", {}).get("module") == want, (e, want)
        checked[want] += 1
        if "seq_nr" in e.get("args", {}) and want is not None:
            fwd_module.setdefault((e["tid"], e["args"]["seq_nr"]), set()).add(want)
    # Every module with ops of its own was seen; the raising forward's op
    # is its module's, the root's ops after it are the root's.
    assert {"", "emb", "blocks.0.attn.q", "blocks.1.attn", "blocks.0.mlp.0", "blocks.1.mlp.1", "blocks.0",
            "shared", "head", "bad"} <= set(checked), checked
    assert "alias" not in checked  # a module under two names has its first
    # The unregistered model called inside forward: its own root, its children under it.
    assert checked["0"] > 0 and checked["1"] > 0, checked
    assert checked[None] > 0  # the loss, outside any module
    sins = [e for e in ops if e["name"] == "aten::sin"]
    assert sins and all(e.get("args", {}).get("module") == "bad" for e in sins)

    # Backward: a node has its forward op's module (same thread, on CPU the
    # engine runs the caller's graph on the caller's thread), and so do the
    # ops inside it. AccumulateGrad nodes (a leaf's, no forward op) have none.
    backward_checked = 0
    for node in nodes:
        seq = node.get("args", {}).get("seq_nr")
        want = fwd_module.get((node["tid"], seq))
        if want is None:
            assert "module" not in node.get("args", {}) or node["name"] != "torch::autograd::AccumulateGrad", node
            continue
        assert len(want) == 1, (node, want)
        (want,) = want
        assert node.get("args", {}).get("module") == want, (node, want)
        for e in ops:
            if e["tid"] == node["tid"] and innermost(in_node[e["tid"]], e) is node:
                assert e.get("args", {}).get("module") == want, (e, node)
                backward_checked += 1
    assert backward_checked > 50


def summary(path, *extra):
    p = subprocess.run([analyzer_exe(), "summary", path, "--by", "module", "--format", "json", "--no-progress", *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_analyzer_per_module_totals_match_compiled_paths(tmp_path):
    eager = run_mode(tmp_path, "eager")
    compiled = run_mode(tmp_path, "compiled")
    rows = {r["module"]: r for r in summary(eager)["rows"]}
    crow = {r["module"]: r for r in summary(compiled)["rows"]}
    eager_paths = {m for m in rows if m != "(none)"}
    compiled_paths = {m for m in crow if m != "(none)"}
    assert "(root)" in eager_paths and "blocks.1.attn.q" in eager_paths, sorted(eager_paths)
    # The raising module runs only in the eager model.
    assert eager_paths - {"bad"} == compiled_paths, (sorted(eager_paths), sorted(compiled_paths))
    # Eager time is attributed: the modules hold most of the self time.
    assert all(r["count"] > 0 for r in rows.values())

    p = subprocess.run([analyzer_exe(), "summary", eager, "--by", "module", "--tree", "--format", "json",
                        "--no-progress"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    tree = json.loads(p.stdout)

    def walk(nodes):
        for n in nodes:
            yield n
            yield from walk(n["children"])

    flat = {n["path"]: n for n in walk(tree["roots"] if "roots" in tree else tree["tree"])}
    assert {"blocks", "blocks.0", "blocks.0.attn", "blocks.0.attn.q", "shared", "head", "(root)"} <= set(flat), sorted(flat)
    blocks = flat["blocks"]
    assert blocks["total_us"] == pytest.approx(sum(flat[c]["total_us"] for c in ("blocks.0", "blocks.1")), rel=1e-6)
    assert flat["blocks.0.attn.q"]["self_us"] == pytest.approx(rows["blocks.0.attn.q"]["self_us"], rel=1e-6)


ENV_RUN = """
import os, torch
from dftracer.python import dftracer, dftracer_dynamo_backend
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
x = torch.randn(2, 4)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run"), None, -1)
model(x).sum().backward()
torch.compile(model, backend=dftracer_dynamo_backend)(x)
log.finalize()
"""


@pytest.mark.parametrize("modules", [None, "0"])
def test_env_switch_and_compile_of_a_hooked_process(tmp_path, modules):
    """DFTRACER_TRACE_EAGER=1 alone attributes modules; DFTRACER_EAGER_MODULES=0
    registers no hook (no op has a module). torch.compile(module) with the
    hooks registered prints nothing more than without."""
    from conftest import run_python_in

    p = run_python_in(str(tmp_path), ENV_RUN, env={"TRACE_DIR": str(tmp_path), "DFTRACER_DISABLE_IO": "1",
                                                   "DFTRACER_TRACE_EAGER": "1", "DFTRACER_EAGER_MODULES": modules},
                      timeout=300)
    assert "global hooks" not in p.stderr, p.stderr
    [path] = trace_files(str(tmp_path))
    events = read_trace(path)
    eager = collections.Counter(e.get("args", {}).get("module") for e in complete_events(events, cat="aten"))
    compiled = {e["args"].get("module") for e in complete_events(events, cat="dynamo") if e["name"].startswith("function.")}
    assert compiled == {"0", "1"}
    if modules == "0":
        assert set(eager) == {None}, eager
    else:
        assert eager["0"] > 0 and eager["1"] > 0 and eager[None] > 0, eager  # the loss's sum: no module


CHECKPOINT_RUN = """
import gc, os, sys, weakref, torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
REENTRANT = os.environ["REENTRANT"] == "1"


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).tanh() * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Sub()
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        x = checkpoint(self.a, x, use_reentrant=REENTRANT)
        return self.b(x)


model = Net()
# The ground truth: a record_function scope per module call, named by the
# module's path in the model, also when the backward recomputes it.
for path, m in model.named_modules():
    def pre(mod, args, path=path):
        rf = torch.autograd.profiler.record_function("gt:" + path)
        rf.__enter__()
        mod.__dict__.setdefault("_gt", []).append(rf)

    def post(mod, args, out):
        mod.__dict__["_gt"].pop().__exit__(None, None, None)
    m.register_forward_pre_hook(pre)
    m.register_forward_hook(post, always_call=True)
del m
x = torch.randn(4, 8, requires_grad=True)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run"), None, -1)
with trace_eager():
    for _ in range(2):
        model(x).sum().backward()
    refs = [weakref.ref(m) for m in model.modules()]
    del model
    gc.collect()
    print("alive", sum(r() is not None for r in refs), file=sys.stderr)
log.finalize()
"""


@pytest.mark.parametrize("reentrant", ["0", "1"])
def test_checkpoint_recompute_keeps_the_models_paths(tmp_path, reentrant):
    """Activation checkpointing recomputes `a` inside the backward, with no
    module call of the model open: its ops carry `a` and `a.fc`, as in the
    forward, not paths relative to `a`."""
    from conftest import run_python_in

    p = run_python_in(str(tmp_path), CHECKPOINT_RUN, env={"TRACE_DIR": str(tmp_path), "DFTRACER_DISABLE_IO": "1",
                                                          "REENTRANT": reentrant}, timeout=300)
    assert "alive 0" in p.stderr, p.stderr  # nothing dftracer keeps holds the model
    [path] = trace_files(str(tmp_path))
    events = read_trace(path)
    ops = [e for e in complete_events(events, cat="aten") if not e["name"].startswith("profiler::")]
    nodes = by_thread(complete_events(events, cat="autograd"))
    gt = by_thread(e for e in complete_events(events, cat="torch") if e["name"].startswith("gt:"))
    recomputed = collections.Counter()
    for e in ops:
        scope = innermost(gt.get(e["tid"], []), e)
        if scope is None:
            continue
        assert e.get("args", {}).get("module") == scope["name"][3:], (e, scope["name"])
        if innermost(nodes.get(e["tid"], []), e) is not None:
            recomputed[scope["name"][3:]] += 1
    assert recomputed["a"] > 0 and recomputed["a.fc"] > 0, recomputed


STRAYS_RUN = """
import gc, os, sys, weakref, torch
import torch.nn as nn
from torch.autograd.profiler import record_function
from dftracer.python import dftracer, trace_eager
torch.manual_seed(0)
made_refs = []


class Kept(nn.Module):
    def forward(self, x):
        return x.sin()


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        object.__setattr__(self, "kept", Kept())  # held, not registered

    def forward(self, x):
        with record_function("mark:kept"):
            x = self.kept(x)
        made = nn.Sequential(nn.Linear(4, 4), nn.ReLU())  # made in this forward
        made_refs.append(weakref.ref(made))
        with record_function("mark:made"):
            return made(x)


model = Parent()
x = torch.randn(2, 4)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run"), None, -1)
with trace_eager():
    for _ in range(4):
        model(x)
    model.add_module("late", model.kept)  # registered under its caller now
    with record_function("mark:late"):
        model(x)
    gc.collect()
    print("alive", sum(r() is not None for r in made_refs), file=sys.stderr)
    refs = [weakref.ref(model), weakref.ref(model.kept)]
    del model
    gc.collect()
    print("model alive", sum(r() is not None for r in refs), file=sys.stderr)
log.finalize()
"""


def test_modules_not_registered_under_their_caller(tmp_path):
    """A module the model keeps outside its registered children, called on
    each forward, is a root (""); once registered under its caller it has
    that name. A module made in a forward is a root with its children under
    it, and nothing dftracer keeps holds it alive."""
    from conftest import run_python_in

    p = run_python_in(str(tmp_path), STRAYS_RUN, env={"TRACE_DIR": str(tmp_path), "DFTRACER_DISABLE_IO": "1"},
                      timeout=300)
    assert "alive 0" in p.stderr and "model alive 0" in p.stderr, p.stderr
    [path] = trace_files(str(tmp_path))
    events = read_trace(path)
    ops = [e for e in complete_events(events, cat="aten") if not e["name"].startswith("profiler::")]
    marks = by_thread(e for e in complete_events(events, cat="torch") if e["name"].startswith("mark:"))
    got = collections.defaultdict(collections.Counter)
    for e in ops:
        m = innermost(marks.get(e["tid"], []), e)
        outer = [s for s in marks.get(e["tid"], []) if s["name"] == "mark:late" and
                 s["ts_ns"] <= e["ts_ns"] and e["ts_ns"] + e["dur_ns"] <= s["ts_ns"] + s["dur_ns"]]
        if m is not None and m["name"] != "mark:late":
            got[(m["name"], bool(outer), e["name"])][e.get("args", {}).get("module")] += 1
    assert got[("mark:kept", False, "aten::sin")] == {"": 4}, dict(got)
    assert got[("mark:kept", True, "aten::sin")] == {"late": 1}, dict(got)
    assert got[("mark:made", False, "aten::linear")] == {"0": 4}, dict(got)
    assert got[("mark:made", False, "aten::relu")] == {"1": 4}, dict(got)
