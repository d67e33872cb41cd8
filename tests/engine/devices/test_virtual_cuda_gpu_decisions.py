"""virtual-cuda makes the decisions a GPU makes where C++ code, not Python, decides by device.

Each case was a difference between virtual-cuda and a real H100 compile (torch 2.11,
bench/gpu_check.py), fixed by construction in devices/fake_cuda.py; these recordings
check the mechanism on this machine's torch:

- a C++ composite (`where(mask, 0.0, x)`, run by AOTAutograd above autograd or inside a
  decomposition) makes its scalar on its input's device: cuda, as on a GPU (on the H100
  the embedding backward's `scalar_tensor` of GPT-2/BERT/LLaMA training is shared with
  the forward's and fused into the backward kernels);
- an op that CUDA implements and other devices decompose (`_fused_rms_norm`) stays one
  op with its own backward, as on a GPU;
- under `--dynamic`, the memory-efficient attention mask whose strides are symbolic is
  padded as ATen does on a GPU, and the graph keeps its symbolic sizes (re-deriving the
  cuda values added a guard that specialized GPT-2's batch size on torch 2.11).
"""
from __future__ import annotations

import re
import textwrap

import pytest
from conftest import REPO, ZOO

SCALARS = textwrap.dedent('''
    import torch
    from torch import nn


    class Scalars(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)

        def forward(self, x):
            h = self.lin(x)
            h = torch.where(h > 0, 0.0, h)          # a composite at the top: where.ScalarSelf
            h = h.masked_fill(h < -1, 0.5)          # decomposed by Inductor's decompositions
            return h * 2


    def make_train():
        torch.manual_seed(0)
        return Scalars().train(), (torch.randn(8, 16),)
''')


def record(spec: str, train: bool, dynamic: bool = False):
    from kernelscope.engine.devices.device_audit import log_device_queries
    from kernelscope.engine.recorder import RecordOptions, record_factory

    with log_device_queries() as log:
        run = record_factory(spec, RecordOptions(device="virtual-cuda", train=train, dynamic=dynamic,
                                                 workspace=REPO))
    return run, log


def triton_names(run) -> list[str]:
    return [k.name for g in run.graphs for k in g.kernels if k.kind == "triton"]


@pytest.mark.slow
def test_scalars_made_by_composites_are_cuda_tensors(tmp_path):
    path = tmp_path / "scalars.py"
    path.write_text(SCALARS)
    run, log = record(f"{path}:make_train", train=True)
    assert {g.kind for g in run.graphs} == {"forward", "backward"}
    for graph in run.graphs:
        assert "device(type='cpu')" not in graph.post_grad_text, graph.post_grad_text
    # no 0-dim CPU tensor reached the compile (a GPU's trace has none either)
    assert not log.answered("cpu", all_shapes=True), dict(log.answered("cpu", all_shapes=True))
    scalars = [line for g in run.graphs for line in g.post_grad_text.splitlines()
               if re.search(r'"f32\[\]\[\]cuda:0" = torch.ops.aten.(full|scalar_tensor)', line)]
    assert scalars, "the where/masked_fill scalars are missing from the graphs"


@pytest.mark.slow
def test_rms_norm_stays_the_fused_op_a_gpu_runs():
    run, _ = record(f"{ZOO / 'moe.py'}:make_train", train=True)
    names = triton_names(run)
    forward = [g for g in run.graphs if g.kind == "forward"]
    backward = [g for g in run.graphs if g.kind == "backward"]
    assert forward and backward
    # the kernel names the H100 gave (Inductor names a kernel after the ops before decomposition)
    assert any("_fused_rms_norm" in name and "backward" not in name
               for g in forward for name in (k.name for k in g.kernels)), names
    assert any("_fused_rms_norm_backward" in k.name for g in backward for k in g.kernels), names
    # the CPU's decomposition names its kernels after pow/mean/rsqrt, a GPU's does not
    assert not any("rsqrt" in name for name in names), names


def test_the_cpu_kernel_that_keeps_fused_rms_norm_is_removed_afterwards():
    import torch

    from kernelscope.engine.devices import fake_cuda

    name = "aten::_fused_rms_norm"
    assert name in fake_cuda.ops_a_gpu_keeps()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    before = (has(name, "CPU"), has(name, "CUDA"))
    with fake_cuda.cuda_fake_tensors():
        assert has(name, "CPU") and has(name, "CUDA")
    assert (has(name, "CPU"), has(name, "CUDA")) == before
    # eager CPU rms_norm still computes (the composite) and differentiates
    x = torch.randn(4, 8, requires_grad=True)
    weight = torch.ones(8, requires_grad=True)
    out = torch.rms_norm(x, [8], weight, 1e-6)
    out.sum().backward()
    expected = x.detach() * torch.rsqrt(x.detach().pow(2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(out.detach(), expected)
    assert x.grad is not None and weight.grad is not None


def test_the_table_of_ops_a_gpu_keeps_matches_a_cuda_build():
    import torch

    from kernelscope.engine.devices import fake_cuda

    if not torch.backends.cuda.is_built():
        pytest.skip("the table is read from the dispatcher of a CUDA build of torch")
    assert fake_cuda.ops_a_gpu_keeps() == sorted(fake_cuda.CUDA_KEEPS_COMPOSITES)


@pytest.mark.slow
def test_dynamic_gpt2_pads_the_attention_mask_and_stays_symbolic():
    run, _ = record(f"{ZOO / 'gpt2.py'}:make", train=False, dynamic=True)
    names = triton_names(run)
    # ATen pads a mask whose strides are not known while compiling (as the H100's compile did)
    assert any("constant_pad_nd" in name and "_scaled_dot_product_efficient_attention" in name
               for name in names), names
    post_grad = "".join(g.post_grad_text for g in run.graphs)
    assert "Mod(s" in post_grad and "constant_pad_nd" in post_grad
    assert re.search(r"Sym\(s\d+\)", post_grad), "the batch size was specialized"
