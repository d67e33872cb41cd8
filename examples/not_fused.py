"""A model whose two reductions over the same input Inductor keeps in separate kernels,
for `kernelscope compile examples/not_fused.py:make`.

Shows: why two ops were not fused, at the model line (docs/why.md). `col` sums `x` down
its columns, the softmax reduces along its rows: the scheduler refuses to fuse them
("no shared data": their loops read `x` in different orders). `kernelscope query
examples/not_fused.py:16 --json` answers with the refusal under `not_fused`: the other
op, its line and kernel, and the scheduler's reason.
"""
import torch
from torch import nn


class TwoReductions(nn.Module):
    def forward(self, x):
        col = x.sum(dim=0)
        probs = torch.softmax(x, dim=1)
        return col, probs.sum(dim=0)


def make():
    torch.manual_seed(0)
    return TwoReductions(), (torch.randn(4096, 2048),)
