"""A data-dependent branch written with `torch.cond`: one graph, two branch subgraphs.

Shows: `torch.cond`'s true and false branches recorded as subgraphs nested in the
graph that calls them (kernelscope show: "cond: true branch of Gate.forward"), each
branch's ops traced to the branch function's lines and on to their own kernels.
"""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)

        def positive(h):
            return torch.sigmoid(h) * h + 1.0

        def negative(h):
            return torch.tanh(h) - h.pow(2)

        out = torch.cond(h.sum() > 0, positive, negative, (h,))
        return torch.softmax(out, dim=-1)


def make():
    torch.manual_seed(0)
    return Gate(), (torch.randn(16, 64),)
