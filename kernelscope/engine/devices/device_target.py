"""The device-target switch: which target a recording compiles for, and entering it.

`resolve_device` turns what was asked (`auto`, `cuda`, `virtual-cuda`, `cpu-triton`, `cpu`) into
the target this machine compiles for; `device_target(device)` is the one context that
makes torch.compile generate code for it. Each target's own modules (this package) are
entered from here and nowhere else:
- `cuda`: nothing to change (the real GPU compiles);
- `cpu`: nothing to change (Inductor's C++ backend, CPU tensors as they are);
- `virtual-cuda`: the no-op CUDA device guard (cuda_guard), meta-device models captured
  as CPU ones (meta_models), SDPA as ATen decides it on an sm_90 GPU (cuda_attention),
  timing decisions replayed or guessed (engine/decision_hooks/), and compile_fx replaced by
  virtual_cuda's, which enters the rest (fake cuda tensors, the virtual driver, ...);
- `cpu-triton`: Inductor's Triton backend on CPU tensors (cpu_triton), its code kept and
  never run unless `--execute` (codegen_only);
- `cpu`: Inductor's default C++/OpenMP backend on CPU tensors, compiled and run as a plain
  torch.compile does (`config.cpu_backend` held at "cpp"); its C++ kernels are recorded line by
  line (engine/cpp_kernels.py) — as they are in any run, wherever a graph's tensors are on the CPU.
A new target is a name in `DEVICES`, its modules here, one branch of `device_target`,
and its patch points declared in engine/patch_points.py under a feature of its name
(checked whole before anything is compiled, `patch_points.require`).
"""
from __future__ import annotations

import contextlib

from kernelscope.engine import patch_points, patching
from kernelscope.errors import UserError

DEVICES = ("auto", "cuda", "virtual-cuda", "cpu-triton", "cpu")


def resolve_device(requested: str) -> str:
    import torch

    if requested not in DEVICES:
        raise UserError(f"unknown target '{requested}': choose one of {', '.join(DEVICES)}")
    has_gpu = torch.cuda.is_available()
    if requested == "auto":
        return "cuda" if has_gpu else "virtual-cuda"
    if requested == "cuda" and not has_gpu:
        raise UserError(
            "--target cuda needs a CUDA GPU and a CUDA build of torch; none is available here "
            "(use --target virtual-cuda for the same CUDA code without a GPU)"
        )
    return requested


@contextlib.contextmanager
def device_target(device: str, execute: bool = False, decisions=None):
    """Make torch.compile generate code for `device` while inside (see the module docstring);
    yields the warnings a run should carry about the target. virtual-cuda answers the
    questions a GPU answers by timing from `decisions` (a DecisionLog; a fresh one when
    None: each answer guessed by Inductor's own rule).

    Used by recordings and by the benchmark's plain-compile baseline alike.
    """
    from kernelscope.engine.decision_hooks import session
    from kernelscope.engine.decision_hooks.log import DecisionLog
    from kernelscope.engine.devices import codegen_only, cpu_triton, cuda_attention, meta_models, virtual_cuda

    warnings_for_run: list[str] = []
    if device in ("virtual-cuda", "cpu-triton"):
        patch_points.require(device, "nothing was recorded")
    with contextlib.ExitStack() as stack:
        if device == "virtual-cuda":
            from kernelscope.engine.devices.cuda_guard import ensure_cuda_device_guard

            problem = ensure_cuda_device_guard()
            if problem:
                warnings_for_run.append(f"{problem}: Python indexing inside decompositions may fail")
            stack.enter_context(meta_models.captured_as_cpu())
            stack.enter_context(cuda_attention.attention_as_on_cuda())
            log = decisions if decisions is not None else DecisionLog()
            session.check_gpu(log, session.gpu_of(device))
            stack.enter_context(session.replaying(log))
            stack.enter_context(_compile_fx_replaced(virtual_cuda.make_compile_fx))
        elif device == "cpu":
            import torch._inductor.config as inductor_config

            patching.checked(patch_points.CPU_CPP_BACKEND)
            stack.enter_context(inductor_config.patch(cpu_backend="cpp"))
        elif device == "cpu-triton":
            stack.enter_context(cpu_triton.cpu_triton_backend(execute))
            if not execute:
                stack.enter_context(_inner_compile_replaced(codegen_only.make_inner_compile))
        yield warnings_for_run


@contextlib.contextmanager
def _compile_fx_replaced(make_compile_fx):
    """torch.compile's default backend (compile_fx) is replaced while inside."""
    with patching.wrapped(patch_points.VIRTUAL_COMPILE_FX, make_compile_fx):
        yield


@contextlib.contextmanager
def _inner_compile_replaced(make_inner_compile):
    """Every compile_fx call (torch.compile's default backend) uses our inner compile."""
    import torch._inductor.compile_fx as compile_fx_module

    def make_compile_fx(original):
        def compile_fx(model_, example_inputs_, inner_compile=None, **kwargs):
            if inner_compile is None or inner_compile is compile_fx_module.compile_fx_inner:
                inner_compile = make_inner_compile(compile_fx_module.compile_fx_inner)
            return original(model_, example_inputs_, inner_compile=inner_compile, **kwargs)

        return compile_fx

    with patching.wrapped(patch_points.CPU_COMPILE_FX, make_compile_fx):
        yield
