"""`--aot --target virtual-cuda`: AOTInductor's CUDA package of a model, built without a GPU.

The factory runs on the virtual GPU (factory_program.py), so the model's parameters and the
example inputs are virtual GPU tensors and `torch.export` holds the parameters as cuda
tensors, as a GPU user's export does. Then `aoti_compile_and_package` builds for cuda, with
three differences from a GPU machine, each one because there is no GPU here:

- the exported program's parameters, buffers and constants are handed to Inductor as
  CudaConstants (lifted_constants.py: the same CPU data, Python device cuda:0, ops on them
  make plain tensors): Inductor reads them as cuda constants (their metadata in the wrapper,
  `cached_torch_device_type_cuda`), serializes their bytes as it serializes a GPU's, and the
  compile's fake mode fakes them as fake cuda tensors (fake_cuda.py);
- AOTInductor compiles each Triton kernel and then runs it on example inputs to time its
  configs (the "autotune block"), keeping the fastest config's cubin. Nothing can run here:
  each kernel is compiled by Inductor's own autotuner for the config Inductor runs when it
  must not time (asm_build.choose_config) with Triton's ptxas, never launched, and saved as
  AOTInductor saves a launched kernel (`CachingAutotuner.save_gpu_kernel`: its cubin and
  PTX, the launch parameters the C++ wrapper's launch code is written from);
- the package holds the C++ sources, CMake files and cubins, not a built `.so`
  (`aot_inductor.package_cpp_only`): linking it needs libtorch_cuda (a CUDA build of torch)
  and libcuda (the NVIDIA driver's library, absent without a GPU driver). Seen here with
  torch 2.14.1+cu130 and a CUDA 13 toolkit: the wrapper compiles, the link stops at `-lcuda`.
  The build flags name the CUDA toolkit torch finds (`torch.utils.cpp_extension`'s own search:
  CUDA_HOME, nvcc on the PATH, /usr/local/cuda), as on a CPU build torch looks for none;
  without one the build is refused in one line.
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points as points
from kernelscope.errors import TargetError

# What a GPU machine's build does not set: emit the sources (no C++ compile, no link), and do
# not precompile the wrapper's header (a compile of torch's CUDA headers, for build speed only).
INDUCTOR_CONFIGS = {"aot_inductor.package_cpp_only": True, "aot_inductor.precompile_headers": False}
NO_SO_NOTE = ("--aot --target virtual-cuda: the package holds AOTInductor's C++ sources, CMake files and the "
              "Triton kernels' cubins, not a built .so (linking it needs libtorch_cuda, from a CUDA build of torch, "
              "and libcuda, the NVIDIA driver's library; build it on a GPU machine with the package's CMakeLists.txt)")


def constants_on_the_gpu(exported, source_file) -> None:
    """The exported program's parameters, buffers and constants as CudaConstants (see the
    module docstring), in place; a parameter stays a parameter (`_is_param`). Each must be on
    the virtual GPU, where the factory's program put it: one on the CPU is refused, as a GPU
    build of a model mixing devices fails."""
    import torch

    from kernelscope.engine.devices.lifted_constants import cuda_constant_class
    from kernelscope.engine.devices.virtual_gpu_tensor import is_virtual

    constant_class = cuda_constant_class()
    for table in (exported.state_dict, exported.constants):
        for name, value in list(table.items()):
            if not isinstance(value, torch.Tensor):
                continue
            if not is_virtual(value):
                raise TargetError(
                    f"{source_file or 'the model'}: `{name}` is a {value.device.type} tensor, not on the virtual GPU: "
                    "--aot --target virtual-cuda builds a factory's model as the factory's GPU program puts it on "
                    "the GPU (`kernelscope compile PATH.py:FACTORY`, not --world-size); build it on the GPU")
            with torch._C.DisableTorchFunctionSubclass():
                constant = torch.Tensor._make_subclass(constant_class, value, False)
            if isinstance(value, torch.nn.Parameter):
                constant._is_param = True
            table[name] = constant


def _as_cuda_constant(tensor):
    """A copy of `tensor`'s values on the virtual GPU, as a CudaConstant."""
    import torch

    from kernelscope.engine.devices.lifted_constants import cuda_constant_class

    with torch._C.DisableTorchFunctionSubclass():
        copy = tensor.detach().clone()
    return torch.Tensor._make_subclass(cuda_constant_class(), copy, False)


@contextlib.contextmanager
def building(chosen: list[str]):
    """While inside, AOTInductor builds for the virtual GPU (see the module docstring);
    `chosen` gets one line per Triton kernel: the config compiled and why."""
    from kernelscope.engine.devices import real_compute, virtual_cuda

    points.require("virtual-cuda AOT", "nothing was recorded")
    with contextlib.ExitStack() as stack:
        stack.enter_context(virtual_cuda.pretend_cuda_present())
        # constant folding on the CPU; a constant moved to the GPU keeps its values (the package holds them)
        stack.enter_context(real_compute.real_compute_on_cpu(None, cuda_copy=_as_cuda_constant))
        stack.enter_context(_cuda_toolkit_named())
        stack.enter_context(_kernels_compiled_not_launched(chosen))
        yield


@contextlib.contextmanager
def _cuda_toolkit_named():
    """The CUDA toolkit AOTInductor's build flags and CMake files name: a CPU build of torch
    looks for none (`cpp_extension.CUDA_HOME` is None), so it is looked for as a CUDA build
    of torch looks for it."""
    from torch.utils import cpp_extension

    from kernelscope.engine.patching import Patches

    home = cpp_extension.CUDA_HOME or cpp_extension._find_cuda_home()
    if home is None:
        raise TargetError("--aot --target virtual-cuda writes AOTInductor's CUDA C++ sources and CMake files, "
                          "whose build flags name a CUDA toolkit, and none was found here: install one (nvcc) "
                          "or set CUDA_HOME to it, or use --cpp-wrapper --target virtual-cuda")
    with Patches() as patches:
        patches.assign(points.CPP_EXTENSION_CUDA_HOME, home)
        yield


@contextlib.contextmanager
def _kernels_compiled_not_launched(chosen: list[str]):
    """AOTInductor's autotune block, run without its launches: the kernel definitions are
    executed as Inductor executes them, with each `async_compile.triton(...)` compiling the
    kernel for one config and saving it (`_compile_and_save`); the calls that would launch
    each kernel on example inputs to time it are not run."""
    from kernelscope.engine import asm_build
    from kernelscope.engine.patching import Patches

    def triton(self, kernel_name, source_code, device_str="cuda"):
        autotuner, why = _compile_and_save(kernel_name, source_code)
        chosen.append(f"{kernel_name}: {why}")
        return autotuner

    def run_definitions_only(self):
        self.kernel_autotune_defs.splice("""
            async_compile.wait(globals())
            del async_compile
        """)
        exec(self.kernel_autotune_defs.getvalue(), {})  # noqa: S102 - Inductor's own generated code

    asm_build.ptxas_as_inductor_uses()
    with Patches() as patches:
        patches.replace(points.AOT_AUTOTUNE_BLOCK, run_definitions_only)
        patches.replace(points.AOT_ASYNC_TRITON, triton)
        yield


def _compile_and_save(kernel_name: str, source_code: str):
    """One Triton kernel: loaded as Inductor loads it (its autotuner), compiled to a cubin for
    the chosen config, saved to AOTInductor's kernel cache as a launched kernel is. Returns
    the autotuner and why this config."""
    import torch._inductor.config as inductor_config
    from torch._inductor.codecache import _load_triton_kernel_from_source

    from kernelscope.engine import asm_build

    with asm_build.heuristics_observed() as untimed:
        autotuner = _load_triton_kernel_from_source(kernel_name, source_code)
    config, _, why = asm_build.choose_config(autotuner, untimed.get(id(autotuner.fn)), None)
    with inductor_config.patch(use_static_triton_launcher=False):  # Triton's own compile result
        result = autotuner._precompile_config(config)
    # the launcher's arguments are what the C++ launch code is written from; the kernel is never
    # loaded on a device (there is none), so its handles stay empty
    result.kernel._init_handles = lambda: None
    launcher = result.make_launcher()
    autotuner.save_gpu_kernel(stream="stream", launcher=launcher)
    return autotuner, f"{config}; {why}"
