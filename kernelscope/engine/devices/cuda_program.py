"""A whole program under virtual-cuda: it sees a CUDA device from its first line.

`kernelscope run SCRIPT` under virtual-cuda runs the script inside `cuda_program()`. A
script written for a GPU (`model.to("cuda")`, `torch.randn(..., device="cuda")`,
`torch.autocast("cuda")`, `torch.compile(model)`, a compiled optimizer step,
`torch.cuda.synchronize()`) runs unmodified; its values are real (computed on the CPU),
so data-dependent Python, `.item()`, printed losses and early exits behave as on the GPU.
While inside:
- `ProgramMode` (program_mode.py) makes what the program puts on cuda a virtual GPU tensor
  (virtual_gpu_tensor.py): a CPU tensor whose Python device is `cuda:0`;
- `torch.cuda` and `torch.accelerator` answer as one emulated H100 (cuda_runtime.py);
- the program's own Triton kernels run in Triton's interpreter on the CPU tensors, while
  Dynamo captures and Inductor compiles them as on a GPU (user_triton.py);
- `model.to("cuda")` swaps each parameter for a virtual GPU tensor (torch's
  `swap_module_params_on_conversion`, on while the program runs);
- optimizers and `clip_grad_norm_` take the foreach path for virtual GPU tensors, as they
  do for cuda tensors (torch's `_foreach_supported_types`), and an optimizer's
  `_init_group`, which Dynamo runs for real while it compiles a step, makes the state on
  the virtual GPU (`EagerProgramMode` while it runs: capturable and fused optimizers make
  their `step` with `device=p.device`); an optimizer's per-parameter bookkeeping
  (`zero_grad`, `_init_group` once the state exists) runs below the program mode where that
  changes nothing (program_optimizers.py: the mode's Python call per torch call is most of a
  small model's eager cost);
- `torch.autocast("cuda", dtype=...)` applies CUDA's op lists to the virtual GPU's tensors
  (cuda_autocast.py): in the eager run, in Dynamo's capture and in AOTAutograd's trace of
  the forward and backward, so the compiled graph has a GPU's casts;
- Dynamo captures on fake cuda tensors (fake_cuda's `cuda_fake_tensors`, with the no-op
  CUDA device guard): it fakeifies a virtual GPU tensor as a fake cuda tensor by itself
  (meta_utils reads the Python device), so the captured graph, its graph inputs and the
  device branches taken in user and library code are the GPU's; virtual_cuda's compile_fx
  compiles such a graph as captured; the program mode stays out of Dynamo's symbolic mode
  stack, and where a compiled frame sets the stack back it keeps the program mode;
- a higher-order op (`torch.cond`, `while_loop`) runs eagerly as the CPU program's
  (program_hops.py); the backward runs inside the mode (program_autograd.py: a
  checkpoint's recomputation is the program's, as its forward was);
- what virtual-cuda cannot give is refused in one line naming the call, the program's line
  and what to do (program_refusal's `Unavailable`): a CUDA C++ extension, a library that
  needs CUDA's runtime, an operator whose only kernel is CUDA's (program_mode), CUDA graphs,
  NCCL in a single process (`init_process_group`, `init_device_mesh`) without --world-size
  or torchrun (a rank torchrun started gets gloo for NCCL: real_ranks),
  the CUDA runtime reached where the mode is not (another thread, a C++ API), and a Triton
  kernel the interpreter cannot run.
Every change to torch is a patch point of "virtual-cuda program" (patch_points.py), checked
whole before the program starts.
"""
from __future__ import annotations

import contextlib
import os
import re

from kernelscope.engine import patch_points as points
from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.devices.program_refusal import ON_A_GPU, Unavailable, UnavailableLibrary, refuse
from kernelscope.engine.patching import Patches, checked


@contextlib.contextmanager
def cuda_program(fake_job: bool = False, real_job: bool = False):
    """The program runs on the virtual GPU while inside (see the module docstring); yields the
    notes its run carries in its warnings (program_mode.note). `fake_job`: `--world-size` set
    up torch's fake process group, so NCCL is not refused (DTensor is kept on the virtual GPU
    by virtual_dtensor). `real_job`: this process is a rank torchrun started (`launched()`):
    NCCL is served by gloo and the rank sees one GPU per local rank (real_ranks)."""
    points.require("virtual-cuda program", "nothing was recorded")
    import torch
    import torch._dynamo.polyfills.loader  # noqa: F401 - imported before fake_cuda's patches

    from kernelscope.engine.devices import (
        cuda_autocast,
        cuda_runtime,
        fake_cuda,
        program_autograd,
        program_mode,
        program_optimizers,
        program_results,
        real_ranks,
        user_triton,
        virtual_dtensor,
    )
    from kernelscope.engine.devices.cuda_guard import ensure_cuda_device_guard
    from kernelscope.engine.devices.virtual_gpu_tensor import rank_device, tensor_class

    problem = ensure_cuda_device_guard()
    if problem:
        raise Unavailable(f"virtual-cuda cannot run a program on this torch: {problem}")
    vgt = tensor_class()
    # a rank torchrun started works on its own GPU, cuda:<local rank>; any other program on cuda:0
    with rank_device(real_ranks.local_rank() if real_job else 0), Patches() as patches:
        cuda_runtime.install(patches, real_ranks.local_device_count() if real_job else 1)
        if real_job:
            real_ranks.install(patches)
        virtual_dtensor.install(patches)
        program_results.install(patches)
        user_triton.install(patches)
        patches.assign(program_points.SWAP_MODULE_PARAMS, True)
        for point in (program_points.OPTIM_FOREACH_TYPES, program_points.UTILS_FOREACH_TYPES):
            _append(patches, point, vgt)
        patches.wrap(program_points.OPTIMIZER_INIT_GROUP, _init_group_on_the_virtual_gpu)
        program_optimizers.install(patches)
        program_autograd.install(patches)
        _triton_asked_again(patches)
        _never_compiled_by_dynamo(patches)
        patches.wrap(program_points.DYNAMO_MODE_STACK, _program_mode_untraced)
        patches.wrap(program_points.DYNAMO_SET_MODE_STACK, _program_mode_kept)
        patches.wrap(program_points.DYNAMO_SUBCLASS_TYPE, lambda infer: lambda value: (
            None if type(value) is vgt else infer(value)))
        patches.wrap(program_points.TENSOR_GUARD_TEXT, _tensor_guard_text_as_on_a_gpu)
        _refusals(patches, fake_job or real_job)
        with fake_cuda.cuda_fake_tensors(), program_mode.program_mode() as notes, \
                cuda_autocast.cuda_autocast_on_the_virtual_gpu(program_mode.note):
            yield notes


def _triton_asked_again(patches: Patches) -> None:
    """torch caches whether Triton can run (`has_triton`, asked of the current device); Dynamo
    traces a program's own Triton kernels only where it answers True. A recording outside a
    program (a factory: no CUDA device) caches False, so the cache is emptied on entering the
    program, whose virtual GPU answers True, and again on leaving it: one warm process records
    factories and programs in any order."""
    checked(program_points.HAS_TRITON)
    has_triton = program_points.HAS_TRITON.current()
    has_triton.cache_clear()
    patches.callback(has_triton.cache_clear)


def _append(patches: Patches, point, value) -> None:
    """`value` appended to the list at `point` (as torch's DTensor appends itself), removed on exit."""
    checked(point)
    listed = point.current()
    if value in listed:
        return
    listed.append(value)
    patches.callback(lambda: value in listed and listed.remove(value))


def _init_group_on_the_virtual_gpu(call_method):
    from kernelscope.engine.devices.program_mode import eager_program_mode

    def wrapped(self, tx, name, args, kwargs):
        if name != "_init_group":
            return call_method(self, tx, name, args, kwargs)
        with eager_program_mode():
            return call_method(self, tx, name, args, kwargs)

    return wrapped


_PROGRAM_MODULES = ("kernelscope.engine.devices.program_mode", "kernelscope.engine.devices.virtual_gpu_tensor",
                    "kernelscope.engine.devices.cuda_runtime", "kernelscope.engine.devices.cuda_program",
                    "kernelscope.engine.devices.program_hops", "kernelscope.engine.devices.user_triton",
                    "kernelscope.engine.devices.virtual_dtensor", "kernelscope.engine.devices.program_autograd",
                    "kernelscope.engine.devices.cuda_autocast", "kernelscope.engine.devices.program_optimizers",
                    "kernelscope.engine.devices.real_ranks")


def _never_compiled_by_dynamo(patches: Patches) -> None:
    """The mode, the tensor class, torch.cuda's answers and this module run as Python frames
    of their own inside the program (a mode's `__torch_function__`, a grad hook, autocast's
    `__enter__`): where the program runs eagerly inside a compiled function (after a graph
    break) Dynamo would try to compile each as a frame. Its skip list names them."""
    import importlib

    checked(program_points.DYNAMO_SKIP_DIRS, program_points.DYNAMO_SKIP_DIRS_RE)
    skip_dirs, recompile = program_points.DYNAMO_SKIP_DIRS.current(), program_points.DYNAMO_SKIP_DIRS_RE.current()
    added = [os.path.abspath(importlib.import_module(name).__file__) for name in _PROGRAM_MODULES]
    added = [path for path in added if path not in skip_dirs]
    skip_dirs.extend(added)
    recompile()

    def undo():
        for path in added:
            if path in skip_dirs:
                skip_dirs.remove(path)
        recompile()

    patches.callback(undo)


_DISPATCH_KEY_SET = re.compile(r"DispatchKeySet\([^)]*\)")


def _tensor_guard_text_as_on_a_gpu(code_part):
    """Dynamo's text of a TENSOR_MATCH guard (`check_tensor(L['x'], VirtualGpuTensor,
    DispatchKeySet(CPU, ..., AutogradCPU), ...)`, what the store keeps and `why` shows) for a
    virtual GPU tensor as a GPU's guard reads: the class a GPU's tensor has there (`Parameter`
    for a parameter, else `Tensor`) and the CUDA dispatch keys. Only the text: the check Dynamo
    runs is made from the tensor itself (its class and its CPU keys), so a call with the same
    tensors still passes it."""
    import torch

    from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class

    vgt = tensor_class()

    def text(value, name, sizes, strides, pytype, dispatch_keys):
        made = code_part(value, name, sizes, strides, pytype, dispatch_keys)
        if pytype is not vgt:
            return made
        gpu_class = "Parameter" if isinstance(value, torch.nn.Parameter) else "Tensor"
        made = made.replace(f"check_tensor({name}, {pytype.__qualname__}, ", f"check_tensor({name}, {gpu_class}, ", 1)
        return _DISPATCH_KEY_SET.sub(lambda keys: re.sub(r"CPU\b", "CUDA", keys[0]), made, count=1)

    return text


def _program_mode_untraced(init):
    """Dynamo's symbolic mode stack without the program mode (kept in its guards): the mode
    steps aside under Dynamo anyway, and Dynamo, reading an attribute of a virtual GPU tensor
    under a mode, dispatches to the subclass again and again (RecursionError)."""
    from kernelscope.engine.devices.program_mode import mode_classes

    program_mode_class = mode_classes()[0]

    def symbolic_state_init(self, py_stack, *args, **kwargs):
        init(self, py_stack, *args, **kwargs)
        for index in reversed(range(len(py_stack))):
            if type(py_stack[index]) is program_mode_class:
                del self.mode_stack[index]

    return symbolic_state_init


def _program_mode_kept(set_stack):
    """The mode stack a compiled frame sets when its graph entered or left a torch-function
    mode (Dynamo's code sets the whole stack from its symbolic one, which lacks the program
    mode: `torch.compile(create_block_mask)`, whose mask is made under FlexAttention's
    `TransformGetItemToIndex`, left the program without its mode), with the program mode
    where it was."""
    from kernelscope.engine.devices.program_mode import mode_classes

    program_mode_class = mode_classes()[0]

    def set_torch_function_mode_stack(stack):
        import torch

        current = [torch._C._get_function_stack_at(index) for index in range(torch._C._len_torch_function_stack())]
        for index, mode in enumerate(current):
            if type(mode) is program_mode_class and not any(kept is mode for kept in stack):
                stack = [*stack[:index], mode, *stack[index:]]
        return set_stack(stack)

    return set_torch_function_mode_stack


# -- what cannot be given, refused in one line ---------------------------------------------------


def _refusals(patches: Patches, fake_job: bool) -> None:
    import torch

    load, load_inline, load_library = (program_points.CPP_EXTENSION_LOAD.current(),
                                       program_points.CPP_EXTENSION_LOAD_INLINE.current(),
                                       program_points.OPS_LOAD_LIBRARY.current())
    extension = ("its kernels are CUDA code, which needs a GPU to build and run; " + ON_A_GPU +
                 ", or give the program a path without the extension (a PyTorch or Triton version of the op)")

    def cpp_extension_load(name, sources, *args, **kwargs):
        listed = [sources] if isinstance(sources, str) else list(sources)
        if kwargs.get("with_cuda") or any(str(source).endswith((".cu", ".cuh")) for source in listed):
            raise refuse(f"torch.utils.cpp_extension.load({name!r}, ...)", "it builds a CUDA C++ extension",
                         extension)
        return load(name, sources, *args, **kwargs)

    def cpp_extension_load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        if cuda_sources or kwargs.get("with_cuda"):
            raise refuse(f"torch.utils.cpp_extension.load_inline({name!r}, cuda_sources=...)",
                         "it builds a CUDA C++ extension", extension)
        return load_inline(name, cpp_sources, cuda_sources, *args, **kwargs)

    def ops_load_library(self, path):
        try:
            return load_library(self, path)
        except OSError as error:
            reason = _cuda_the_loader_missed(error, str(path))
            if reason:
                raise refuse(f"torch.ops.load_library({os.path.basename(str(path))!r})",
                             f"the library needs CUDA's runtime ({reason[:200]})", extension,
                             UnavailableLibrary) from error
            raise

    def refused_cuda_graphs(name, original):
        def cuda_graph(*args, **kwargs):
            raise refuse(f"torch.cuda.{name}", "CUDA graphs capture and replay work on a GPU, and there is none",
                         ON_A_GPU + ", or run the program without CUDA graphs")
        if isinstance(original, type):
            # a class stays a class, so code that names it without making one still imports
            # (transformers: `-> torch.cuda.CUDAGraph | None`); making one is refused
            return type(name, (), {"__new__": cuda_graph, "__module__": "torch.cuda",
                                   "__doc__": f"torch.cuda.{name}, refused on the virtual GPU"})
        return cuda_graph

    patches.replace(program_points.CPP_EXTENSION_LOAD, cpp_extension_load)
    patches.replace(program_points.CPP_EXTENSION_LOAD_INLINE, cpp_extension_load_inline)
    patches.replace(program_points.OPS_LOAD_LIBRARY, ops_load_library)
    for name, point in program_points.PROGRAM_REFUSED.items():
        patches.replace(point, refused_cuda_graphs(name, point.current()))
    patches.wrap(points.CUDA_LAZY_INIT, _runtime_refused)
    if not fake_job and torch.distributed.is_available() and program_points.PROGRAM_INIT_PROCESS_GROUP.holds():
        patches.wrap(program_points.PROGRAM_INIT_PROCESS_GROUP, _nccl_refused)
        if program_points.PROGRAM_C10D_INIT_PROCESS_GROUP.holds():
            patches.wrap(program_points.PROGRAM_C10D_INIT_PROCESS_GROUP, _nccl_refused)
        if program_points.PROGRAM_MESH_INIT_PROCESS_GROUP.holds():  # init_device_mesh("cuda", ...) starts the group
            patches.wrap(program_points.PROGRAM_MESH_INIT_PROCESS_GROUP, _nccl_refused)


_CUDA_LIBRARIES = re.compile(r"cuda|cudnn|nccl|nvrtc|cublas|cufft|curand|cusparse|cusolver|nvjitlink|nvtoolsext",
                             re.IGNORECASE)


def _cuda_the_loader_missed(error: OSError, path: str) -> str | None:
    """The dynamic loader's reason a library failed to load (torch's `load_library` raises its
    own OSError from it), when that reason is a CUDA library or symbol it needs (`libcudart.so.12:
    cannot open shared object file`, `undefined symbol: _ZN3c104cuda...`); None otherwise (a
    missing file, whatever its name, is the program's own error)."""
    cause = error.__cause__ if error.__cause__ is not None else error
    lines = str(cause).splitlines()
    reason = lines[0] if lines else ""
    for name in {path, os.path.realpath(path), os.path.abspath(path)}:
        reason = reason.replace(name, "")
    return lines[0] if _CUDA_LIBRARIES.search(reason) else None


def _runtime_refused(lazy_init):
    def refused(*args, **kwargs):
        raise refuse("a CUDA tensor or call outside the program mode",
                     "torch reached the CUDA runtime, where the virtual GPU does not reach (another thread, "
                     "torch.Generator(device='cuda'), a C++ API)",
                     ON_A_GPU + ", or make it on the main thread with device='cuda'")
    return refused


def launched() -> bool:
    """Whether this process is a rank of a job a launcher started (torchrun's environment)."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR"))


def _nccl_refused(init_process_group):
    """NCCL (asked for, or the default for cuda tensors) in a single process: refused in one
    line (a distributed job is not refused: `--world-size` gets the fake process group, a rank
    torchrun started gets gloo, real_ranks)."""
    def without_nccl(*args, **kwargs):
        backend = kwargs.get("backend", args[0] if args else None)
        if backend is not None and "nccl" not in str(backend).lower():
            return init_process_group(*args, **kwargs)
        raise refuse(f"torch.distributed.init_process_group(backend={backend!r})",
                     "there is no NCCL without GPUs, and a single process is no job",
                     "record one rank of the job with --world-size N (torch's fake process group; --rank R "
                     "picks the rank), or run it on GPUs with --target cuda")
    return without_nccl


__all__ = ["Unavailable", "cuda_program", "launched", "refuse"]
