"""virtual-cuda answers Inductor's device-dependent decompositions as a GPU would."""
from __future__ import annotations



def traced_targets(fn, *args) -> list[str]:
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn, decomposition_table=select_decomp_table())(*args).graph
    return [str(node.target) for node in graph.nodes if node.op == "call_function"]


def on_cpu_and_as_on_cuda(fn, *args) -> tuple[list[str], list[str]]:
    from kernelscope.engine.devices.cuda_decompositions import decompositions_as_on_cuda

    plain = traced_targets(fn, *args)
    with decompositions_as_on_cuda():
        as_cuda = traced_targets(fn, *args)
    return plain, as_cuda


def test_cpu_only_bmm_rewrite_is_not_applied():
    import torch

    plain, as_cuda = on_cpu_and_as_on_cuda(torch.bmm, torch.randn(2, 1, 8), torch.randn(2, 8, 1))
    assert "aten.bmm.default" not in plain  # CPU: a row times a column becomes a sum
    assert as_cuda == ["aten.bmm.default"]


def test_convolution_bias_gradient_is_a_reduction_as_on_a_gpu():
    import torch

    def conv_backward(grad, x, weight):
        return torch.ops.aten.convolution_backward(grad, x, weight, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                   [True, True, True])

    args = (torch.randn(2, 4, 8, 8), torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3))
    plain, as_cuda = on_cpu_and_as_on_cuda(conv_backward, *args)
    assert "aten.sum.dim_IntList" not in plain
    assert "aten.sum.dim_IntList" in as_cuda and "aten.convolution_backward.default" in as_cuda


def test_the_tables_are_restored_afterwards():
    import torch
    from torch._inductor import decomposition

    from kernelscope.engine.devices.cuda_decompositions import decompositions_as_on_cuda

    bmm = torch.ops.aten.bmm.default
    before = dict(decomposition.decompositions), dict(decomposition.select_decomp_table())
    with decompositions_as_on_cuda():
        assert decomposition.decompositions[bmm] is not before[0][bmm]
        assert decomposition.select_decomp_table()[bmm] is not before[1][bmm]
    assert (decomposition.decompositions, decomposition.select_decomp_table()) == before
    plain = traced_targets(torch.bmm, torch.randn(2, 1, 8), torch.randn(2, 8, 1))
    assert "aten.bmm.default" not in plain  # the CPU rewrite is back
