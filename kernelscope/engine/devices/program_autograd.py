"""Autograd's Python side in a virtual-cuda program: the backward runs in the program mode.

`loss.backward()` and `torch.autograd.grad` reach the program mode (program_mode.py) as
torch functions, and torch pops a mode while the mode handles a call, with subclass
handling off (the mode runs ops so). The backward then ran outside the program: what
autograd runs in Python during it — a non-reentrant `torch.utils.checkpoint`'s
recomputation of its region (eager, or the `tag_activation_checkpoint` of a compiled
model run eagerly), saved-tensor hooks — made CPU tensors where the forward had made
virtual GPU ones, and a recomputed `torch.arange(n, device=x.device)` reached the CUDA
runtime. So (both patch points of "virtual-cuda program"):
- the engine runs inside the program mode again (`program_mode_again`, around torch's
  `_engine_run_backward`), so a recomputation is the program's, as its forward was;
- checkpoint's determinism check compares a saved tensor's C++ device (`cpu` for a virtual
  GPU tensor): it reads the metadata of `x.detach()` inside the op that saves `x`, where
  subclass handling is off and the detached tensor is a plain CPU tensor, so the Python
  device of the forward's tensor (`cuda:0`) and of the recomputation's (`cpu`) would differ
  for the same tensor. Shapes and dtypes are compared as torch compares them.
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.patching import Patches


def install(patches: Patches) -> None:
    """Both changes above, put back when `patches` ends."""
    import torch.utils.checkpoint as checkpoint

    from kernelscope.engine.devices.program_mode import program_mode_again

    def backward_in_the_program(run_backward):
        def run(t_outputs, *args, **kwargs):
            with program_mode_again():
                return run_backward(t_outputs, *args, **kwargs)

        return run

    patches.wrap(program_points.ENGINE_RUN_BACKWARD, backward_in_the_program)
    patches.set_item(program_points.CHECKPOINT_METADATA, checkpoint._allowed_determinism_checks_to_fns,
                     checkpoint._DEFAULT_DETERMINISM_MODE, _metadata_on_the_cpp_device)


def _metadata_on_the_cpp_device(x) -> dict:
    """torch's `_default_meta_extractor`, with the C++ device for the Python one."""
    import torch

    return {"shape": x.shape, "dtype": x.dtype, "device": torch._C.TensorBase.device.__get__(x)}
