"""An MLP block: Linear -> GELU -> LayerNorm -> Linear -> softmax.

Shows: a matmul that becomes an extern mm/addmm call in the wrapper, and GELU,
LayerNorm and softmax fused into Triton kernels (GELU's `erf`, LayerNorm's
`rsqrt`, softmax's `exp`).
"""
import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 128):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.fc1(x)
        h = F.gelu(h)
        h = self.norm(h)
        h = self.fc2(h)
        return torch.softmax(h, dim=-1)


def make():
    torch.manual_seed(0)
    return MLP(), (torch.randn(16, 64),)
