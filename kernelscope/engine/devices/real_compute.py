"""Real computation while virtual-cuda compiles: on the CPU, never on a CUDA runtime.

virtual-cuda traces every graph on fake cuda tensors, but torch still computes some
values for real while it compiles, on the device the graph names:
- make_fx's constant propagation: a tensor a graph makes from data is a constant
  (`torch.tensor([], device=x.device)` in transformers' DynamicCache), and ops on small
  constants are computed for real so that a later `.item()` can be answered;
- Inductor's constant folding (joint-graph `constant_fold_uniform_value`, freezing),
  which evaluates input-independent parts of a graph, e.g. `torch.full([1], 0,
  device=...)` for a multiplication by zero;
- Inductor moving a graph constant to the graph's device (`GraphLowering.constant_name`:
  `constant.to(device)`, e.g. `torch.tensor(table).to(x.device)` in a model).
On a GPU these run on the GPU. There is none here. A virtual-cuda constant is CPU data
standing for cuda data, so:
- what torch computes for real runs on the CPU (`computing_on_cpu`): while it runs, a
  dispatch mode sits where FakeTensorMode would sit and runs each op with its cuda
  device arguments read as cpu. Sitting there is what keeps the CUDA runtime out of
  factory calls too: torch initializes no device while a fake mode is set
  (`torch/csrc/utils/device_lazy_init.cpp`). The tensors traced stay fake cuda tensors;
  only the values torch keeps beside them (proxy constants, folded values) are CPU data;
- a constant Inductor moves to the GPU becomes a fake cuda tensor of the same sizes,
  strides and dtype: its codegen reads the device, and the code is never run.

And the guard: while virtual-cuda compiles, initializing the CUDA runtime raises
CudaRuntimeReached (`cuda_runtime_forbidden`): whatever still reaches it is named as
kernelscope's bug, never a "Torch not compiled with CUDA enabled" from inside torch.
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.engine.devices.cuda_fakes import fake_cuda_like
from kernelscope.engine.patching import wrapped


class CudaRuntimeReached(RuntimeError):
    """virtual-cuda asked the CUDA runtime for something: a bug in kernelscope."""


# -- the CPU in place of the GPU ---------------------------------------------------------


def _cpu(value):
    import torch

    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    if isinstance(value, str) and value.startswith("cuda"):
        return "cpu"
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu(item) for item in value)
    return value


def _cpu_mode():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class RealComputeOnCpu(TorchDispatchMode):
        """Runs each op with its cuda device arguments made cpu; installed in the fake
        mode's slot (see the module docstring)."""

        _mode_key = torch._C._TorchDispatchModeKey.FAKE

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = {name: _cpu(value) for name, value in (kwargs or {}).items()}
            return func(*_cpu(tuple(args)), **kwargs)

    return RealComputeOnCpu()


@contextlib.contextmanager
def computing_on_cpu():
    """While inside, torch's real computation asked for cuda runs on the CPU, and no
    factory initializes the CUDA runtime."""
    import torch

    fake_key = torch._C._TorchDispatchModeKey.FAKE
    previous = torch._C._unset_dispatch_mode(fake_key)
    torch._C._set_dispatch_mode(_cpu_mode())
    try:
        yield
    finally:
        torch._C._unset_dispatch_mode(fake_key)
        if previous is not None:
            torch._C._set_dispatch_mode(previous)


def _on_cpu_while(function):
    def on_cpu(*args, **kwargs):
        with computing_on_cpu():
            return function(*args, **kwargs)

    on_cpu.kernelscope_on_cpu = True
    return on_cpu


# -- where torch computes for real while compiling ----------------------------------------


@contextlib.contextmanager
def _proxy_constants_on_cpu():
    """make_fx (proxy_tensor) computes constants for real only inside its
    `unset_fake_temporarily()` blocks: there, on the CPU."""
    def replacement(unset_fake_temporarily):
        @contextlib.contextmanager
        def unset_fake_computing_on_cpu():
            with unset_fake_temporarily() as previous, computing_on_cpu():
                yield previous

        return unset_fake_computing_on_cpu

    with wrapped(points.UNSET_FAKE_TEMPORARILY, replacement):
        yield


@contextlib.contextmanager
def _constant_folding_on_cpu():
    """Inductor's constant folders evaluate on real tensors: on the CPU. The uniform-value
    folder of the joint-graph passes also makes tensors while it is set up."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(wrapped(points.CONSTANT_FOLDER_RUN, _on_cpu_while))
        if points.UNIFORM_VALUE_FOLDER_INIT.holds():
            stack.enter_context(wrapped(points.UNIFORM_VALUE_FOLDER_INIT, _on_cpu_while))
        yield


@contextlib.contextmanager
def _constants_moved(cuda_copy):
    """`GraphLowering.constant_name(name, device)` copies a graph constant to the device a
    kernel needs it on (`constant.to(device)`, with every mode disabled) under a new name.
    For cuda, the copy is `cuda_copy(constant)` (a fake cuda tensor of the constant's sizes,
    strides and dtype for torch.compile, whose code is never run; a CudaConstant of the same
    values for an AOTInductor package, which holds them), registered exactly as torch registers
    the copy (a new constant each time: a fresh copy never shares storage with another
    constant, so torch never de-duplicates it)."""
    import torch
    from torch._inductor import config as inductor_config
    from torch._inductor.graph import normalize_name

    def replacement(constant_name):
        def name_of_cuda_copy(self, name, device_override):
            constant = self.constants[name]
            if device_override is None or constant.device == device_override \
                    or torch.device(device_override).type != "cuda":
                return constant_name(self, name, device_override)
            copy = cuda_copy(constant)
            with inductor_config.patch({"aot_inductor.use_runtime_constant_folding": True}):  # no de-duplication
                copy_name = self.allocate_non_dup_const_name(
                    f"{name}_{device_override.type}{device_override.index or 0}", copy)
            if any(name == normalize_name(buffer) for buffer in self.named_buffers):
                self.named_buffers[copy_name] = copy
            if any(name == normalize_name(parameter) for parameter in self.named_parameters):
                self.named_parameters[copy_name] = copy
            return copy_name

        return name_of_cuda_copy

    with wrapped(points.CONSTANT_NAME, replacement):
        yield


def _gpu_present() -> bool:
    """Whether this process can really use a GPU (asked below torch.cuda, which virtual-cuda fakes)."""
    import torch

    try:
        return hasattr(torch._C, "_cuda_getDeviceCount") and torch._C._cuda_getDeviceCount() > 0
    except RuntimeError:
        return False


@contextlib.contextmanager
def cuda_runtime_forbidden():
    """While inside, initializing the CUDA runtime raises CudaRuntimeReached — where there is no
    GPU to initialize (virtual-cuda on a GPU machine may touch the real runtime, as it always could)."""
    if _gpu_present():
        yield
        return

    def refuse(*args, **kwargs):
        raise CudaRuntimeReached(
            "virtual-cuda reached the CUDA runtime while compiling: a kernelscope bug (please "
            "report it with the output of --traceback)")

    with wrapped(points.CUDA_LAZY_INIT, lambda original: refuse):
        yield


@contextlib.contextmanager
def real_compute_on_cpu(fake_mode, cuda_copy=None):
    """Everything this module describes, for one virtual-cuda compile in `fake_mode`;
    `cuda_copy(constant)`: what a constant moved to the GPU becomes, a fake cuda tensor of
    `fake_mode` unless given (see `_constants_moved`)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(cuda_runtime_forbidden())
        stack.enter_context(_proxy_constants_on_cpu())
        stack.enter_context(_constant_folding_on_cpu())
        stack.enter_context(_constants_moved(cuda_copy or (lambda constant: fake_cuda_like(constant, fake_mode))))
        yield
