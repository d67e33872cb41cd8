"""Ops that end in different kernels for reasons other than the scheduler's refusal, for
`kernelscope compile examples/kept_apart.py:make`.

Shows: `not_fused` answers with their cause (docs/why.md):
- `self.fc(x)` is an extern call (`extern_kernels.addmm`): the `relu` after it gets a
  kernel of its own (cause "extern");
- `mixed` reads five buffers and has two users: Inductor stores it in a buffer instead
  of computing it inside both reductions (cause "realized buffer", with the heuristic's
  numbers: config.realize_reads_threshold);
- `torch._dynamo.graph_break()` puts the softmax in another graph (cause "graph break").
"""
import torch
from torch import nn


class KeptApart(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, a, b, c):
        h = torch.relu(self.fc(x))
        mixed = h * a + b * c - a * x
        rows, cols = mixed.amax(dim=1), mixed.sum(dim=0)
        torch._dynamo.graph_break()
        return torch.softmax(rows, dim=0), cols


def make():
    torch.manual_seed(0)
    return KeptApart(), tuple(torch.randn(64, 64) for _ in range(4))
