"""Planted divergence: a float32 reduction whose order changes the result.

Each row holds large values that cancel and small ones that survive: the sum depends on the
order the values are added in. Eager's CPU sum and the Triton kernel's blocked sum add them
in different orders, so the row sums differ far beyond float32 rounding of the result. The
normalisation around it is computed alike; the divergence is the sum's line.
"""
import torch


def row_share(x):
    centered = x * 2.0
    total = centered.sum(dim=-1, keepdim=True)
    return total + 1.0


def make():
    torch.manual_seed(0)
    rows, width = 8, 4096
    big = torch.randn(rows, width // 2) * 1e7
    small = torch.rand(rows, width // 2)
    big -= big.mean(dim=-1, keepdim=True)  # the large values cancel to about 0
    x = torch.stack([big, small], dim=-1).reshape(rows, width)  # small values between large ones
    return row_share, (x,)
