"""DTensor on the virtual GPU: a distributed program's GPU path, under virtual-cuda.

A job recorded with `--world-size` (torch's fake process group) runs in the program
context (cuda_program) like any GPU program: `torch.cuda.is_available()` is true, so the
program builds its device mesh on "cuda", as on GPUs. DTensor computes its local results
below the level the program mode sees (its dispatch runs ATen ops on the local tensors, in
C++ and in Python), so what it makes there would be CPU tensors among virtual GPU ones.
While the program runs, three things keep a GPU's view:

- a DTensor made on a mesh of device type "cuda" holds its local tensor on the virtual GPU
  (`DTensor.__new__`: a plain CPU local tensor changes class, `on_virtual_gpu`), and
  answers `cuda:0` in Python (`device`, `is_cuda`; its C++ side takes the local tensor's C++
  device, the CPU's);
- an `AsyncCollectiveTensor` (a functional collective's in-flight result) that becomes the
  local tensor of a DTensor on a cuda mesh holds its result on the virtual GPU, so what
  tensor parallelism's `use_local_output` hands the program answers `cuda:0`; the wrapper's
  own C++ device stays the CPU's, also where torch wraps a virtual GPU tensor itself
  (`AsyncCollectiveTensor.__new__` reads its device from the Python side, and autograd's
  engine has no queue for a CUDA device on a CPU build);
- DTensor's Python dispatch (`_dispatch_get_local_results_slow_path`, which makes random
  number states, scalars and redistributed arguments with `device=mesh.device_type`) runs
  with the program mode entered again (`program_mode_again`), so what it makes on "cuda" is made
  on the virtual GPU (the backward of `from_local`/`to_local` runs in the mode anyway:
  program_autograd);
- DTensor's random-number tracker is not used (`is_rng_supported_mesh` false, as on a CPU
  mesh): it offsets a GPU's Philox state per shard, and the virtual GPU's generator is the
  CPU's; random ops on DTensors draw from it (the values are not a GPU's, as for every
  random op on the virtual GPU).

Dynamo then fakeifies a DTensor by its local tensor, a virtual GPU tensor: the compile
sees a cuda mesh and cuda local tensors, so `DTensor.from_local` of a block's input is the
view a GPU makes (on a CPU mesh it was a copy to the mesh's device, and the graph waited on
an in-flight collective once where a GPU waits twice). Every change is a patch point of
"virtual-cuda program".
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.patching import Patches


def install(patches: Patches) -> None:
    """DTensor and async collective tensors on the virtual GPU until `patches` is restored
    (see the module docstring); nothing where torch has no torch.distributed."""
    import torch

    if not torch.distributed.is_available() or not program_points.DTENSOR_NEW.present():
        return
    from torch.distributed._functional_collectives import AsyncCollectiveTensor

    from kernelscope.engine.devices import program_mode
    from kernelscope.engine.devices.virtual_gpu_tensor import is_virtual, on_virtual_gpu, virtual_device

    plain = torch.Tensor

    def on_cuda_mesh(spec) -> bool:
        mesh = getattr(spec, "mesh", None)
        return getattr(mesh, "device_type", None) == "cuda"

    def dtensor_new(new):
        def __new__(cls, local_tensor, spec, *args, **kwargs):
            if on_cuda_mesh(spec) and program_mode.running() and not torch.compiler.is_compiling():
                if type(local_tensor) is plain:
                    on_virtual_gpu(local_tensor)
                elif type(local_tensor) is AsyncCollectiveTensor and type(local_tensor.elem) is plain:
                    on_virtual_gpu(local_tensor.elem)  # the wrapper's own C++ device stays the CPU's
            return new(cls, local_tensor, spec, *args, **kwargs)
        return __new__

    original_dtensor_device = program_points.DTENSOR_DEVICE.current()
    original_act_device = program_points.ASYNC_COLLECTIVE_TENSOR_DEVICE.current()

    def dtensor_device(self):
        own = original_dtensor_device.__get__(self)
        return virtual_device() if own.type == "cpu" and on_cuda_mesh(getattr(self, "_spec", None)) else own

    def act_device(self):
        own = original_act_device.__get__(self)
        return virtual_device() if own.type == "cpu" and is_virtual(getattr(self, "elem", None)) else own

    def as_plain_while(call):
        """`call(tensor, ...)` made with a virtual GPU tensor seen as the plain CPU tensor it is:
        an AsyncCollectiveTensor takes its C++ device from its element's Python device, and
        torch's default __torch_function__ would change the wrapper's class to the element's."""
        def called(first, *args, **kwargs):
            if not is_virtual(first):
                return call(first, *args, **kwargs)
            vgt = type(first)
            first.__class__ = plain
            try:
                return call(first, *args, **kwargs)
            finally:
                first.__class__ = vgt
        return called

    def local_results_in_program_mode(slow_path):
        def wrapped(self, *args, **kwargs):
            if torch.compiler.is_compiling():
                return slow_path(self, *args, **kwargs)
            with program_mode.program_mode_again():  # nothing where no program runs
                return slow_path(self, *args, **kwargs)
        return wrapped

    patches.wrap(program_points.DTENSOR_NEW, lambda new: staticmethod(dtensor_new(new)))
    patches.replace(program_points.DTENSOR_DEVICE, property(dtensor_device))
    patches.replace(program_points.ASYNC_COLLECTIVE_TENSOR_DEVICE, property(act_device))
    patches.replace(program_points.DTENSOR_IS_CUDA, property(lambda self: dtensor_device(self).type == "cuda"))
    patches.replace(program_points.ASYNC_COLLECTIVE_TENSOR_IS_CUDA,
                    property(lambda self: act_device(self).type == "cuda"))
    patches.wrap(program_points.ASYNC_COLLECTIVE_TENSOR_NEW, lambda new: staticmethod(
        lambda cls, elem, *args, **kwargs: as_plain_while(lambda e, *a, **k: new(cls, e, *a, **k))(
            elem, *args, **kwargs)))
    patches.wrap(program_points.FUNCOL_MAYBE_WRAP, as_plain_while)
    patches.wrap(program_points.DTENSOR_LOCAL_RESULTS, local_results_in_program_mode)
    for point in (program_points.DTENSOR_RNG_MESH, program_points.DTENSOR_DISPATCH_RNG_MESH):
        if point.present():
            patches.replace(point, lambda device_mesh: False)

