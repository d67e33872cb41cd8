"""virtual-cuda's fake cuda tensors take Inductor's device-dependent decompositions the GPU's way.

These cases were once patched one by one (a CPU-only bmm rewrite skipped, the
convolution bias gradient forced to a reduction); they now follow from tracing on
CPU-backed fake cuda tensors (devices/fake_cuda.py), which is what virtual-cuda's
AOTAutograd does.
"""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def fake_cuda_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    from kernelscope.engine.devices import fake_cuda, virtual_cuda

    with virtual_cuda.pretend_cuda_present(), fake_cuda.cuda_fake_tensors():
        yield FakeTensorMode(allow_non_fake_inputs=True)


def traced_targets(fn, *args) -> list[str]:
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn, decomposition_table=select_decomp_table())(*args).graph
    return [str(node.target) for node in graph.nodes if node.op == "call_function"]


def on_cpu_and_on_fake_cuda(fn, *shapes) -> tuple[list[str], list[str]]:
    import torch

    plain = traced_targets(fn, *[torch.randn(shape) for shape in shapes])
    with fake_cuda_mode() as mode:
        with mode:
            inputs = [torch.randn(shape, device="cuda") for shape in shapes]
        as_cuda = traced_targets(fn, *inputs)
    return plain, as_cuda


def test_cpu_only_bmm_rewrite_is_not_applied():
    import torch

    plain, as_cuda = on_cpu_and_on_fake_cuda(torch.bmm, (2, 1, 8), (2, 8, 1))
    assert "aten.bmm.default" not in plain  # CPU: a row times a column becomes a sum
    assert as_cuda == ["aten.bmm.default"]


def test_convolution_bias_gradient_is_a_reduction_as_on_a_gpu():
    import torch

    def conv_backward(grad, x, weight):
        return torch.ops.aten.convolution_backward(grad, x, weight, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                   [True, True, True])

    plain, as_cuda = on_cpu_and_on_fake_cuda(conv_backward, (2, 4, 8, 8), (2, 3, 8, 8), (4, 3, 3, 3))
    assert "aten.sum.dim_IntList" not in plain
    assert "aten.sum.dim_IntList" in as_cuda and "aten.convolution_backward.default" in as_cuda


def test_fake_cuda_tensors_answer_cuda_in_python_and_run_autograd():
    import torch

    with fake_cuda_mode() as mode:
        with mode:
            x = torch.randn(4, 4, device="cuda", requires_grad=True)
            y = (x.sin() * 2)[:, :1].sum()
            (grad,) = torch.autograd.grad(y, x)  # the engine sees a CPU tensor
        assert (x.device.type, x.is_cuda, x.get_device()) == ("cuda", True, 0)
        assert grad.device.type == "cuda"


def test_the_patches_are_undone_afterwards():
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch._subclasses.functional_tensor import FunctionalTensor
    from torch.fx.experimental import proxy_tensor

    def state():
        return (FakeTensor.__dict__["device"], FakeTensor.__dict__["__torch_dispatch__"],
                FakeTensorMode.__dict__["avoid_device_init"], proxy_tensor.proxy_call,
                proxy_tensor.CONSTANT_NUMEL_LIMIT, dict(torch.ops.aten.to.device.py_kernels))

    before = state()
    with fake_cuda_mode():
        assert state() != before and "device" in FunctionalTensor.__dict__
    assert state() == before
    assert "is_cuda" not in FakeTensor.__dict__ and "_make_subclass" not in torch.Tensor.__dict__
    assert "device" not in FunctionalTensor.__dict__
    plain = traced_targets(torch.bmm, torch.randn(2, 1, 8), torch.randn(2, 8, 1))
    assert "aten.bmm.default" not in plain  # the CPU still decomposes as the CPU does
