"""A small compiled training run traced with the real tracer, for the tests
that hand a raw trace to other tools (DFTracer's dftracer-utils, the Perfetto
UI): a two-layer MLP compiled with our backend (forward and backward op
events), an epoch / step region per iteration, a metadata event.

run_training(run_python, prefix, compress) -> path of the trace file.
"""
from trace_reader import trace_files

TRAINING = """
import os, torch
from dftracer.python import dftracer, dft_fn, dftracer_dynamo_backend
torch.manual_seed(0)
log = dftracer.initialize_log(os.environ["TRACE_PREFIX"], None, -1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step_fn = torch.compile(model, backend=dftracer_dynamo_backend)
x, y = torch.randn(8, 16), torch.randn(8, 4)
for epoch in range(2):
    with dft_fn("train", "epoch", epoch=epoch):
        for step in range(3):
            with dft_fn("train", "step", step=step):
                loss = torch.nn.functional.mse_loss(step_fn(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
log.log_metadata_event("model", "mlp")
log.finalize()
"""


def run_training(run_python, prefix, compress=True, env=None):
    import os

    e = {"TRACE_PREFIX": prefix, "DFTRACER_TRACE_COMPRESSION": "1" if compress else "0"}
    e.update(env or {})
    run_python(TRAINING, env=e, timeout=300)
    files = trace_files(os.path.dirname(prefix), os.path.basename(prefix) + "-*")
    assert len(files) == 1, files
    return files[0]
