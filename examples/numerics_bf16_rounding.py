"""Planted divergence: a bfloat16 intermediate that eager rounds and the fused kernel does not.

`offset = x + 256` is rounded to bfloat16 by eager (8 bits of mantissa: steps of 2 near
256), so `back = offset - 256` keeps x only to the nearest even number; Inductor fuses both
lines and keeps `offset` in float32, so the kernel gives x back almost exactly. The two part
ways at the subtraction's line, where the rounding becomes visible.
"""
import torch


def round_trip(x, scale):
    offset = x + 256
    back = offset - 256
    return back * scale


def make():
    torch.manual_seed(0)
    x = (torch.rand(64, 64) * 4).to(torch.bfloat16)
    scale = torch.rand(64, dtype=torch.bfloat16) + 0.5
    return round_trip, (x, scale)
