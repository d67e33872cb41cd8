"""Comparing two tensors the way `kernelscope numerics` judges them.

An element is beyond tolerance when |actual - expected| > atol + rtol * |expected|, or when
one side is inf or nan and the other is not the same inf or nan. Default tolerances are
per dtype (DEFAULT_TOLERANCE): a fused kernel rounds once where eager rounds after every op,
so they are looser than one rounding of the dtype.
"""
from __future__ import annotations

from dataclasses import dataclass

# dtype -> (rtol, atol): compiled against eager (docs/numerics.md)
DEFAULT_TOLERANCE = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
}


def dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def tolerance(dtype, rtol: float | None, atol: float | None) -> tuple[float, float]:
    default_rtol, default_atol = DEFAULT_TOLERANCE.get(dtype_name(dtype), (0.0, 0.0))
    return (default_rtol if rtol is None else rtol, default_atol if atol is None else atol)


@dataclass
class Difference:
    max_abs: float
    max_rel: float
    mismatched: int
    elements: int


def difference(actual, expected, rtol: float, atol: float) -> Difference:
    """How far `actual` is from `expected` (same shape), in float64."""
    import torch

    a = actual.detach().to(torch.float64).reshape(-1)
    e = expected.detach().to(torch.float64).reshape(-1)
    if a.numel() == 0:
        return Difference(0.0, 0.0, 0, 0)
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    finite = torch.isfinite(a) & torch.isfinite(e)
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    diff = torch.where(finite | same, diff, torch.full_like(a, float("inf")))
    beyond = (~same & ~finite) | (finite & (diff > atol + rtol * e.abs()))
    scale = e.abs().clamp_min(max(atol, torch.finfo(torch.float64).tiny))  # relative to atol near 0
    rel = torch.where(finite, diff / scale, torch.full_like(a, float("inf")))
    rel = torch.where(same, torch.zeros_like(a), rel)
    return Difference(diff.max().item(), rel.max().item(), int(beyond.sum().item()), a.numel())


def comparable(actual, expected) -> str:
    """'' when the two can be compared element by element, else why not."""
    import torch

    if not isinstance(expected, torch.Tensor):
        return "eager gave no tensor for this node"
    if not isinstance(actual, torch.Tensor):
        return "the kernel wrote no tensor"
    if tuple(actual.shape) != tuple(expected.shape):
        if actual.numel() == expected.numel() and actual.is_contiguous() and expected.is_contiguous():
            return ""
        return f"the buffer's shape {tuple(actual.shape)} is not the node's {tuple(expected.shape)}"
    return ""


def aligned(actual, expected):
    """`actual` in `expected`'s shape (a contiguous buffer Inductor viewed differently)."""
    return actual if tuple(actual.shape) == tuple(expected.shape) else actual.reshape(expected.shape)
