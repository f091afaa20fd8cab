"""A backward graph where one weight's gradient is accumulated thousands of
times (a weight used at every position of a long loop): the kernel table's
module lookup follows the chain of gradient accumulations without
recursion (no RecursionError), and the last one gets the module its inputs
share."""
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402

from dftracer.python.inductor import inductor_kernels  # noqa: E402

CHAIN = 3 * sys.getrecursionlimit()


def test_a_long_chain_of_gradient_accumulations_is_described(monkeypatch):
    g = torch.fx.Graph()
    w = g.placeholder("w")
    acc = g.call_function(torch.ops.aten.mul.Tensor, (w, w))
    acc.meta["nn_module_stack"] = {"cell": ("cell", torch.nn.Linear)}
    for _ in range(CHAIN):
        grad = g.call_function(torch.ops.aten.mul.Tensor, (w, w))
        grad.meta["nn_module_stack"] = {"cell": ("cell", torch.nn.Linear)}
        acc = g.call_function(torch.ops.aten.add.Tensor, (acc, grad))
        acc.meta["is_gradient_acc"] = True
    g.output(acc)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    site = inductor_kernels.KernelSite(1, "cpp_fused_add_0", "cpp", "cpp_fused_add_0:0")
    entries, complete = inductor_kernels._entries_from_provenance(
        [site], gm, inductor_kernels.FORWARD, {site.handle: [acc.name]}, None)
    assert complete
    assert entries[0].modules == ["cell"]
