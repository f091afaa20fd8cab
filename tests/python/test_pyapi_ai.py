"""pydftracer's dft_ai taxonomy (dftracer.python.ai) and the rest of its API
surface: each test runs a script in a fresh interpreter with
DFTRACER_ENABLE=1, reads the trace back and checks pydftracer's event names,
categories and args (as pydftracer 2.0.6 writes them; see docs/python.md)."""
import inspect
import os

import pytest
from trace_reader import complete_events, read_trace, trace_files

ENV = {"DFTRACER_ENABLE": "1"}

PRELUDE = """
import os
from dftracer.python import dftracer, dft_fn
from dftracer.python.ai import ai
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "t.pfw"), None, -1)
"""


def expect_no_file_when_unset():
    """pydftracer traces only with DFTRACER_ENABLE=1, even when the program
    calls initialize_log(); that switch (with its opt-in
    `initialize_log(..., enable=True)`) is the file-format side of #13, landed
    separately: until it is in the tree these checks cannot hold."""
    from dftracer.python import dftracer
    if "enable" not in inspect.signature(dftracer.initialize_log).parameters:
        pytest.skip("needs DFTRACER_ENABLE=1-only tracing (initialize_log(..., enable=)), not in this tree yet")


def run_traced(run_python, trace_dir, body, env=None):
    e = dict(ENV, TRACE_DIR=trace_dir, **(env or {}))
    proc = run_python(PRELUDE + body + "\nlog.finalize()\n", env=e)
    files = trace_files(trace_dir)
    assert len(files) == 1, (files, proc.stderr)
    return read_trace(files[0]), proc


def named(events, name):
    return [e for e in complete_events(events) if e["name"] == name]


def one(events, name):
    found = named(events, name)
    assert len(found) == 1, (name, found)
    return found[0]


def inside(outer, inner):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_every_node_has_pydftracers_name_and_category(run_python, trace_dir):
    events, _ = run_traced(run_python, trace_dir, """
nodes = {
    "compute": ["forward", "backward", "step"], "data": ["preprocess", "item"],
    "dataloader": ["fetch"], "device": ["transfer"], "checkpoint": ["capture", "restart"],
    "pipeline": ["epoch", "train", "evaluate", "test"], "other": ["log"],
    "comm": ["send", "receive", "barrier", "bcast", "reduce", "all_reduce", "gather",
             "all_gather", "scatter", "reduce_scatter", "all_to_all"],
}
for cat, children in nodes.items():
    with getattr(ai, cat):
        pass
    for child in children:
        with getattr(getattr(ai, cat), child):
            pass
for cat in ("data", "checkpoint", "other"):
    for op in ("open", "read", "write", "close"):
        with getattr(getattr(ai, cat).io, op):
            pass
with ai:
    pass
""")
    got = {(e["name"], e["cat"]) for e in complete_events(events)
           if e["cat"] != "gc"} - {("start", "dftracer"), ("end", "dftracer")}  # gc: our collection events
    expected = {("ai_root", "ai_root")}
    for cat in ("compute", "data", "dataloader", "device", "checkpoint", "pipeline", "other", "comm"):
        expected.add((cat, cat))
    for name in ("forward", "backward", "step"):
        expected.add((name, "compute"))
    expected |= {("preprocess", "data"), ("item", "data"), ("fetch", "dataloader"),
                 ("transfer", "device"), ("capture", "checkpoint"), ("restart", "checkpoint"),
                 ("other.log", "other")}
    expected |= {(n, "pipeline") for n in ("epoch", "train", "evaluate", "test")}
    expected |= {(n, "comm") for n in ("send", "receive", "barrier", "bcast", "reduce", "all_reduce", "gather",
                                       "all_gather", "scatter", "reduce_scatter", "all_to_all")}
    expected |= {(f"{c}.io.{op}", c) for c in ("data", "checkpoint", "other")
                 for op in ("open", "read", "write", "close")}
    assert got == expected, (got ^ expected)


def test_decorator_iter_update_derive_init_and_start_stop(run_python, trace_dir):
    events, _ = run_traced(run_python, trace_dir, """
@ai.compute.forward
def forward(x):
    return x + 1

@ai.compute.backward(epoch=2, args={"lr": 0.5, "opt": "sgd"})
def backward():
    pass

assert forward(1) == 2 and forward(2) == 3 and forward.__name__ == "forward"
backward()
with ai.compute.backward:
    pass
ai.update(step=7, image_size=224)
for i in ai.dataloader.fetch.iter(range(3)):
    pass
for i in ai.data.item.iter([1], include_iter=False, block_name="custom.block"):
    pass
with ai.compute.derive("loss"):
    pass
@ai.checkpoint.init
def setup():
    pass
setup()
ai.pipeline.train.start()
ai.pipeline.train.stop()
ai.pipeline.evaluate.start(metadata=True)
ai.pipeline.evaluate.stop(metadata=True)
""")
    fwd = named(events, "forward")
    assert len(fwd) == 2 and all(e["cat"] == "compute" for e in fwd)
    # node(epoch=..., args=...) is pydftracer's: the tags and args stick to the
    # node, and the decorator comes from a new node with the tags only.
    decorated, later = named(events, "backward")
    assert decorated["args"]["epoch"] == 2 and "lr" not in decorated["args"]
    assert later["args"]["epoch"] == 2 and later["args"]["lr"] == 0.5 and later["args"]["opt"] == "sgd"
    iters, blocks = named(events, "fetch.iter"), named(events, "fetch.block")
    assert [e["args"]["count"] for e in iters] == [1, 2, 3] == [e["args"]["count"] for e in blocks]
    # update() on the root reaches every node below it; image_size is a float as in pydftracer
    assert all(e["args"]["step"] == 7 and e["args"]["image_size"] == 224.0 for e in iters + blocks)
    assert all(e["cat"] == "dataloader" for e in iters + blocks)
    assert not named(events, "item.iter") and one(events, "custom.block")["cat"] == "data"
    assert one(events, "compute.loss")["cat"] == "compute"
    assert one(events, "checkpoint.init")["cat"] == "checkpoint"
    assert one(events, "train")["cat"] == "pipeline"
    meta = {e["name"] if e["name"] != "CM" else e["args"]["name"]: e for e in events if e.get("ph") == "M"}
    assert int(meta["evaluate.start"]["args"]["value"]) <= int(meta["evaluate.end"]["args"]["value"])


def test_disable_enable_switch_regions_and_decorated_functions(run_python, trace_dir):
    # A function decorated while enabled, called after disable(): no event
    # (pydftracer's wrapper checks at each call). A `with` whose node is
    # disabled inside it: no event, and the node still works afterwards.
    events, _ = run_traced(run_python, trace_dir, """
@ai.compute.step
def step():
    pass
ai.disable()
step()
with ai.compute.forward:
    pass
ai.enable()
with ai.compute.backward:
    ai.compute.backward.disable()
ai.compute.backward.enable()
# Nothing of the dropped event stays open: args attached now (how
# dft_fn.update reaches "the current event") stick to the node's next event.
ai.compute.backward._attach({"after": 1})
step()
with ai.compute.backward:
    pass
""")
    assert len(named(events, "step")) == 1
    assert not named(events, "forward")
    backward, = named(events, "backward")
    assert backward["args"].get("after") == 1


def test_training_loop_annotated_with_dft_ai(run_python, trace_dir, tmp_path):
    loop = """
import torch
from dftracer.python.ai import ai as dft_ai
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]

@dft_ai.compute.forward
def forward(x):
    return model(x)

for epoch in dft_ai.pipeline.epoch.iter(range(2)):
    dft_ai.update(epoch=epoch)
    with dft_ai.pipeline.train:
        for x, y in dft_ai.dataloader.fetch.iter(data):
            loss = torch.nn.functional.cross_entropy(forward(x), y)
            with dft_ai.compute.backward:
                opt.zero_grad()
                loss.backward()
            with dft_ai.compute.step:
                opt.step()
    with dft_ai.checkpoint.capture:
        torch.save(model.state_dict(), os.path.join(os.environ["TRACE_DIR"], "..", "ckpt.pt"))
"""
    events, _ = run_traced(run_python, trace_dir, loop)
    check_training_loop(events)
    for p in trace_files(trace_dir):
        os.unlink(p)
    # Unchanged script, DFTRACER_ENABLE unset: it runs and writes no file.
    expect_no_file_when_unset()
    off = run_python("import os\nfrom dftracer.python import dftracer\n"
                     "log = dftracer.initialize_log(os.path.join(os.environ['TRACE_DIR'], 't.pfw'), None, -1)\n"
                     + loop + "log.finalize()\n", env={"TRACE_DIR": trace_dir, "DFTRACER_ENABLE": None})
    assert trace_files(trace_dir) == [], off.stderr


def check_training_loop(events):
    ev = complete_events(events)
    count = {}
    for e in ev:
        count[(e["name"], e["cat"])] = count.get((e["name"], e["cat"]), 0) + 1
    assert count[("epoch.iter", "pipeline")] == 2 and count[("epoch.block", "pipeline")] == 2
    assert count[("train", "pipeline")] == 2 and count[("capture", "checkpoint")] == 2
    assert count[("fetch.iter", "dataloader")] == 6 and count[("fetch.block", "dataloader")] == 6
    for name in ("forward", "backward", "step"):
        assert count[(name, "compute")] == 6
    trains = named(events, "train")
    for name in ("forward", "backward", "step", "fetch.block"):
        for e in named(events, name):
            assert any(inside(t, e) for t in trains), (name, e)
    assert [e["args"]["epoch"] for e in trains] == [0, 1]


def test_log_event_takes_pydftracers_typed_args_positionally(run_python, trace_dir):
    # pydftracer: log_event(name, cat, start, dur, int_args, float_args,
    # string_args, relations). The fifth positional used to be our `args`,
    # which wrote a TagValue tuple as "(0, 3)".
    events, _ = run_traced(run_python, trace_dir, """
from dftracer.python.common import TagValue, TagDType, TagType, EntityRelation
t = log.get_time()
log.log_event("ev", "cat", t, 5, {"i": TagValue(3, TagDType.INT, TagType.KEY).value()},
              {"f": TagValue(1.5, TagDType.FLOAT).value()}, {"s": TagValue("x").value()})
eid = log.declare_entity("file", "/data/a.npz")
log.log_event("rel", "cat", t, 1, relations={EntityRelation.USED: [eid]})
""")
    e = one(events, "ev")
    assert e["args"]["i"] == 3 and e["args"]["f"] == 1.5 and e["args"]["s"] == "x"
    rel = one(events, "rel")
    assert rel["args"]["rel.used"] and len(rel["args"]["rel.used"]) == 16


def test_get_time_and_get_config_follow_pydftracer(run_python, trace_dir):
    proc = run_python("""
from dftracer.python import dftracer, get_time_scale
log = dftracer.get_instance()
print(log.get_time(), repr(log.get_config("DFTRACER_TIME_METRIC")))
""", env={"DFTRACER_ENABLE": None})  # unset: tracing off
    assert proc.stdout.split() == ["0", "''"]  # tracing off: 0 and ""
    _, proc = run_traced(run_python, trace_dir, """
from dftracer.python.common import get_time_scale
print(log.get_time() > 0, log.get_config("DFTRACER_TIME_METRIC"), log.get_config("DFTRACER_INC_METADATA"),
      log.get_config("DFTRACER_NOT_A_KEY") == "", get_time_scale())
""")
    assert proc.stdout.split() == ["True", "US", "0", "True", "1000000.0"]


def test_import_paths_and_names(run_python):
    proc = run_python("""
import dftracer.python.common as common
from dftracer.python.logger import dftracer, dft_fn, TagValue, NoOpProfiler, get_time_scale
from dftracer.python.dbg import dftracer as dbg_dftracer, dft_fn as dbg_dft_fn
from dftracer.python.dbg.ai import ai as dbg_ai
from dftracer.python.ai import (ai, compute, pipeline, dataloader, get_iter_block_name,
                                get_iter_handle_name, ITER_COUNT_NAME, INIT_NAME, ProfileCategory)
from dftracer.python.ai_init import ai as ai2
from dftracer.python.torch import trace_handler
from dftracer.python.dbg.torch import trace_handler as dbg_handler
from dftracer.python import (EntityStore, EntityRole, EntityRelation, ProfilerProtocol,
                             compute as pkg_compute)
assert dbg_dftracer is dftracer and dbg_ai is ai is ai2 and pkg_compute is compute
assert get_iter_block_name("fetch") == "fetch.block" == get_iter_block_name("fetch.block")
assert get_iter_handle_name("fetch") == "fetch.iter"
assert (ITER_COUNT_NAME, INIT_NAME, str(ProfileCategory.COMPUTE)) == ("count", "init", "compute")
n = NoOpProfiler()
assert n.get_time() == 0 and n.get_config("x") == "" and n.declare_entity("t", "k", 0, "") == 0
log = dftracer.get_instance()
for m in ("set_app_metadata_int", "set_app_metadata_string", "mark_used", "declare_entity",
          "declare_entity_type", "relate_entities"):
    assert callable(getattr(log, m)), m
for m in ("relate", "relate_entity", "uses", "generates"):
    assert callable(getattr(dft_fn("c", "n"), m)), m
assert log.declare_entity("file", "x") == 0  # tracing off
print("ok")
""", env={"DFTRACER_ENABLE": None})  # unset: tracing off
    assert proc.stdout.strip() == "ok"


def test_entities_app_metadata_and_used_marks(run_python, trace_dir):
    events, _ = run_traced(run_python, trace_dir, """
from dftracer.python.common import EntityStore, EntityRole, EntityRelation
a = log.declare_entity("file", "a.npz", EntityStore.LOCAL_DISK, "/data/a.npz")
assert a == log.declare_entity("file", "a.npz") != 0
d = log.declare_entity("dir", "/data")
log.declare_entity_type("file", EntityRole.INPUT, "training shard")
log.relate_entities(EntityRelation.CONTAINS, d, a)
f = dft_fn("io", "read")
with f:
    f.uses("file", "a.npz")
w = dft_fn("io", "write")
with w:
    out = w.generates("file", "b.npz", EntityStore.PARALLEL_FS)
log.set_app_metadata_int("nprocs", 4)
log.set_app_metadata_string("model", "resnet")
log.mark_used("custom")
log.mark_used("custom")
print(f"{a:016x} {out:016x}")
""")
    import json
    meta = [e for e in events if e.get("ph") == "M" and "value" in e.get("args", {})]
    values = [(e["args"]["name"], e["args"]["value"]) for e in meta]
    ents = [json.loads(v) for k, v in values if k == "entity"]
    assert len(ents) == 3  # a, d, b: each once
    assert {x["key"] for x in ents} == {"a.npz", "/data", "b.npz"}
    assert ("app.nprocs", "4") in values and ("app.model", "resnet") in values
    assert values.count(("used", "custom")) == 1
    rel = [json.loads(v) for k, v in values if k == "entity_relation"]
    assert rel and rel[0]["relation"] == "CONTAINS"
    assert one(events, "read")["args"]["rel.used"] == [x["id"] for x in ents if x["key"] == "a.npz"][0]
    assert one(events, "write")["args"]["rel.generated"] == [x["id"] for x in ents if x["key"] == "b.npz"][0]


def test_disabled_environment_writes_nothing_and_runs(run_python, tmp_path):
    expect_no_file_when_unset()
    proc = run_python("""
from dftracer.python import dftracer
from dftracer.python.ai import ai
log = dftracer.initialize_log("t.pfw", None, -1)
@ai.compute.forward
def f(x):
    return x * 2
with ai.pipeline.epoch:
    assert f(2) == 4
assert list(ai.dataloader.fetch.iter([1, 2])) == [1, 2]
log.finalize()
print("ran")
""", env={"DFTRACER_ENABLE": None})  # unset: tracing off
    assert proc.stdout.strip() == "ran"
    assert not [p for p in os.listdir(tmp_path) if ".pfw" in p]


def test_start_stop_on_nodes_categories_and_unbound(run_python, trace_dir):
    # start()/stop() are C method descriptors of DFTracerAI: on a node (a
    # DFTracerAI), on a category (a subclass), unbound, and with metadata.
    events, proc = run_traced(run_python, trace_dir, """
from dftracer.python.ai_common import DFTracerAI
ai.compute.forward.start()
ai.compute.forward.stop()
ai.compute.start()
ai.compute.stop()
DFTracerAI.start(ai.data.preprocess)
DFTracerAI.stop(ai.data.preprocess)
try:
    DFTracerAI.start(object())
except TypeError:
    print("typeerror")
print(type(ai.compute) is not DFTracerAI, type(ai.compute.forward) is DFTracerAI)
""")
    assert proc.stdout.split() == ["typeerror", "True", "True"], proc.stdout
    assert one(events, "forward")["cat"] == "compute"
    assert one(events, "preprocess")["cat"] == "data"
    assert len([e for e in events if e.get("cat") == "compute"]) == 2
