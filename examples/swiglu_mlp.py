"""A SwiGLU MLP (as in LLaMA's feed-forward): down(silu(gate(x)) * up(x)).

Shows, on `--target cpu`: the three matmuls as extern mm calls and SiLU with the product
fused into one C++ kernel of Inductor's CPU backend (`cpp_fused_mul_silu_0`), whose
vectorized body computes SiLU's `exp` (`auto tmp2 = tmp1.exp();`); on a GPU target the same
fusion is a Triton kernel.
"""
import torch
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 128):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gate = F.silu(self.gate(x))
        return self.down(gate * self.up(x))


def make():
    torch.manual_seed(0)
    return SwiGLU(), (torch.randn(16, 64),)
