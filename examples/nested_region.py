"""Repeated blocks compiled once: `torch.compiler.nested_compile_region`.

Shows: a block's forward marked as a nested compile region is traced and compiled
once as a subgraph (`invoke_subgraph`) and called from each of its call sites; kernelscope
records the region as a subgraph nested in the model's graph, with every call site
linked to it (kernelscope show: "nested region Block.forward, 4 call sites").
"""
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    @torch.compiler.nested_compile_region
    def forward(self, x):
        h = F.gelu(self.fc(x))
        return self.norm(h + x)


class Stack(nn.Module):
    def __init__(self, dim: int = 64, depth: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x.relu()


def make():
    torch.manual_seed(0)
    return Stack(), (torch.randn(16, 64),)
