"""Two residual blocks called from a loop: `x = block(x)` is an *outer* line of every
node inside the blocks (for the language server's hover on calling lines)."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.proj(x))


class Net(nn.Module):
    def __init__(self, depth: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x.sum(-1)


def make():
    torch.manual_seed(0)
    return Net(), (torch.randn(4, 32),)
