"""What virtual-cuda cannot give a program, refused in one line at the program's line.

A program under virtual-cuda (cuda_program.py) that needs what the virtual GPU cannot give
(a CUDA C++ extension, an operator whose only kernel is CUDA's, CUDA graphs, NCCL in one
process, a Triton kernel the interpreter cannot run: user_triton.py) stops with one line:
the program's `file:line`, the call, why, and what to do; the last good run in the store
stays (`Unavailable`, a TargetError).
"""
from __future__ import annotations

import os
import traceback

from kernelscope.errors import TargetError


class Unavailable(TargetError):
    """The program needs what virtual-cuda cannot give (one line: the call, the line, what to do)."""


def program_line() -> str:
    """`file:line` of the innermost frame of the program (outside torch, Triton and kernelscope)."""
    import importlib.util

    import torch

    triton = importlib.util.find_spec("triton")
    skipped = (os.path.dirname(torch.__file__) + os.sep,
               os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,
               *([os.path.dirname(triton.origin) + os.sep] if triton is not None and triton.origin else []))
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(skipped) and not frame.filename.startswith("<"):
            return f"{frame.filename}:{frame.lineno}"
    return "the program"


class UnavailableLibrary(Unavailable, OSError):
    """A library virtual-cuda cannot load. Still an OSError, as the loader's own failure is: a
    program that goes on without a library that does not load (torchvision's `_C` check) goes
    on as on a machine without it; one that does not gets the one line."""


def refuse(call: str, why: str, what_to_do: str, kind: type[Unavailable] = Unavailable) -> Unavailable:
    """The one-line error for `call`, made at the program's line."""
    return kind(f"{program_line()}: virtual-cuda cannot run `{call}`: {why}; {what_to_do} "
                "(the last good run in the store is unchanged)")


ON_A_GPU = "record this program on a GPU with --target cuda"

_CPU_KEYS = ("CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
             "CompositeExplicitAutogradNonFunctional")  # kernels a virtual GPU tensor (CPU in C++) can run


def cuda_only_op(func) -> Unavailable | None:
    """The refusal for calling `func` (an operator a library registered, `torch.ops.ns.op`) on
    the virtual GPU when its only kernel is CUDA's (registered for the CUDA dispatch key, as a
    CUDA extension's `TORCH_LIBRARY_IMPL(ns, CUDA, m)` or `custom_op(..., device_types="cuda")`
    registers it): the virtual GPU's tensors are CPU tensors to the dispatcher, which found no
    kernel. None for any other operator (its error is its own)."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        name = func.name()
    elif isinstance(func, torch._ops.OpOverloadPacket):
        name = func._qualified_op_name
    else:
        return None
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        if not has_kernel(name, "CUDA") or any(has_kernel(name, key) for key in _CPU_KEYS):
            return None
    except RuntimeError:  # not an operator the dispatcher knows by that name
        return None
    return refuse(f"torch.ops.{name.replace('::', '.')}(...)",
                  "its only kernel is CUDA code (registered for the CUDA dispatch key), which needs a GPU",
                  ON_A_GPU + ", or register a CPU kernel for it (torch.library.register_kernel(..., \"cpu\")), "
                  "which the virtual GPU runs")
