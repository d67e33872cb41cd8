"""A SwiGLU MLP (the feed-forward block of LLaMA-style transformers):
down(silu(gate(x)) * up(x)).

Shows: three matmuls that become extern mm calls, and SiLU (its `exp`) fused with the gating
multiply into one kernel — a Triton kernel on CUDA targets; on `--target cpu` one C++ kernel
of Inductor's CPU backend (`cpp_fused_mul_silu_0`), whose vectorized body computes SiLU's
`exp` (`auto tmp2 = tmp1.exp();`). Built with `--aot` it is also AOTInductor's example
(docs/aot.md).
"""
import torch
import torch.nn.functional as F
from torch import nn


class SwiGLUMLP(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 128):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gated = F.silu(self.gate(x))
        h = gated * self.up(x)
        return self.down(h)


def make():
    torch.manual_seed(0)
    return SwiGLUMLP(), (torch.randn(16, 64),)
