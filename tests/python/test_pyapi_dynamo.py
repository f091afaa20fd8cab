"""`dynamo`/`Dynamo` as pydftracer's DFTracerAI nodes, `compile(f,
autograd=False)`, and the pydftracer guide's Dynamo examples run unchanged
(../shared/seeds/001_04b1444f70f8ecf2.txt)."""
import glob
import os

from trace_reader import complete_events, read_trace, trace_files

ENV = {"DFTRACER_ENABLE": "1"}


def traced_events(run_python, trace_dir, code):
    run_python(code, env=dict(ENV, TRACE_DIR=trace_dir), timeout=300)
    files = trace_files(trace_dir)
    assert len(files) == 1, files
    return complete_events(read_trace(files[0]))


def names(events, cat="dynamo"):
    return [e["name"] for e in sorted(events, key=lambda e: e["ts"]) if e["cat"] == cat]


def test_dynamo_objects_are_dftracer_ai_nodes(run_python, trace_dir):
    events = traced_events(run_python, trace_dir, """
import os, torch
from dftracer.python import dftracer, dynamo, Dynamo
from dftracer.python.ai import DFTracerAI
log = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "t.pfw"), None, -1)
assert isinstance(dynamo, DFTracerAI) and dynamo.cat == "dynamo" and dynamo.name == "dynamo"
with dynamo:
    pass
d = Dynamo(name="mine", epoch=1)
@d
def f():
    return 3
assert f() == 3
d.start(); d.stop()
d.disable()
with d:
    pass
f()
d.enable()
d.update(step=4)
with d.derive("sub"):
    pass
for _ in d.iter(range(2)):
    pass
d.reset()

@dynamo.compile
def g(x):
    return torch.sin(x) * 2
torch.testing.assert_close(g(torch.ones(3)), torch.sin(torch.ones(3)) * 2)
log.finalize()
""")
    mine = [e for e in events if e["name"] == "mine"]
    assert len(mine) == 2 and all(e["cat"] == "dynamo" and e["args"]["epoch"] == 1 for e in mine)
    assert [e["name"] for e in events if e["name"] == "dynamo"] == ["dynamo"]
    sub = [e for e in events if e["name"] == "mine.sub"]
    assert len(sub) == 1 and sub[0]["args"]["step"] == 4 and sub[0]["args"]["epoch"] == 1
    assert len([e for e in events if e["name"] == "mine.iter"]) == 2
    ops = [n for n in names(events) if n.startswith("function.")]
    assert ops == ["function.sin.default", "function.mul.Tensor"]


GUIDE_MODEL = """
import os, sys, torch
from dftracer.python import dftracer, dynamo
df_logger = dftracer.initialize_log(os.path.join(os.environ["TRACE_DIR"], "dynamo_trace.pfw"), "/tmp/data", -1)

class SimpleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, 1)
        self.fc = torch.nn.Linear(16 * 15 * 15, 10)

    @dynamo.compile{ARGS}
    def forward(self, x):
        x = self.conv(x)
        x = torch.nn.functional.relu(x)
        x = torch.nn.functional.max_pool2d(x, 2)
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        return x

model = SimpleModel()
sample = torch.randn(1, 3, 32, 32, requires_grad={GRAD})
output = model(sample)
{AFTER}
df_logger.finalize()
"""


def test_guide_example_dynamo_compile(run_python, trace_dir):
    events = traced_events(run_python, trace_dir,
                           GUIDE_MODEL.format(ARGS="", GRAD="False", AFTER=""))
    ops = [n for n in names(events) if n.startswith("function.")]
    assert ops[:3] == ["function.convolution.default", "function.relu.default",
                       "function.max_pool2d_with_indices.default"]
    assert "function.addmm.default" in ops


def test_compile_without_aot_autograd_names_torch_functions(run_python, trace_dir):
    # pydftracer 2.0.6 on this model with autograd=False writes exactly these
    # five op events; the backward runs in eager autograd, not in a graph.
    events = traced_events(run_python, trace_dir, GUIDE_MODEL.format(
        ARGS="(autograd=False)", GRAD="True", AFTER="output.sum().backward()\nassert sample.grad is not None"))
    ops = [n for n in names(events) if n.startswith(("function.", "method."))]
    assert ops == ["function.conv2d", "function.relu", "function.max_pool2d", "method.view", "function.linear"]
    assert not [e for e in events if e["name"] == "graph.backward"]
    assert all("autograd" not in e.get("args", {}) for e in events)
    conv = next(e for e in events if e["name"] == "function.conv2d")
    assert conv["args"]["grad_enabled"] == 1 and conv["args"]["module"] == "conv"


GUIDE_BACKEND = """
import torch
from dftracer.python import dftracer, dftracer_dynamo_backend

# Initialize logger
df_logger = dftracer.initialize_log("dynamo_trace.pfw", "/tmp/data", -1)

# Define your model
class MyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(784, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 10)
        )

    def forward(self, x):
        return self.layers(x)

# Compile with DFTracer backend
model = MyModel()
compiled_model = torch.compile(model, backend=dftracer_dynamo_backend)

# Run inference
input_tensor = torch.randn(32, 784)
output = compiled_model(input_tensor)

df_logger.finalize()
"""

GUIDE_CUSTOM_TRACER = """
from dftracer.python import Dynamo

# Create a custom Dynamo tracer
dynamo_tracer = Dynamo(
    name="resnet50",
    epoch=1,
    step=100,
    image_idx=42,
    image_size=(224, 224),
    enable=True
)
"""

# The guide leaves train_loader undefined: two batches of MNIST-sized input.
GUIDE_TRAINING = """
import torch
train_loader = [(torch.randn(2, 1, 28, 28), torch.randint(0, 10, (2,))) for _ in range(2)]
""" + """
import torch
import torch.nn as nn
from dftracer.python import dftracer, dynamo

# Initialize logger
df_logger = dftracer.initialize_log("training.pfw", "/tmp/data", -1)

# Model definition
class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    @dynamo.compile
    def forward(self, x):
        x = self.conv1(x)
        x = torch.nn.functional.relu(x)
        x = self.conv2(x)
        x = torch.nn.functional.relu(x)
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = torch.nn.functional.relu(x)
        x = self.fc2(x)
        return x

# Training setup
model = ConvNet()
optimizer = torch.optim.Adam(model.parameters())
criterion = nn.CrossEntropyLoss()

# Training loop
for epoch in range(5):
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()

        # Forward pass (traced by Dynamo)
        output = model(data)

        # Compute loss and backward
        loss = criterion(output, target)
        loss.backward()

        # Optimizer step
        optimizer.step()

df_logger.finalize()
"""


def guide_events(run_python, tmp_path, code):
    """Runs a guide example as written (it names its file relative to the
    working directory) and returns the complete events of its one trace."""
    run_python(code, env=ENV, timeout=300)
    files = trace_files(str(tmp_path))
    assert len(files) == 1, files
    events = complete_events(read_trace(files[0]))
    remove_traces(tmp_path)
    return events


def remove_traces(directory):
    for f in glob.glob(os.path.join(str(directory), "*.pfw*")):  # .idx too
        os.unlink(f)


def test_guide_examples_backend_custom_tracer_and_training_loop(run_python, tmp_path):
    events = guide_events(run_python, tmp_path, GUIDE_BACKEND)
    assert {e["name"] for e in events if e["name"].startswith("graph.")} == {"graph.forward"}
    assert "function.addmm.default" in names(events)
    run_python(GUIDE_CUSTOM_TRACER, env=ENV)
    remove_traces(tmp_path)  # DFTRACER_ENABLE=1 alone traced it to ./dftracer-*
    events = guide_events(run_python, tmp_path, GUIDE_TRAINING)
    graphs = [e["name"] for e in events if e["name"].startswith("graph.")]
    assert graphs.count("graph.forward") == 10 and graphs.count("graph.backward") == 10
    ops = set(names(events))
    assert {"function.convolution.default", "function.convolution_backward.default"} <= ops
