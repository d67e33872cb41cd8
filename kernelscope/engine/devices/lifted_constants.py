"""Tensors a model makes from data inside `forward`, lifted into the graph as a GPU lifts them.

`torch.tensor(data, device=x.device)` (and `as_tensor`, `asarray`, `x.new_tensor(data)`)
builds its tensor in C++ (torch/csrc/utils/tensor_new.cpp, `internal_new_from_data`) and
then lifts it into the trace with `lift_fresh`. On a GPU the tensor is built on the CPU and
copied to the GPU untraced before the lift: the graph holds a cuda constant and
`lift_fresh_copy` of it, which Inductor inlines into the kernels that read it (their names
say `lift_fresh`). Where FakeTensorMode avoids device init (no GPU: `only_lift_cpu_tensors`),
the CPU tensor is lifted and then moved by a traced `.to("cuda")`: the graph gains a device
copy (`_to_copy`, `device_put`) that no GPU graph has. Inductor names the kernels after it
(`triton_poi_fused__to_copy_...` where the H100 wrote `..._lift_fresh_...`: GPT-Neo, GPT-J,
XGLM, TrOCR, MegatronBERT, ConvBERT, Longformer, GPT-OSS in the model suite) and, where a
training graph saves the copy, gives it a kernel of its own.

So, while virtual-cuda compiles, a creator asked for cuda lifts its tensor as a cuda
constant:
- the graph's creator calls (`torch.tensor`, `torch.as_tensor`, `torch.asarray` with a cuda
  device) are marked (`creators_on_cuda`), and `Tensor.new_tensor` takes a cuda tensor's
  device (on a CPU-backed fake its C++ side would say cpu) and is marked likewise;
- within a marked call, the lift records a `CudaConstant`: the same CPU data, whose Python
  `device` says cuda:0 — what Inductor reads to inline the constant or keep it on the GPU —
  and the lift's fake value is a fake cuda tensor, so the `.to("cuda")` C++ does next
  returns it unchanged (fake_cuda's Python `to`) and nothing is copied.
The values stay CPU data: whatever torch computes from them while compiling runs on the
CPU (real_compute), and the generated code is never run.
"""
from __future__ import annotations

import functools

from kernelscope.engine.devices.cuda_fakes import fake_cuda_like
from kernelscope.engine.devices.virtual_gpu_tensor import AnswersCuda

_lifting: list[bool] = []  # inside a creator call asked for cuda
_constant_class = []


def cuda_constant_class():
    """`CudaConstant`: a CPU tensor whose Python device reads cuda:0 (made once, lazily: this
    module must import without torch)."""
    if _constant_class:
        return _constant_class[0]
    import torch

    class CudaConstant(AnswersCuda, torch.Tensor):
        """A constant of a virtual-cuda graph: CPU data standing for the GPU's copy of it."""

        __torch_function__ = torch._C._disabled_torch_function_impl  # ops on it make plain tensors

        def get_device(self):
            return 0

        def __deepcopy__(self, memo):
            copy = self.as_subclass(torch.Tensor).clone().as_subclass(type(self))
            memo[id(self)] = copy
            return copy

        def __reduce_ex__(self, protocol):
            return torch.Tensor.__reduce_ex__(self.as_subclass(torch.Tensor), protocol)

    _constant_class.append(CudaConstant)
    return CudaConstant


def is_cuda_constant(value) -> bool:
    return bool(_constant_class) and isinstance(value, _constant_class[0])


# -- which calls lift on cuda --------------------------------------------------------------


def _creators():
    import torch

    return (torch.tensor, torch.as_tensor, torch.asarray)


def _lifting_while(function):
    """`function` (a creator), lifting what it makes as a cuda constant."""

    @functools.wraps(function)
    def creator(*args, **kwargs):
        _lifting.append(True)
        try:
            return function(*args, **kwargs)
        finally:
            _lifting.pop()

    creator.kernelscope_lifts_on_cuda = function
    return creator


def _asks_for_cuda(node) -> bool:
    import torch

    device = node.kwargs.get("device")
    return device is not None and torch.device(device).type == "cuda"


def creators_on_cuda(gm):
    """Mark the creator calls of `gm` (a virtual-cuda copy of Dynamo's graph, its devices
    already cuda) that are asked for cuda; returns `gm`. The targets keep their names
    (`torch.tensor`), so the graph reads as before."""
    creators = _creators()
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in creators and _asks_for_cuda(node):
            node.target = _lifting_while(node.target)
            changed = True
    if changed:
        gm.recompile()
    return gm


def new_tensor_on_the_python_device(original):
    """`Tensor.new_tensor` (`original`) making its tensor on `t`'s Python device (a fake cuda
    tensor's C++ side says cpu), lifted as a cuda constant when that is cuda; fake_cuda
    installs it (patch_points.NEW_TENSOR) while virtual-cuda compiles."""
    import torch

    def new_tensor(self, data, *args, **kwargs):
        if kwargs.get("device") is None:
            kwargs["device"] = self.device
        if torch.device(kwargs["device"]).type != "cuda":
            return original(self, data, *args, **kwargs)
        _lifting.append(True)
        try:
            return original(self, data, *args, **kwargs)
        finally:
            _lifting.pop()

    return new_tensor


# -- the lift ------------------------------------------------------------------------------


def _is_plain_cpu_tensor(value) -> bool:
    import torch

    return type(value) is torch.Tensor and value.device.type == "cpu"


def is_lift_on_cuda(func, args) -> bool:
    """Whether make_fx's proxy call of `func` lifts a freshly built CPU tensor inside a creator
    asked for cuda."""
    import torch

    return bool(_lifting) and func in (torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default) \
        and len(args) == 1 and _is_plain_cpu_tensor(args[0])


def constant_as_cuda(tracer, tensor) -> None:
    """After make_fx recorded the lift of `tensor`: the graph's constant becomes a
    CudaConstant of the same data (make_fx's proxy mode handles plain tensors only, so the
    constant is swapped once recorded)."""
    name = tracer.tensor_attrs.get(tensor)
    if name is None:
        return
    constant = tensor.as_subclass(cuda_constant_class())
    setattr(tracer.root, name, constant)
    tracer.tensor_attrs[constant] = name


def lifted_fake(fake_mode, func, args):
    """FakeTensorMode's value for a lift of a cuda constant (or, with no proxy mode around,
    of a CPU tensor inside a creator asked for cuda): a fresh fake cuda tensor. None for
    any other op."""
    if func not in fake_mode.lift_fns or len(args) != 1:
        return None
    tensor = args[0]
    if not (is_cuda_constant(tensor) or (_lifting and _is_plain_cpu_tensor(tensor))):
        return None
    return fake_cuda_like(tensor, fake_mode)
