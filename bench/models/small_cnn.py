"""A small ResNet-style CNN: conv-BatchNorm-ReLU residual blocks, adaptive average
pool, a Linear head and log_softmax.

In training, BatchNorm computes batch statistics (and updates its running ones), so
the forward graph holds reductions over N, H, W and the backward graph the
BatchNorm gradients. This model found a device-dependent Inductor decision that
virtual-cuda once took the CPU's way: on a GPU, the head's bias add is unfused from
`addmm` into the pointwise kernels around it (`should_prefer_unfused_addmm`).
"""
import torch
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(x + y)


class SmallCNN(nn.Module):
    def __init__(self, channels: int = 16, blocks: int = 2, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )
        self.blocks = nn.Sequential(*[ResidualBlock(channels) for _ in range(blocks)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = self.pool(x).flatten(1)
        return torch.log_softmax(self.head(x), dim=-1)


def _model():
    torch.manual_seed(0)
    return SmallCNN()


def _images():
    return (torch.randn(4, 3, 16, 16),)


def make():
    return _model().eval(), _images()


def make_train():
    return _model().train(), _images()
