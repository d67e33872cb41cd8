"""A plain function, not a module: RMS normalisation followed by a SiLU gate.

Shows: compiling a callable, with `rsqrt`, `sigmoid` and the reductions fused
into Triton kernels.
"""
import torch


def rms_silu(x, weight, gate):
    variance = x.pow(2).mean(-1, keepdim=True)
    normed = x * torch.rsqrt(variance + 1e-6) * weight
    return normed * torch.nn.functional.silu(gate)


def make():
    torch.manual_seed(0)
    x = torch.randn(8, 64)
    weight = torch.randn(64)
    gate = torch.randn(8, 64)
    return rms_silu, (x, weight, gate)
