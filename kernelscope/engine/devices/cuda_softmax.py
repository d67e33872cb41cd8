"""Softmax and log-softmax told float32 on a float16 input, as a CUDA build runs them.

`softmax(x, dim, dtype=torch.float32)` and `log_softmax` — what CUDA's autocast makes of
every softmax (cuda_autocast.py) — are C++ composites (ATen's SoftMax.cpp) that ask their
input's C++ device: for a float16 cuda input told float32 they call `_softmax(x, dim,
half_to_float=True)`, one kernel that reads fp16 and writes fp32; otherwise they cast the
input to `dtype` and call `_softmax(x, dim, False)`. On the CPU-backed fake cuda tensors
(fake_cuda) the C++ device is `cpu`, so the graph of an fp16-autocast region would get a
cast and an fp32 softmax where a GPU's has one op.

`softmax` and `log_softmax` here are those composites' cuda branch: AOTAutograd's Python
dispatcher runs them in place of the C++ composites for a fake cuda input (fake_cuda's
`_ported_composites`); every other case runs ATen's own composite. (bf16 and fp32 inputs
take the same branch on both devices; only fp16 differs.)
"""
from __future__ import annotations


def softmax(self, dim, dtype=None):
    """ATen's `softmax.int` (SoftMax.cpp) for a cuda input."""
    import torch

    if self.dtype == torch.float16 and dtype == torch.float32:
        return torch.ops.aten._softmax.default(self, dim, True)
    return _composite(torch.ops.aten.softmax.int, self, dim, dtype)


def log_softmax(self, dim, dtype=None):
    """ATen's `log_softmax.int` (SoftMax.cpp) for a cuda input."""
    import torch

    if self.dtype == torch.float16 and dtype == torch.float32:
        return torch.ops.aten._log_softmax.default(self, dim, True)
    return _composite(torch.ops.aten.log_softmax.int, self, dim, dtype)


def _composite(overload, *args):
    import torch

    return overload._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *args)
