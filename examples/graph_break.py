"""A model whose forward breaks the graph twice: a `print` Dynamo cannot trace,
and a Python branch on a tensor's value.

Shows: several compiled graphs for one forward, each graph break with its reason
and the user line that caused it.
"""
import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        print("kernelscope example: hidden mean computed")
        if h.mean() > 0:
            h = h * 2
        else:
            h = h - 1
        return torch.sigmoid(self.out(h))


def make():
    torch.manual_seed(0)
    return Gated(), (torch.randn(8, 32),)
