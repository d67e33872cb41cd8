"""Fake cuda tensors that a CPU-only process can trace autograd through (virtual-cuda).

virtual-cuda compiles every graph (AOTAutograd, its decompositions and joint-graph
passes, the partitioner, Inductor) on FakeTensors whose device is `cuda:0`, so each
decision torch makes in Python by device is made the GPU's way by construction.
Two things stand in the way on a machine without a GPU:

- A FakeTensor's C++ side carries its fake device's dispatch keys and answers
  `device()` with it. Autograd's engine then asks the accelerator runtime for the
  current CUDA stream ("Cannot access accelerator device when none is available"),
  and device guards need a CUDA build ("PyTorch is not linked with support for
  cuda devices", an abort). AOTAutograd traces the backward through that engine.
- `torch.tensor(data, device="cuda")` builds a real cuda tensor before a fake mode
  lifts it, and a fake mode computes ops on constants for real (Inductor's attention
  patterns, and models' `torch.tensor(0.0, device=mask.device)`).

So, while `cuda_fake_tensors()` is active, FakeTensorMode is told the device is
unavailable (`avoid_device_init`, its own switch for CPU-only builds: build on the
CPU, move as a fake op, no real compute for cuda), and a fake cuda tensor is
*CPU-backed*: its dispatch keys are the CPU's and the C++ `device()` query answers
`cpu`, while every Python read — `t.device`, `t.is_cuda`, `t.get_device()`, which is
what AOTAutograd, the decompositions and Inductor consult — answers `cuda:0`.

The C++ answer has a cost: C++ code that decides by device while AOTAutograd traces
reads it too. Where that C++ code runs decides what it is told:
- below autograd, while make_fx's proxy mode records an op on fake cuda tensors
  (Inductor's decompositions and the C++ composites they call), the C++ query answers
  `cuda`, as on a GPU (`where(mask, 0.0, x)` makes its scalar on cuda); FakeTensorMode's
  own, untraced, execution of an op keeps answering `cpu`;
- above autograd, a C++ composite runs on functionalized tensors whose C++ device is
  fixed at `cpu`: the factories it calls with no tensor argument are given cuda
  (`_mark_composites_on_cuda`), as are ops told `device=cpu` while taking a fake cuda
  tensor (`type_as`, `*_like`, `to(options)`; `_on_cuda_kwargs`, counted by `device_audit`);
- an op that CUDA implements and the CPU decomposes (`_fused_rms_norm`) gets a CPU
  kernel while compiling, so the CPU-keyed dispatch keeps it as CUDA's does
  (`_keep_ops_a_gpu_keeps`).
- a tensor made from data inside the graph (`torch.tensor(0.5, device=x.device)`) is
  lifted as a cuda constant, as a GPU lifts it, not moved there by a traced copy
  (`lifted_constants`); a cuda constant an op meets as an argument (AOTInductor's
  parameters, constants of the exported program) is faked as the mode fakes a real tensor.
- a C++ composite that picks a backend by its input's device runs as a Python port of
  itself on cuda tensors (`_ported_composites`): BatchNorm's `_batch_norm_impl_index`
  takes cuDNN's path as on a GPU (`cuda_batch_norm`; its symbolic checks number the
  post-grad nodes under dynamic shapes); softmax told float32 on a float16 input calls
  the fp16-to-fp32 kernel (`cuda_softmax`).
Other choices made in C++ by device stay the CPU's where nothing above reaches them: the
one known to change kernels, `scaled_dot_product_attention`'s backend, is decided as on
an sm_90 GPU by `sdpa_choice` (ATen's checks, ported) through `cuda_attention`; others
are what the GPU check (bench/gpu_check.py) is for. `device_audit` records which kind of
query answered what.
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.engine.devices import device_audit, lifted_constants
from kernelscope.engine.devices.virtual_gpu_tensor import virtual_device
from kernelscope.engine.patching import Patches, checked


def _is_cuda_fake(tensor) -> bool:
    return tensor.fake_device.type == "cuda"


@contextlib.contextmanager
def cuda_fake_tensors():
    """While inside, FakeTensors created on cuda are CPU-backed (see the module docstring)."""
    import torch
    import torch._subclasses.fake_tensor as fake_tensor_module
    from torch._subclasses.fake_tensor import FakeTensor

    device_op = torch.ops.prim.device.default
    # Every point is checked before anything is read (patch_points, "virtual-cuda").
    checked(points.DEVICE_META_HANDLER, points.FAKE_TORCH_DISPATCH, points.FAKE_DEVICE)
    patches = Patches()
    original_handler = fake_tensor_module._DISPATCH_META_HANDLERS[device_op]
    original_dispatch = points.FAKE_TORCH_DISPATCH.own_value()
    original_device = points.FAKE_DEVICE.own_value()
    base_make_subclass = torch.Tensor._make_subclass

    def make_subclass(cls, elem, *args, device_for_backend_keys=None, **kwargs):
        # FakeTensor.__new__ builds its C++ tensor here, keyed for its fake device.
        if isinstance(cls, type) and issubclass(cls, FakeTensor) and device_for_backend_keys is not None \
                and torch.device(device_for_backend_keys).type == "cuda":
            device_for_backend_keys = torch.device("cpu")
        return base_make_subclass(cls, elem, *args, device_for_backend_keys=device_for_backend_keys, **kwargs)

    def answers_cpu_to_cpp(args) -> bool:
        tensor = args[0] if len(args) == 1 else None
        if isinstance(tensor, FakeTensor) and not tensor.fake_mode.in_kernel_invocation \
                and _is_cuda_fake(tensor) and not (decomposing and decomposing[-1]):
            device_audit.note_cpp_query(tensor)
            return True
        return False

    def device_handler(args):
        # C++ `device()` of a fake tensor while FakeTensorMode is the active mode.
        return torch.device("cpu") if answers_cpu_to_cpp(args) else original_handler(args)

    def dispatch(cls, func, types, args=(), kwargs=None):
        # The same query when the tensor's own __torch_dispatch__ answers it.
        if func is device_op and answers_cpu_to_cpp(args):
            return torch.device("cpu")
        return original_dispatch.__func__(cls, func, types, args, kwargs if kwargs is not None else {})

    def device(self):
        answer = original_device.fget(self)
        device_audit.note_python_query(self, "device", answer)
        return answer

    def is_cuda(self):
        answer = original_device.fget(self)
        device_audit.note_python_query(self, "is_cuda", answer)
        return answer.type == "cuda"

    def get_device(self):
        answer = original_device.fget(self)
        device_audit.note_python_query(self, "get_device", answer)
        return -1 if answer.type == "cpu" else (answer.index or 0)

    import torch.fx.experimental.proxy_tensor as proxy_tensor

    original_proxy_call = proxy_tensor.proxy_call
    original_fake_dispatch = fake_tensor_module.FakeTensorMode.dispatch

    decomposing: list[bool] = []  # per op in proxy_call: does it work on fake cuda tensors?

    def proxy_call(proxy_mode, func, pre_dispatch, args, kwargs):
        # Every op AOTAutograd records passes here first (make_fx's proxy mode). Below
        # autograd, an op decomposed here (Inductor's decompositions, C++ composites)
        # reads its inputs' C++ device as on a GPU: `cuda` (see the module docstring).
        kwargs = _on_cuda_kwargs(args, kwargs, torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE))
        decomposing.append(any(isinstance(arg, FakeTensor) and _is_cuda_fake(arg)
                               for arg in _tensors(_flat(args, kwargs))))
        try:
            result = original_proxy_call(proxy_mode, func, pre_dispatch, args, kwargs)
            if lifted_constants.is_lift_on_cuda(func, args):
                lifted_constants.constant_as_cuda(proxy_mode.tracer, args[0])
            return result
        finally:
            decomposing.pop()

    def fake_dispatch(self, func, types, args=(), kwargs=None):
        # FakeTensorMode runs the op (its own decompositions and C++ kernels included, all
        # untraced): here C++ must keep answering `cpu` (a CUDA device guard needs a CUDA
        # build). A device query itself is answered for whoever asked.
        if func is device_op:
            return original_fake_dispatch(self, func, types, args, kwargs or {})
        lifted = lifted_constants.lifted_fake(self, func, args)
        if lifted is not None:
            return lifted
        args, kwargs = lifted_constants.constants_as_fakes(self, args, kwargs)
        decomposing.append(False)
        try:
            return original_fake_dispatch(self, func, types, args, _on_cuda_kwargs(args, kwargs or {}, self))
        finally:
            decomposing.pop()

    def functional_device(self):
        # AOTAutograd's functionalization wraps each fake tensor; the wrapper's C++ device
        # is the fake's C++ answer (`cpu`). Python reads on it (made by composite ops'
        # Python kernels, which run above functionalization) get the fake's Python answer.
        inner = torch._from_functional_tensor(self.elem)
        return inner.device if isinstance(inner, FakeTensor) else functional_cpp_device.__get__(self)

    functional_cpp_device = torch._C.TensorBase.device
    with patches:
        patches.replace(points.FUNCTIONAL_DEVICE, property(functional_device))
        patches.replace(points.FUNCTIONAL_IS_CUDA, property(lambda self: functional_device(self).type == "cuda"))
        patches.replace(points.FUNCTIONAL_GET_DEVICE, lambda self: (-1 if functional_device(self).type == "cpu"
                                                                    else functional_device(self).index or 0))
        # There is no GPU: FakeTensorMode's own answer for an unavailable device (build
        # `torch.tensor(..., device="cuda")` on the CPU and move it as a fake op; no real
        # compute for cuda constants). `torch.cuda.is_available()` is faked, so say it here.
        patches.replace(points.AVOID_DEVICE_INIT, property(lambda self: True))
        # A fake cuda tensor first initializes the GPU's context (a real `torch.empty` on
        # cuda) where torch thinks there is one (torch 2.11 asks `torch.cuda.is_available()`,
        # faked here): there is none to initialize, and the fakes are CPU-backed.
        if points.INIT_GPU_CONTEXT.holds():
            patches.replace(points.INIT_GPU_CONTEXT, lambda device: None)
        _install_python_to(patches)
        patches.replace(points.NEW_TENSOR, lifted_constants.new_tensor_on_the_python_device(torch.Tensor.new_tensor))
        kept_ops = _keep_ops_a_gpu_keeps()
        patches.callback(kept_ops._destroy)
        _mark_composites_on_cuda(patches)
        patches.replace(points.PROXY_CALL, proxy_call)
        patches.replace(points.FAKE_MODE_DISPATCH, fake_dispatch)
        patches.replace(points.MAKE_SUBCLASS, staticmethod(make_subclass))
        patches.set_item(points.DEVICE_META_HANDLER, fake_tensor_module._DISPATCH_META_HANDLERS, device_op,
                         device_handler)
        patches.replace(points.FAKE_TORCH_DISPATCH, classmethod(dispatch))
        patches.replace(points.FAKE_DEVICE, property(device, original_device.fset))
        patches.replace(points.FAKE_IS_CUDA, property(is_cuda))
        patches.replace(points.FAKE_GET_DEVICE, get_device)
        yield


# -- Tensor.to, decided on the Python device -------------------------------------------
#
# `x.to(device)` is a C++ composite: it returns `x` itself when nothing changes, else
# `_to_copy`. It compares devices in C++, where a fake cuda tensor says `cpu`, so on the
# fake cuda tensors every `.to("cuda")` would become a copy a GPU never makes (seen:
# LLaMA's rotary embedding and masks). While AOTAutograd traces (Python dispatcher on),
# these overloads run ATen's own logic (TensorConversions.cpp: to_impl, to_will_alias)
# in Python, on the Python device.

_TO_OVERLOADS = ("dtype_layout", "device", "dtype", "other")


def _to_python_kernel(overload):
    def kernel(*args, **kwargs):
        import torch
        from torch._subclasses.fake_tensor import FakeTensor
        from torch._subclasses.functional_tensor import FunctionalTensor

        self = args[0] if args else kwargs.get("self")
        if isinstance(self, (FakeTensor, FunctionalTensor)) and self.device.type == "cuda":
            return _to_python(*args, **kwargs)
        return overload._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *args, **kwargs)  # ATen's own

    return kernel


def _to_python(self, *args, **kwargs):
    import torch

    dtype = layout = device = pin_memory = None
    rest = list(args)
    other = None
    if rest and isinstance(rest[0], torch.Tensor):  # to.other
        other = rest.pop(0)
        dtype, layout, device = other.dtype, other.layout, other.device
    elif rest and isinstance(rest[0], (torch.device, str)):  # to.device
        device = torch.device(rest.pop(0))
        dtype = rest.pop(0) if rest else kwargs.pop("dtype")
    elif rest and isinstance(rest[0], torch.dtype):  # to.dtype
        dtype = rest.pop(0)
    dtype = kwargs.pop("dtype", dtype)
    layout = kwargs.pop("layout", layout)
    device = kwargs.pop("device", device)
    pin_memory = kwargs.pop("pin_memory", pin_memory)
    names = ["non_blocking", "copy", "memory_format"]
    values = dict(zip(names, rest))
    values.update({name: kwargs[name] for name in names if name in kwargs})
    non_blocking, copy = values.get("non_blocking", False), values.get("copy", False)
    memory_format = values.get("memory_format")
    if device is not None:
        device = torch.device(device)
        if device.index is None and device.type == "cuda":
            device = virtual_device()
        if device.type == "cpu" and self.device.type == "cuda" and other is None:
            # C++ options of a fake cuda tensor say cpu (`grad.to(self_options)` in `_to_copy`'s
            # backward, where a GPU's options say cuda and nothing is copied); the graph's own
            # `.to("cpu")` was retargeted to cuda already. The GPU's device, as `_on_cuda_kwargs`.
            device_audit.note_cpp_answer_corrected()
            device = self.device
    preserve = memory_format is None or memory_format == torch.preserve_format
    if ((dtype is None or dtype == self.dtype) and (layout is None or layout == self.layout)
            and (device is None or device == self.device) and not copy
            and (preserve or torch._prims_common.suggest_memory_format(self) == memory_format)):
        return self
    return torch.ops.aten._to_copy.default(
        self, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
        non_blocking=non_blocking, memory_format=memory_format)


def _install_python_to(patches: Patches) -> None:
    import torch
    from torch._C import DispatchKey

    for name in _TO_OVERLOADS:
        overload = getattr(torch.ops.aten.to, name)
        patches.set_item(points.OP_PYTHON_KERNELS, overload.py_kernels, DispatchKey.CompositeImplicitAutograd,
                         _to_python_kernel(overload), after=overload._dispatch_cache.clear)


# -- ops a GPU keeps where a CPU decomposes them ---------------------------------------
#
# A fake cuda tensor dispatches with the CPU's keys. An op that has a CUDA kernel and,
# for other devices, a CompositeImplicitAutograd kernel is decomposed above autograd on
# the CPU, while on a GPU it stays one op (its own autograd formula, its own backward op),
# and Inductor decomposes it later under its own name (seen: `rms_norm` →
# `_fused_rms_norm`, whose kernels a GPU names `_fused_rms_norm`). While virtual-cuda
# compiles, such an op gets a CPU kernel (the composite itself, for real CPU tensors),
# so the CPU's autograd keeps the op as CUDA's does. Which ops: read from the dispatcher
# on a CUDA build of torch, else this table, read from torch 2.11's CUDA build
# (`python -m kernelscope.engine.devices.fake_cuda` prints the list on a CUDA build).

CUDA_KEEPS_COMPOSITES = ("aten::_fused_rms_norm",)


def ops_a_gpu_keeps() -> list[str]:
    """Ops with a CompositeImplicitAutograd kernel and a CUDA kernel but no CPU kernel."""
    import torch

    if not torch.backends.cuda.is_built():
        return list(CUDA_KEEPS_COMPOSITES)
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(name for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("aten::") and has(name, "CompositeImplicitAutograd")
                  and has(name, "CUDA") and not has(name, "CPU"))


def _keep_ops_a_gpu_keeps():
    """A library (destroy it to undo) giving each op of `ops_a_gpu_keeps()` a CPU kernel
    (and, on a CPU build, a CUDA one)."""
    import torch
    from torch._C import DispatchKey

    library = torch.library.Library("aten", "IMPL")
    for name in ops_a_gpu_keeps():
        op_name, _, overload_name = name.removeprefix("aten::").partition(".")
        overload = getattr(getattr(torch.ops.aten, op_name), overload_name or "default", None)
        if overload is None or torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"):
            continue

        def composite(*args, _overload=overload, **kwargs):
            return _overload._op_dk(DispatchKey.CompositeImplicitAutograd, *args, **kwargs)

        library.impl(overload, composite, "CPU")
        if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"):
            # a CPU build: functionalization asks whether the (Python) device's backend
            # has a kernel before it decomposes the op (autograd_would_have_decomposed)
            library.impl(overload, composite, "CUDA")
        overload._dispatch_cache.clear()
        _backward_on_the_cpu(library, op_name)
    return library


def _backward_on_the_cpu(library, op_name: str) -> None:
    """The kept op's backward (`_fused_rms_norm_backward`), which has only a CUDA kernel, gets
    torch's own decomposition of it as a CPU kernel: a program on the virtual GPU that trains
    through the kept op runs its backward eagerly on the CPU (the autograd formula of the
    kept op calls it)."""
    import torch
    from torch._decomp import decomposition_table

    packet = getattr(torch.ops.aten, f"{op_name}_backward", None)
    if packet is None:
        return
    for overload_name in packet.overloads():
        overload = getattr(packet, overload_name)
        decomposition = decomposition_table.get(overload)
        if decomposition is None or torch._C._dispatch_has_kernel_for_dispatch_key(overload.name(), "CPU"):
            continue
        library.impl(overload, decomposition, "CPU")
        overload._dispatch_cache.clear()


# -- C++ composites above autograd ------------------------------------------------------
#
# While AOTAutograd traces, a C++ composite op (CompositeImplicitAutograd) runs on
# functionalized tensors whose C++ device is the fakes' C++ answer, `cpu`. Where it makes
# a new tensor "on its input's device" with no tensor argument — `where(mask, 0.0, x)`
# makes `scalar_tensor(0.0, device=x.device())` — the factory is told `cpu`, where a GPU
# says cuda. With the Python dispatcher on (AOTAutograd's tracing), each composite runs
# through a Python kernel that notes whether it works on cuda tensors (by their Python
# device); `_on_cuda_kwargs` gives such a composite's factories the GPU's device.

_composites_on_cuda: list[bool] = []


def _on_python_cuda(value) -> bool:
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    if isinstance(value, FunctionalTensor):
        value = torch._from_functional_tensor(value.elem)
    return isinstance(value, FakeTensor) and _is_cuda_fake(value)


def _composite_kernel(overload, ported=None):
    """The noting kernel of `overload`; `ported`: a Python port of the C++ composite that
    runs in its place on cuda tensors (`_ported_composites`)."""
    def kernel(*args, **kwargs):
        import torch

        on_cuda = any(_on_python_cuda(arg) for arg in _tensors(_flat(args, kwargs)))
        _composites_on_cuda.append(on_cuda)
        try:
            if ported is not None and on_cuda:
                return ported(*args, **kwargs)
            return overload._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *args, **kwargs)
        finally:
            _composites_on_cuda.pop()

    return kernel


def _mark_composites_on_cuda(patches: Patches) -> None:
    """Give every aten CompositeImplicitAutograd op without a Python kernel of its own the
    noting kernel (see above), until `patches` is restored."""
    import torch
    from torch._C import DispatchKey

    ported_composites = _ported_composites()
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or not torch._C._dispatch_has_kernel_for_dispatch_key(
                name, "CompositeImplicitAutograd"):
            continue
        op_name, _, overload_name = name.removeprefix("aten::").partition(".")
        overload = getattr(getattr(torch.ops.aten, op_name, None), overload_name or "default", None)
        if overload is None or DispatchKey.CompositeImplicitAutograd in overload.py_kernels:
            continue
        ported = ported_composites.get(f"{op_name}.{overload_name or 'default'}")
        patches.set_item(points.OP_PYTHON_KERNELS, overload.py_kernels, DispatchKey.CompositeImplicitAutograd,
                         _composite_kernel(overload, ported), after=overload._dispatch_cache.clear)


def _ported_composites() -> dict:
    """C++ composites that decide by their input's C++ device (the CPU-backed fakes would go
    the CPU's way), ported to Python to run as on a CUDA build: {"op.overload": port}."""
    from kernelscope.engine.devices import cuda_batch_norm, cuda_softmax

    return {"_batch_norm_impl_index.default": cuda_batch_norm.batch_norm_impl_index,
            "softmax.int": cuda_softmax.softmax, "log_softmax.int": cuda_softmax.log_softmax}


def _on_cuda_kwargs(args, kwargs, fake_mode):
    """`kwargs` with a `device=cpu` made cuda:0 when the op works on fake cuda tensors.

    C++ composite ops take the device of a new tensor from an input's options, and
    the C++ query answers `cpu` (see the module docstring): `mask.type_as(x)` becomes
    `_to_copy(mask, dtype, device=cpu)`, where a GPU has `device=cuda:0`. An op that
    takes a fake cuda tensor and is told `cpu` is given the GPU's answer instead, as is a
    factory that a C++ composite or an autograd backward formula makes from a cuda
    tensor's options. (A model's own `.to("cpu")` is a device constant of the graph, already retargeted
    to cuda with the others.)"""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    device = kwargs.get("device") if kwargs else None
    if device is None or torch.device(device).type != "cpu":
        return kwargs
    tensors = [arg for arg in _tensors(args) if isinstance(arg, torch.Tensor)]
    on_cuda = any(isinstance(arg, FakeTensor) and _is_cuda_fake(arg) for arg in tensors)
    # a factory (no tensor input) that a C++ composite working on cuda tensors called
    made_by_composite = not tensors and _composites_on_cuda and _composites_on_cuda[-1]
    # a factory that an autograd formula called while AOTAutograd traces the backward: C++
    # formulas take a new tensor's device from `grad.options()` (as_strided's backward makes
    # its index with `arange(..., grad.options())`), which reads cpu on the CPU-backed fakes.
    # Only under the compile's fake mode: a program's eager backward runs autograd nodes too,
    # and what it fakes on the CPU stays there (a non-reentrant checkpoint's recomputation of
    # FlexAttention fakes its score_mod's inputs with `torch.empty_strided(..., device=cpu)`)
    current_node = getattr(torch._C, "_current_autograd_node", lambda: None)
    made_by_backward = not tensors and current_node() is not None and device_audit.is_compile_mode(fake_mode)
    if not (on_cuda or made_by_composite or made_by_backward):
        return kwargs
    device_audit.note_cpp_answer_corrected()
    return {**kwargs, "device": virtual_device()}


def _flat(args, kwargs):
    return list(args) + list(kwargs.values())


def _tensors(args):
    for arg in args:
        if isinstance(arg, (list, tuple)):
            yield from arg
        else:
            yield arg


if __name__ == "__main__":
    print("\n".join(ops_a_gpu_keeps()))
