"""A model torch.export cannot export: Python control flow on a tensor's value (tests/engine/test_aot.py)."""
import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:  # data-dependent: export needs torch.cond here
            return h.relu()
        return h.sigmoid()


def make():
    torch.manual_seed(0)
    return Branchy(), (torch.randn(4, 8),)
