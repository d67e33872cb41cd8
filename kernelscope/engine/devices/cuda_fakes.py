"""Fresh fake cuda tensors standing for another tensor: the one way virtual-cuda makes one.

A fake cuda tensor here is a leaf FakeTensor on cuda:0 with another tensor's sizes
(symbolic ones kept), strides, dtype and requires_grad. virtual-cuda makes them for the
graph's inputs (virtual_cuda.py; DTensor parameters too, `subclasses=True`), for constants
lifted (lifted_constants.py) or moved to cuda (real_compute.py), and where a value is
re-made on cuda (virtual_cuda.py). What makes such a tensor traceable on a CPU-only
machine while compiling is fake_cuda.py's.
"""
from __future__ import annotations

from kernelscope.engine.devices.virtual_gpu_tensor import virtual_device


def fake_cuda_like(tensor, fake_mode, fresh_symbols: bool = False, subclasses: bool = False):
    """A fresh leaf FakeTensor on cuda:0 in `fake_mode`, with `tensor`'s sizes (symbolic
    ones kept), strides, dtype and requires_grad. `fresh_symbols`: each symbolic size and
    stride on a SymNode of its own (the same expression), as AOTAutograd's fakification of
    a real graph input makes them on a GPU: a size read from the tensor is then traced as
    `sym_size` of that input, apart from the size Dynamo passes as an input of its own.
    `subclasses`: a tensor subclass (DTensor) becomes the same subclass around fake cuda
    inner tensors, with the outer sizes and strides kept."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if subclasses and is_traceable_wrapper_subclass(tensor):
        return _subclass_like(tensor, fake_mode, fresh_symbols)
    shape, stride = tuple(tensor.shape), tensor.stride()
    if fresh_symbols:
        shape, stride = [_fresh_symbol(size) for size in shape], [_fresh_symbol(step) for step in stride]
    with unset_fake_temporarily():
        meta = torch.empty_strided(shape, stride, dtype=tensor.dtype, device="meta")
    fake = FakeTensor(fake_mode, meta, virtual_device())
    if tensor.requires_grad:
        fake.requires_grad_(True)
    return fake


def _subclass_like(tensor, fake_mode, fresh_symbols: bool):
    import torch

    names, context = tensor.__tensor_flatten__()
    inner = {}
    for name in names:
        value = getattr(tensor, name)
        inner[name] = (fake_cuda_like(value, fake_mode, fresh_symbols, subclasses=True)
                       if isinstance(value, torch.Tensor) else value)
    made = type(tensor).__tensor_unflatten__(inner, context, tensor.size(), tensor.stride())
    if tensor.requires_grad and not made.requires_grad:
        made.requires_grad_(True)
    return made


def _fresh_symbol(value):
    import torch

    if not isinstance(value, torch.SymInt):
        return value
    node = value.node
    return torch.SymInt(type(node)(node.expr, node.shape_env, int, node.hint))
