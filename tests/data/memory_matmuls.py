"""Two bias-free Linear layers: in training every kernel is an extern matmul (no Triton
kernel), so on cpu-triton --execute the wrappers run without Triton's interpreter and the
CPU allocator sees each allocation and `del` when a GPU's would (tests/engine/test_memory_measure.py).
The forward saves fc1's output for fc2's weight gradient; its own output is the user's."""
import torch
from torch import nn


class Matmuls(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256, bias=False)
        self.fc2 = nn.Linear(256, 32, bias=False)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(h)


def make():
    torch.manual_seed(0)
    return Matmuls(), (torch.randn(16, 64),)
