"""Generate Inductor's code for a graph without loading (compiling) it.

Inductor writes and logs the wrapper as usual; `PyCodeCache.load_by_key_path` is
replaced (`wrappers_kept`, a patch point of virtual-cuda and of cpu-triton) so the
module is never imported (importing would compile every Triton kernel for the
target). The program goes on by running the graph eagerly.
"""
from __future__ import annotations

import contextlib
import copy
import types

from kernelscope.engine import patching


def is_output_code(path) -> bool:
    """Whether `path` is a graph's generated module (its wrapper, which launches every
    kernel; `cpp_wrapper` mode's holds its C++ as `cpp_wrapper_src`, which importing would
    compile) rather than a template kernel that max-autotune loads to time it."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
            return "def call(" in text or "\ncpp_wrapper_src = (" in text
    except OSError:
        return True


def codegen_only_loader(original_loader):
    """PyCodeCache.load_by_key_path that never imports a graph's wrapper (importing it would
    compile every kernel) and loads anything else (template kernels) as usual."""

    def load_by_key_path(key, path, linemap=None, attrs=None, **kwargs):
        if not is_output_code(path):
            return original_loader(key, path, linemap=linemap, attrs=attrs, **kwargs)
        module = types.ModuleType("kernelscope_codegen_only")
        module.__file__ = path

        def call(args):
            raise RuntimeError("kernelscope generated this code only; it is never run")

        module.call = call
        return module

    return load_by_key_path


def wrappers_kept(point):
    """While inside, `point` (PyCodeCache.load_by_key_path) never imports a graph's wrapper."""
    return patching.wrapped(point, lambda original: staticmethod(codegen_only_loader(original)))


def copy_graph_module(gm):
    """A deep copy of `gm`, made outside any active fake mode (its constants are real
    tensors; copying them while Inductor's fake mode is on would fake them)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return copy.deepcopy(gm)


def make_inner_compile(original_inner_compile, retarget=None, context=contextlib.nullcontext):
    """An inner compile for `compile_fx(..., inner_compile=...)`.

    retarget(gm, example_inputs) -> (gm, example_inputs) may rewrite the graph for
    another device before codegen; `context` is entered around codegen.
    """

    def inner_compile(gm, example_inputs, **kwargs):
        import torch

        from kernelscope.engine import patch_points

        # Inductor's passes mutate the graph they get: codegen a copy, run the original.
        codegen_gm, codegen_inputs = (
            retarget(gm, example_inputs) if retarget else (copy_graph_module(gm), list(example_inputs))
        )
        with context(), wrappers_kept(patch_points.CPU_LOAD_BY_KEY_PATH):
            original_inner_compile(codegen_gm, codegen_inputs, **kwargs)

        def run_eagerly(args):
            values = list(args)
            args.clear()
            return torch.fx.Interpreter(gm).run(*values)

        run_eagerly._boxed_call = True
        return run_eagerly

    return inner_compile
