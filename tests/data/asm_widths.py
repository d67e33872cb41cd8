"""One fused elementwise kernel over 2 or 12 inputs: the wide one needs more registers
(a pointer and loaded values per input). For the registers-increase gate."""
import torch
from torch import nn


class SinCosSum(nn.Module):
    def forward(self, *xs):
        return sum(torch.sin(x) * torch.cos(x) for x in xs)


def make_narrow():
    return SinCosSum(), tuple(torch.randn(4096) for _ in range(2))


def make_wide():
    return SinCosSum(), tuple(torch.randn(4096) for _ in range(12))


def wide_reduction(x, y, z, w):
    return (x.sin() * y.cos() + z.exp() * w.tanh() + x * y * z * w).sum(-1)


def make_wide_reduction():
    """A looped reduction using enough registers that Inductor, on a GPU, also compiles it
    with a halved R0_BLOCK (dynamic R0_BLOCK scaling) and times both."""
    return wide_reduction, tuple(torch.randn(1024, 4096) for _ in range(4))
