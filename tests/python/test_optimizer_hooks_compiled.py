"""The optimizer step hooks (compile/optimizer_events.py) inside a compiled
function: a `@torch.compile` function that calls opt.step() compiles to as
many frames and graph breaks traced as untraced (the hooks check
torch.compiler.is_compiling() before anything Dynamo cannot trace). Their
events number the optimizer instances (args.opt), and install() registers
the hooks once when two threads call it together."""
import json
import os
import threading

import pytest

torch = pytest.importorskip("torch")

import trace_reader  # noqa: E402

COMPILED_STEP = """
import json, sys
import dftracer.python
import torch
from torch._dynamo.utils import counters
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
m(torch.randn(4, 16)).sum().backward()

@torch.compile(backend="eager")
def step():
    opt.step()

for _ in range(3):
    step()
import dftracer.python.compile.optimizer_events as oe
print(json.dumps({"frames": counters["frames"]["total"], "breaks": sum(counters["graph_break"].values()),
                  "hooks": oe._installed}))
"""


def compiled_counts(run_python, env):
    proc = run_python(COMPILED_STEP, env=env, timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_compiled_optimizer_step_has_no_more_frames_or_breaks_traced(run_python, trace_dir):
    untraced = compiled_counts(run_python, {"DFTRACER_ENABLE": None})
    traced = compiled_counts(run_python, {"DFTRACER_LOG_FILE": os.path.join(trace_dir, "run"),
                                          "DFTRACER_DISABLE_IO": "1"})
    assert not untraced["hooks"] and traced["hooks"]
    assert traced["frames"] <= untraced["frames"], (traced, untraced)
    assert traced["breaks"] <= untraced["breaks"], (traced, untraced)


TWO_OPTIMIZERS = """
import torch
import dftracer.python.compile.optimizer_events as oe
from dftracer.python import dftracer
oe.install()
log = dftracer.initialize_log("{log}", None, -1)
a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.Adam(b.parameters(), lr=0.1)
for _ in range(3):
    (a(torch.ones(1, 4)).sum() + b(torch.ones(1, 4)).sum()).backward()
    opt_b.step()
    opt_a.step()
log.finalize()
"""


def test_optimizer_events_number_the_instances(run_python, trace_dir):
    run_python(TWO_OPTIMIZERS.format(log=os.path.join(trace_dir, "run")), env={"DFTRACER_DISABLE_IO": "1"})
    events = [e for p in trace_reader.trace_files(trace_dir) for e in trace_reader.read_trace(p)]
    steps = sorted((e for e in events if e.get("name", "").startswith("Optimizer.step#")), key=lambda e: e["ts"])
    assert [(e["name"], e["args"]["opt"]) for e in steps] == [
        ("Optimizer.step#Adam.step", 0), ("Optimizer.step#SGD.step", 1)] * 3


def test_install_from_two_threads_registers_once(monkeypatch):
    import torch.optim.optimizer as optim_mod
    from dftracer.python.compile import optimizer_events as oe

    monkeypatch.setattr(oe, "_installed", False)
    registered = []
    barrier = threading.Barrier(2)

    def slow_register(hook):  # widens the window between the check and the registration
        import time
        time.sleep(0.05)
        registered.append(hook)

    monkeypatch.setattr(optim_mod, "register_optimizer_step_pre_hook", slow_register)
    monkeypatch.setattr(optim_mod, "register_optimizer_step_post_hook", lambda hook: registered.append(hook))

    def install():
        barrier.wait()
        oe.install()

    threads = [threading.Thread(target=install) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert registered == [oe._pre, oe._post]


SCALER_STEP = """
import json, sys
import torch
from dftracer.python import dftracer
log = dftracer.initialize_log(sys.argv[1] if len(sys.argv) > 1 else "{log}", None, -1)
dynamo_before = "torch._dynamo" in sys.modules  # eager tracing installed the wrappers before Dynamo loaded
from torch._dynamo.utils import counters
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")

@torch.compile(backend="eager")
def step(x):
    scaler.scale(m(x).sum()).backward()
    scaler.step(opt)
    scaler.update()

for _ in range(3):
    opt.zero_grad()
    step(torch.randn(4, 16))
log.finalize()
print(json.dumps({{"graphs": counters["stats"]["unique_graphs"], "calls": counters["stats"]["calls_captured"],
                  "breaks": sum(counters["graph_break"].values()), "dynamo_before": dynamo_before}}))
"""


def test_a_compiled_step_calling_a_grad_scaler_is_traced_when_dynamo_loads_after_tracing(run_python, trace_dir):
    """Dynamo skips the scaler's wrappers, told when it loads: the compiled
    function compiles the same graphs with the same breaks as untraced, and
    each call is still its event, its ops the update's. (Dynamo then looks
    at the scaler's own frames as frames of their own, once: its frame count
    is 18 where it is 12 untraced, whatever the number of calls.)"""
    def counts(env, log):
        proc = run_python(SCALER_STEP.format(log=log), env=env, timeout=300)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    untraced = counts({"DFTRACER_ENABLE": None}, os.path.join(trace_dir, "unused"))
    traced = counts({"DFTRACER_TRACE_EAGER": "1", "DFTRACER_DISABLE_IO": "1"}, os.path.join(trace_dir, "run"))
    assert not traced["dynamo_before"]
    assert {k: traced[k] for k in ("graphs", "calls", "breaks")} == \
        {k: untraced[k] for k in ("graphs", "calls", "breaks")}, (traced, untraced)
    events = [e for p in trace_reader.trace_files(trace_dir) for e in trace_reader.read_trace(p)]
    scaler = [e for e in events if e.get("name") == "GradScaler.step#SGD.step"]
    # Dynamo compiles the optimizer's step inside the scaler's frame, so no
    # step hook runs and each reads skipped (docs/capture.md); the events
    # still end the steps.
    assert [(e["args"]["opt"], e["args"]["skipped"]) for e in scaler] == [(0, 1)] * 3
    updates = [e for e in events if e.get("name") == "aten::_amp_update_scale_"]
    assert len(updates) == 3 and {e["args"].get("phase") for e in updates} == {"optimizer"}, updates
