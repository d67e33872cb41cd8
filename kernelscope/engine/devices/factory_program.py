"""A factory under virtual-cuda, run as a GPU program: its model and inputs on the virtual GPU.

`kernelscope compile PATH.py:FACTORY` under virtual-cuda runs the factory call, the capture,
the compile and the eager run inside `cuda_program` (program mode), as `kernelscope run` runs a
script: the factory sees one CUDA device (a factory with a `device` parameter is called with
`device="cuda"`), and what it returns is put on the virtual GPU as a GPU user's script puts it
on the GPU (`model.to("cuda")`, each input tensor `.to("cuda")`; `on_the_virtual_gpu`). So
Dynamo captures on fake cuda tensors and every `x.device.type` branch in the model's code, the
library's (transformers' MoE routing: `expert_ids.int()` on cuda, `.float()` on the CPU) and
torch's decompositions is taken the GPU's way, as a GPU's capture takes it.

Not run as a program (captured on the CPU as before, virtual_cuda copies the graph onto cuda):
- a model built on the meta device (meta_models): it has no values to put on the virtual GPU;
  the recorder leaves the program before the capture (`leave_for_meta`);
- one rank of a job (`--world-size`, or a rank torchrun started): its factory builds its
  mesh and process group as a CPU program does.
"""
from __future__ import annotations

from kernelscope.engine.record_options import RecordOptions

DEVICE = "cuda"  # what a factory's `device` parameter gets when it runs as a program


def runs_as_program(device: str, options: RecordOptions) -> bool:
    """Whether a factory recorded for `device` runs on the virtual GPU (see the module docstring)."""
    if device != "virtual-cuda" or options.world_size is not None:
        return False
    from kernelscope.engine.devices import cuda_program

    return not cuda_program.launched()


def on_the_virtual_gpu(model, inputs: tuple) -> tuple:
    """What a GPU user's script does with a CPU-built model: `model.to("cuda")` (parameters and
    buffers become virtual GPU tensors in place, torch's swap on conversion) and every tensor
    among the inputs (in lists, tuples and dicts too) `.to("cuda")`. Runs inside the program
    mode; returns the inputs."""
    import torch
    from torch.utils import _pytree as pytree

    if isinstance(model, torch.nn.Module):
        model.to(DEVICE)
    return pytree.tree_map(lambda value: value.to(DEVICE) if isinstance(value, torch.Tensor) else value,
                           tuple(inputs))
