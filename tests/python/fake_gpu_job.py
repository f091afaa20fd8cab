"""A training job on a fake GPU (test_cuda_fake_cupti.py runs it): its ops
launch work through the fake CUPTI's fake_cupti_launch, as a CUDA op's CPU
side would, and each step ends with a device synchronize (a loss.item()).

    python fake_gpu_job.py MODE STEPS FWD_NS BWD_NS COPY_NS SET_NS [MARKS]

MODE: eager (trace_eager: the LibTorch observer), compile (torch.compile
with the capture backend) or inductor (with dftracer's Inductor backend: the
custom ops are fallback kernel calls); the observer records the ops outside
the graphs. MARKS `profiler` (the default): each step is a ProfilerStep#N
range (cat user_annotation), written with dft_fn, as torch.profiler writes
them; a warm-up step (compiling in compile mode) comes first, outside them.
MARKS `none`: nothing marks the steps (the analyzer finds them, from the
optimizer's steps).
The model: two Linear-like blocks (`enc`, `dec`) whose matmuls are the custom
op fake::gpu_linear (kernel gemm_fwd, cudaLaunchKernel, stream 7; backward
fake::gpu_linear_bwd, kernel gemm_bwd, cuLaunchKernel as Triton launches),
a host-to-device copy of the batch (stream 3, launched from a loader thread)
and a memset (stream 7) per step, and SGD.
"""
import concurrent.futures
import ctypes
import sys

import torch
import torch.nn as nn

import dftracer  # noqa: F401  (DFTRACER_ENABLE=1: tracing and the device source start)
from dftracer.python import dft_fn
from dftracer.python import dftracer as log_api

MODE = sys.argv[1]
STEPS = int(sys.argv[2])
FWD_NS, BWD_NS, COPY_NS, SET_NS = (int(a) for a in sys.argv[3:7])
MARKS = sys.argv[7] if len(sys.argv) > 7 else "profiler"
COMPUTE, COPY = 7, 3  # streams

fake = ctypes.CDLL("libcupti.so.13")  # the one libdftracer_cuda loaded
fake.fake_cupti_launch.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64]
fake.fake_cupti_launch.restype = ctypes.c_uint32
KERNEL, TRITON_KERNEL, MEMCPY, MEMSET = 0, 1, 2, 3


@torch.library.custom_op("fake::gpu_linear", mutates_args=())
def gpu_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    fake.fake_cupti_launch(b"gemm_fwd", KERNEL, FWD_NS, COMPUTE, 0)
    return x @ w.t()


@gpu_linear.register_fake
def _(x, w):
    return x.new_empty(x.shape[0], w.shape[0])


@torch.library.custom_op("fake::gpu_linear_bwd", mutates_args=())
def gpu_linear_bwd(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    fake.fake_cupti_launch(b"gemm_bwd", TRITON_KERNEL, BWD_NS, COMPUTE, 0)
    return grad @ w, grad.t() @ x


@gpu_linear_bwd.register_fake
def _(grad, x, w):
    return x.new_empty(x.shape), w.new_empty(w.shape)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    x, w = ctx.saved_tensors
    return gpu_linear_bwd(grad, x, w)


gpu_linear.register_autograd(_backward, setup_context=_setup)


@torch.library.custom_op("fake::h2d", mutates_args=())
def h2d(x: torch.Tensor) -> torch.Tensor:
    fake.fake_cupti_launch(b"", MEMCPY, COPY_NS, COPY, x.numel() * x.element_size())
    return x.clone()


@h2d.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("fake::gpu_zero", mutates_args=())
def gpu_zero(x: torch.Tensor) -> torch.Tensor:
    fake.fake_cupti_launch(b"", MEMSET, SET_NS, COMPUTE, x.numel() * x.element_size())
    return torch.zeros_like(x)


@gpu_zero.register_fake
def _(x):
    return torch.empty_like(x)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d, d) * 0.1)

    def forward(self, x):
        return gpu_linear(x, self.weight)


class Net(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.enc = Block(d)
        self.dec = Block(d)

    # Only the custom ops: under Inductor they are fallback kernels, with no
    # generated C++ kernel to compile (seconds on a loaded machine).
    def forward(self, x):
        return self.dec(self.enc(x)), gpu_zero(x)


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batch = torch.randn(4, 8)

# The observer records the ops outside compiled graphs (the copy, the
# optimizer) in both modes; in compile mode the graphs' nodes are the capture
# backend's events.
from dftracer.python import trace_eager  # noqa: E402

trace_eager()
run = model
if MODE == "compile":
    from dftracer.python import dftracer_dynamo_backend
    run = torch.compile(model, backend=dftracer_dynamo_backend)
elif MODE == "inductor":
    from dftracer.python import dftracer_inductor_backend
    run = torch.compile(model, backend=dftracer_inductor_backend)


# The copy runs on a thread of its own (as a prefetching loader's would).
loader = concurrent.futures.ThreadPoolExecutor(1)


def train_step():
    x = loader.submit(h2d, batch).result()
    y, z = run(x)
    loss = y.sum() + z.sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    fake.fake_cupti_synchronize()


train_step()  # warm-up (compiles), outside the steps
for step in range(STEPS):
    if MARKS == "none":
        train_step()
        continue
    with dft_fn("user_annotation", f"ProfilerStep#{step}"):
        train_step()
log_api.get_instance().finalize()
