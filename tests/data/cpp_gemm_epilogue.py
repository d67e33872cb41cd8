"""A Linear followed by pointwise ops, for Inductor's C++ GEMM template on the CPU: under
max-autotune with `freezing` (the weight a constant, prepacked) Inductor renders the matmul
with CppGemmTemplate and fuses the ReLU, the multiply and the add into its epilogue."""
import torch
from torch import nn


class LinearEpilogue(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 128)

    def forward(self, x, y):
        h = self.fc(x)
        h = torch.relu(h)
        return h * y + 1.0


def make():
    torch.manual_seed(0)
    return LinearEpilogue().eval(), (torch.randn(32, 64), torch.randn(32, 128))
