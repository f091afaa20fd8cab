"""The small eager training loop (Linear-ReLU-Linear, SGD, one batch) that tests
trace with the LibTorch observer (trace_eager), run in a fresh interpreter:
test_analyze_parity.py's eager trace and test_analyze_eager_category.py's."""
from trace_reader import trace_files

_SCRIPT = """
import contextlib, os, time, torch
from dftracer.python import dftracer, dft_fn, trace_eager
torch.manual_seed(0)
torch.set_num_threads(1)
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "run.pfw"), None, -1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
with trace_eager(memory={memory}):
    for step in range({steps}):
        with dft_fn("train", "train_step", step=step) if {mark_steps} else contextlib.nullcontext():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
            if {sleep_s}:
                time.sleep({sleep_s})
log.finalize()
"""


def eager_training_trace(base, steps, memory=False, mark_steps=False, sleep_s=0.0):
    """Runs the loop `steps` times in a fresh interpreter under `base` (a directory) and
    returns the path of its trace. memory: trace_eager's memory capture; mark_steps: each
    step inside a dft_fn("train_step", step=N) region, sleeping `sleep_s` seconds in it."""
    import os

    from conftest import run_python_in

    d = os.path.join(str(base), "trace")
    os.makedirs(d)
    script = _SCRIPT.format(memory=bool(memory), steps=int(steps), mark_steps=bool(mark_steps), sleep_s=float(sleep_s))
    run_python_in(str(base), script, env={"TRACE_DIR": d, "DFTRACER_DISABLE_IO": "1"}, timeout=300)
    [path] = trace_files(d)
    return path
