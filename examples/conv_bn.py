"""Conv2d -> BatchNorm2d -> ReLU -> global average pool.

Shows: the convolution as an extern call (`extern_kernels.convolution`) and, in
inference, BatchNorm and ReLU fused into one pointwise Triton kernel after it.
"""
import torch
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = self.conv(x)
        y = self.bn(y)
        y = torch.relu(y)
        return y.mean(dim=(2, 3))


def make():
    torch.manual_seed(0)
    model = ConvBlock().eval()
    return model, (torch.randn(2, 3, 16, 16),)
