"""The virtual GPU's tensors: CPU tensors that answer `cuda:0` wherever the program's Python looks
(a rank torchrun started: `cuda:<local rank>`, `rank_device`).

Under virtual-cuda a whole program runs as on a GPU (`cuda_program`): what it puts on
"cuda" is a `VirtualGpuTensor`, made with `torch.Tensor._make_subclass` (or `as_subclass`)
from a CPU tensor. Its C++ side stays a CPU tensor, so ops, autograd and the CPU kernels
work unchanged and the values are real; only the Python answers change:
`x.device` is `cuda:0`, `x.is_cuda` True, `x.is_cpu` False (properties, which Dynamo reads
too: Dynamo fakeifies such a tensor as a fake *cuda* tensor, its graph takes the GPU's
device branches). What a method answers (`get_device()`, `type()`, `cpu()`, `to("cpu")`,
`numpy()`, `repr`) is the program mode's (cuda_program's `ProgramMode`): methods overridden
on a tensor subclass make Dynamo break the graph, so the class overrides none it could meet
inside a compiled region. Ops keep the class through torch.Tensor's default
`__torch_function__` where the mode is not active (Dynamo's own eager steps, other threads);
while it is, the mode wraps results itself (one Python layer per op, not two).

Out of the program a virtual GPU tensor is a normal tensor: it pickles (`torch.save`,
`pickle`, multiprocessing) as the CPU tensor it is, a parameter as a parameter, so a
checkpoint loads anywhere (`weights_only=True` included) and names no kernelscope class;
`copy.deepcopy` keeps it on the virtual GPU, as deepcopy keeps a cuda tensor on the GPU.

The class is made once, lazily (engine modules import without torch): `tensor_class()`.
"""
from __future__ import annotations

import contextlib

_made: list = []


_device: list = []  # the virtual GPU's torch.device, made lazily (engine modules import without torch)
_index = [0]  # its index: 0, or a rank's local rank under torchrun (`rank_device`)


def virtual_device():
    """The virtual GPU's device: cuda:0, or `cuda:<local rank>` for a rank torchrun started (real_ranks)."""
    if not _device:
        import torch

        _device.append(torch.device("cuda", _index[0]))
    return _device[0]


def device_index() -> int:
    """The virtual GPU's index (see `virtual_device`)."""
    return _index[0]


@contextlib.contextmanager
def rank_device(index: int):
    """While inside, the virtual GPU is `cuda:<index>`: a rank torchrun started sees its own GPU
    at its local rank, as on a GPU host where each rank sets its device (real_ranks)."""
    saved = _index[0]
    _index[0] = index
    _device.clear()
    try:
        yield
    finally:
        _index[0] = saved
        _device.clear()


class AnswersCuda:
    """For a tensor subclass whose data is on the CPU while Python must read it as on the GPU
    (a virtual GPU tensor here, lifted_constants' CudaConstant): `device` is the virtual GPU's
    (cuda:0; a torchrun rank's `cuda:<local rank>`), `is_cuda` true, `is_cpu` false. Listed
    first among the bases, before torch.Tensor."""

    @property
    def device(self):
        return _device[0] if _device else virtual_device()

    @property
    def is_cuda(self):
        return True

    @property
    def is_cpu(self):
        return False



def tensor_class():
    """`VirtualGpuTensor`, the class of every tensor on the virtual GPU."""
    if _made:
        return _made[0]
    import torch

    plain_reduce = torch.Tensor.__reduce_ex__

    class VirtualGpuTensor(AnswersCuda, torch.Tensor):
        """A CPU tensor on the virtual GPU: `device` answers cuda:0 (see the module docstring)."""

        # torch.Tensor's own, named on the class itself: torch's C++ looks `__torch_function__`
        # up on each virtual GPU tensor of each call's arguments (each of a foreach op's list,
        # once per overload it tries), and finds it here without walking the class's bases
        __torch_function__ = vars(torch.Tensor)["__torch_function__"]

        def __deepcopy__(self, memo):
            # torch's own copies the storage (shared storages stay shared within `memo`) and
            # needs `new_empty` to keep the class, which subclass handling turned off does not
            import copy

            if id(self) in memo:
                return memo[id(self)]
            with torch._C.DisableTorchFunctionSubclass():
                alias = torch.Tensor._make_subclass(torch.Tensor, self, False)
                copied = alias.__deepcopy__(memo)
                memo.pop(id(alias), None)  # the alias is gone after this: its id must not answer later
                grad = torch._C.TensorBase.grad.__get__(self)
            copied.__class__ = VirtualGpuTensor
            if self.requires_grad:
                copied.requires_grad_(True)
            if grad is not None:
                copied.grad = on_virtual_gpu(grad).__deepcopy__(memo)
            copied.__dict__ = copy.deepcopy(self.__dict__, memo)
            memo[id(self)] = copied
            return copied

        def __reduce_ex__(self, protocol):
            # as the CPU tensor it is (a parameter stays a parameter): loads without kernelscope
            with torch._C.DisableTorchFunctionSubclass():
                data = torch.Tensor._make_subclass(torch.Tensor, self, False)
            if getattr(self, "_is_param", False):
                return torch.nn.Parameter(data, self.requires_grad).__reduce_ex__(protocol)
            return plain_reduce(data.requires_grad_(self.requires_grad) if self.is_leaf else data, protocol)

    VirtualGpuTensor.__module__ = __name__
    VirtualGpuTensor.__qualname__ = "VirtualGpuTensor"
    _made.append(VirtualGpuTensor)
    return VirtualGpuTensor


def is_virtual(value) -> bool:
    """Whether `value` is a tensor on the virtual GPU."""
    return bool(_made) and isinstance(value, _made[0])


def device_beside(tensor):
    """The device an op's Python kernel (below the program mode) makes a tensor on beside
    `tensor`: the CPU for a virtual GPU tensor, where its data is (the mode puts the op's
    results back on the virtual GPU; `device=tensor.device`, cuda:0, would reach the CUDA
    runtime), else `tensor.device` (a fake cuda tensor's while compiling)."""
    if is_virtual(tensor):
        import torch

        return torch.device("cpu")
    return tensor.device


def on_virtual_gpu(tensor):
    """`tensor` (a plain CPU tensor) as a tensor on the virtual GPU: the same Python object,
    its class changed (so its identity, autograd history and `.grad` stay), when it is a
    plain tensor; a virtual GPU tensor as it is; anything else unchanged."""
    import torch

    if type(tensor) is torch.Tensor:
        tensor.__class__ = tensor_class()
    return tensor


def new_on_virtual_gpu(tensor):
    """A fresh virtual GPU tensor sharing `tensor`'s data: a leaf that requires grad as
    `tensor` does when `tensor` is a leaf, else an alias that autograd differentiates through."""
    cls = tensor_class()
    if tensor.is_leaf:
        import torch

        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor._make_subclass(cls, tensor, tensor.requires_grad)
    return tensor.as_subclass(cls)
