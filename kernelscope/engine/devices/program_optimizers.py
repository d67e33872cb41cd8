"""An optimizer's per-parameter bookkeeping in a virtual-cuda program, run below the program mode.

Each step of a torch optimizer and each `zero_grad` make a few torch calls per parameter
that only read what exists or write None: `p.grad` (read four times a step),
`p.grad.is_sparse`, `torch.is_complex(p)`, `p.grad = None`. On the CPU each is a C call;
under the program mode (program_mode.py) each is a Python call too: of a small model's
~200 torch calls a training step, ~180 are these. Where running them with torch functions
off (`torch._C.DisableTorchFunction`: no mode, no subclass handling) provably changes
nothing the program or Dynamo sees, they run so:

- `Optimizer.zero_grad` (torch's own; an optimizer that overrides it runs its own under
  the mode): it makes no tensor; it reads each gradient, sets it to None or zeroes it in
  place, and groups gradients by `grad.device`, a Python property that answers cuda:0 for
  a virtual GPU tensor with torch functions off too;
- `_init_group` of torch's optimizers (`INIT_GROUP_CLASSES`: Adam, whose AdamW inherits
  it, SGD and the others listed), once every parameter with a gradient has its state:
  each makes tensors only where a parameter's state is empty (the lazy initialization,
  which stays under the mode, so its state is made on the virtual GPU as before); with the
  state there it only collects parameters, gradients and state tensors into the step's
  lists and reads flags (`is_sparse`, `is_complex`, `requires_grad`).

What the mode does with these calls besides calling through is kept: a gradient read
through it is put on the virtual GPU when it is a plain tensor (a gradient no hook changed),
so each gradient is put there first, as the reads would. Not taken (the mode runs the calls
as before): under Dynamo (it compiles a step: `_init_group` runs for real, under
EagerProgramMode) or in a compiled function's eager part (Dynamo's frame callback is set),
where another torch-function mode is on the stack (the program's own, or a
`with torch.device(...)`: they see every call as before), or where a parameter with a
gradient, or its gradient, is of a class other than the virtual GPU's (and a plain tensor's,
for a gradient): a tensor subclass of the program's own, whose `__torch_function__` runs as
before.

Each replaced function is a patch point of "virtual-cuda optimizer fast path"
(patch_points.py); one that does not hold on a torch is left as it is (the calls go through
the mode, only slower). bench/virtual_cuda_program.py measures the gain (docs/targets.md).
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.patching import Patches

# the optimizers whose `_init_group` makes tensors only where a parameter's state is empty
INIT_GROUP_CLASSES = tuple(program_points.OPTIMIZER_INIT_GROUPS)


def install(patches: Patches) -> None:
    """The fast path for `Optimizer.zero_grad` and each listed `_init_group` whose point
    holds on this torch; put back when `patches` ends."""
    _dynamo_patches_the_optimizers_first()
    below_the_mode = _below_the_mode()
    if program_points.OPTIMIZER_ZERO_GRAD.check() is None:
        patches.wrap(program_points.OPTIMIZER_ZERO_GRAD, lambda zero_grad: _zero_grad(zero_grad, below_the_mode))
    for point in program_points.OPTIMIZER_INIT_GROUPS.values():
        if point.present() and point.check() is None:
            patches.wrap(point, lambda init_group: _init_group(init_group, below_the_mode))


def _dynamo_patches_the_optimizers_first() -> None:
    """At the first compile in a process Dynamo replaces each torch.optim class's `_init_group`
    with a disabled copy, once (`TorchPatcher.patch`, cached): AdamW then holds one of its own
    instead of inheriting Adam's. Done here before the fast path wraps them, so it wraps what
    each class holds for the rest of the process (also when a program compiles nothing, or
    after an earlier compile in this process) and puts exactly that back."""
    try:
        from torch._dynamo.eval_frame import TorchPatcher
    except ImportError:  # without it, AdamW's calls go through the mode: slower, the same results
        return
    TorchPatcher.patch()


def _below_the_mode():
    """`below_the_mode(params, state)`: whether the calls on `params` may run with torch
    functions off (see the module docstring), each parameter's gradient put on the virtual
    GPU first. `state`: the optimizer's state, every parameter with a gradient must have
    one (None: not asked)."""
    import torch
    import torch.compiler as compiler
    from torch._C._dynamo.eval_frame import get_eval_frame_callback

    from kernelscope.engine.devices.program_mode import mode_classes
    from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class

    vgt, plain = tensor_class(), torch.Tensor
    program_mode_class = mode_classes()[0]
    stack_length, mode_at = torch._C._len_torch_function_stack, torch._C._get_function_stack_at
    grad_get = torch._C.TensorBase.grad.__get__
    torch_functions_off = torch._C.DisableTorchFunction

    def below_the_mode(params, state) -> bool:
        if compiler._is_compiling_flag or get_eval_frame_callback() is not None:
            return False
        if stack_length() != 1 or type(mode_at(0)) is not program_mode_class:
            return False
        with torch_functions_off():
            grads = [(param, grad_get(param)) for param in params]
        for param, grad in grads:
            if grad is None:
                continue
            if type(param) is not vgt or type(grad) not in (vgt, plain):
                return False
            if state is not None and not state.get(param):
                return False
        for _, grad in grads:
            if type(grad) is plain:
                grad.__class__ = vgt  # as the mode's read of `param.grad` would
        return True

    return below_the_mode


def _zero_grad(zero_grad, below_the_mode):
    import functools

    import torch

    torch_functions_off = torch._C.DisableTorchFunction

    @functools.wraps(zero_grad)
    def fast_zero_grad(self, set_to_none: bool = True):
        if not below_the_mode([param for group in self.param_groups for param in group["params"]], None):
            return zero_grad(self, set_to_none)
        with torch_functions_off():
            return zero_grad(self, set_to_none)

    # torch's own is `torch._disable_dynamo`'d: Dynamo never traces it, nor this one
    return torch._disable_dynamo(fast_zero_grad)


def _init_group(init_group, below_the_mode):
    import functools

    import torch

    torch_functions_off = torch._C.DisableTorchFunction

    @functools.wraps(init_group)
    def fast_init_group(self, group, *lists, **kwargs):
        if not below_the_mode(group["params"], self.state):
            return init_group(self, group, *lists, **kwargs)
        with torch_functions_off():
            return init_group(self, group, *lists, **kwargs)

    return fast_init_group


__all__ = ["INIT_GROUP_CLASSES", "install"]
