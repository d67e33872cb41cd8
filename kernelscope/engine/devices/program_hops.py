"""Higher-order ops in a virtual-cuda program run eagerly as the CPU program's.

A higher-order op (`torch.cond`, `while_loop`, `scan`, `map`, ...: in the program's own
code or in Dynamo's graph, which virtual-cuda runs eagerly) dispatches in Python: its
implementations for autograd, functionalization and the dense kernel read their tensors'
Python `device` and make tensors there (`_from_fun`'s `torch.empty_strided(...,
device=t.device)` before it traces a branch for autograd), and they run below the program
mode (`program_mode.ProgramMode`), which torch pops while its `__torch_function__` runs.
On a virtual GPU tensor that device is `cuda:0`, so the op's own machinery reached the
CUDA runtime (seen: a compiled `torch.cond` failing in the eager run of Dynamo's graph).

The cause is the Python device, not the op: a virtual GPU tensor is a CPU tensor. So the
program mode hands a higher-order op plain CPU aliases of its virtual GPU tensors
(`as_subclass(torch.Tensor)`: same data, and autograd differentiates through the alias
to the program's tensor, so gradients land in the program's `.grad`), and the op runs as
it runs in a CPU program — its branches, subgraphs, autograd and checkpointing included —
with real values; what it returns goes back on the virtual GPU. The compile is not
touched: Dynamo captures the op on fake cuda tensors, as it captures the rest. (A compiled
checkpoint's `tag_activation_checkpoint` does not dispatch through torch functions: its
region runs inside the mode, as the program's code, see program_autograd; a nested compile
region is called inline, see eager_regions.)
"""
from __future__ import annotations

_kinds: dict = {}  # type of a function the mode saw -> whether it is a higher-order op


def is_higher_order(func) -> bool:
    """Whether `func`, called through the program mode, is a higher-order op (one dict
    lookup per call: the mode asks for every op on a virtual GPU tensor)."""
    kind = _kinds.get(type(func))
    if kind is None:
        from torch._ops import HigherOrderOperator

        kind = _kinds[type(func)] = isinstance(func, HigherOrderOperator)
    return kind


def run_on_the_cpu(func, args, kwargs):
    """`func` (a higher-order op) run on plain CPU aliases of the virtual GPU tensors in
    `args` and `kwargs` (nested in tuples and lists too); returns its result (the caller puts
    fresh tensors on the virtual GPU)."""
    import torch
    from torch.utils import _pytree as pytree

    from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class

    vgt = tensor_class()

    def plain(tensor):
        return tensor.as_subclass(torch.Tensor)

    with torch._C.DisableTorchFunctionSubclass():
        args, kwargs = pytree.tree_map_only(vgt, plain, (args, kwargs))
        return func(*args, **kwargs)
