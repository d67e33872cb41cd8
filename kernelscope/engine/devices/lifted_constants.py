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

Indexing with Python data is the same on a GPU: `x[..., [-2], :]` (Falcon's multi-query
attention) makes its index from the list in C++ (`sequenceToVariable(self.options(), ...)`,
python_variable_indexing.cpp) on `x`'s C++ device and lifts it. On a GPU that is cuda, so the
graph holds a cuda constant and `index`/`index_put` on cuda indices, which Inductor lowers to
Triton kernels; a CPU-backed fake cuda tensor's C++ device is the CPU, so the index was a CPU
constant, and Inductor, finding an index on another device, fell back to ATen (`aten.index`
in the forward, `aten.index_put_` in the backward).

So, while virtual-cuda compiles, a creator asked for cuda lifts its tensor as a cuda
constant, and so does indexing a cuda tensor with Python data:
- the graph's creator calls (`torch.tensor`, `torch.as_tensor`, `torch.asarray` with a cuda
  device) are marked (`lifts_on_cuda`), and `Tensor.new_tensor` takes a cuda tensor's
  device (on a CPU-backed fake its C++ side would say cpu) and is marked likewise;
- the graph's indexing calls (`operator.getitem`, `operator.setitem`) whose index holds a
  list, a tuple or an array are marked too, and lift as cuda constants, when the indexed
  tensor's Python device is cuda, the tensors C++ made from that data: those with one
  dimension or more. The 0-dim tensor `x[i] = 2.0` makes of its Python value stays a CPU
  constant, as on a GPU (python_variable_indexing.cpp makes a cuda tensor's value on the CPU);
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

# inside a marked call: which of the tensors C++ builds from Python data and lifts are the GPU's
# (a predicate on the tensor, innermost call last)
_lifting: list = []
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


def _every_tensor(tensor) -> bool:
    return True


def _index_from_data(tensor) -> bool:
    """An index C++ made from a list, tuple or array (one dimension or more), not the 0-dim
    tensor of a Python value assigned (`x[[0, 1]] = 2.0`)."""
    return tensor.dim() >= 1


def _lifting_while(function):
    """`function` (a creator), lifting what it makes as a cuda constant."""

    @functools.wraps(function)
    def creator(*args, **kwargs):
        _lifting.append(_every_tensor)
        try:
            return function(*args, **kwargs)
        finally:
            _lifting.pop()

    creator.kernelscope_lifts_on_cuda = function
    return creator


def _indexing_on_the_python_device(function):
    """`function` (`operator.getitem` or `setitem`), lifting the index it makes from Python
    data as a cuda constant when the indexed tensor's Python device is cuda."""
    import torch

    @functools.wraps(function)
    def indexing(tensor, *args):
        if not (isinstance(tensor, torch.Tensor) and tensor.device.type == "cuda"):
            return function(tensor, *args)
        _lifting.append(_index_from_data)
        try:
            return function(tensor, *args)
        finally:
            _lifting.pop()

    indexing.kernelscope_lifts_on_cuda = function
    return indexing


def _asks_for_cuda(node) -> bool:
    import torch

    device = node.kwargs.get("device")
    return device is not None and torch.device(device).type == "cuda"


def _indexes_with_data(node) -> bool:
    """Whether `node` indexes (getitem, setitem) with an index holding Python data that C++
    makes a tensor of: a list, a tuple inside the index, an array."""
    import operator

    if node.target not in (operator.getitem, operator.setitem) or len(node.args) < 2:
        return False
    index = node.args[1]
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(item, (list, tuple)) or type(item).__module__ == "numpy" for item in items)


def lifts_on_cuda(gm):
    """Mark the calls of `gm` (a virtual-cuda copy of Dynamo's graph) that lift on cuda on a
    GPU: creator calls asked for cuda (the copy's devices already cuda) and indexing with
    Python data (see the module docstring); returns `gm`. The targets keep their names
    (`torch.tensor`, `getitem`), so the graph reads as before."""
    creators = _creators()
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function" or hasattr(node.target, "kernelscope_lifts_on_cuda"):
            continue
        if node.target in creators and _asks_for_cuda(node):
            node.target = _lifting_while(node.target)
            changed = True
        elif _indexes_with_data(node):
            node.target = _indexing_on_the_python_device(node.target)
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
        _lifting.append(_every_tensor)
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
        and len(args) == 1 and _is_plain_cpu_tensor(args[0]) and _lifting[-1](args[0])


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
    if not (is_cuda_constant(tensor) or (_lifting and _is_plain_cpu_tensor(tensor) and _lifting[-1](tensor))):
        return None
    return fake_cuda_like(tensor, fake_mode)


def constants_as_fakes(fake_mode, args, kwargs):
    """An op's arguments with each CudaConstant replaced by its fake cuda tensor, as
    FakeTensorMode converts a real tensor argument (where it allows them: AOTInductor's
    constants, `--aot`); FakeTensorMode would refuse a tensor subclass it does not know."""
    if not (_constant_class and fake_mode.allow_non_fake_inputs):
        return args, kwargs
    from torch.utils import _pytree as pytree

    def fake(constant):
        return fake_mode.fake_tensor_converter.from_real_tensor(fake_mode, constant)

    return pytree.tree_map_only(_constant_class[0], fake, (args, kwargs or {}))
