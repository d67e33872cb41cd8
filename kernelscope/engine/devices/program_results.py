"""Tensors a virtual-cuda program gets from below the program mode, handed back on the virtual GPU.

The program mode (program_mode.py) keeps the results of ops on virtual GPU tensors there;
it sees torch calls, not what C++ makes below them. Two ways a program got plain CPU
tensors where a GPU's would be cuda tensors, both first seen with FlexAttention:
- `torch.vmap` batches its inputs and unbatches its results in C++ (`_add_batch_dim`,
  `_remove_batch_dim`): `create_block_mask(mask_mod, ..., device="cuda")` vmaps the
  mask_mod over `arange(..., device="cuda")` (`create_mask`), so its BlockMask came out
  on the CPU and `flex_attention` refused it ("Expect q/k/v and block_mask to be on the
  same device but got cuda:0 and cpu");
- the graph Dynamo captured runs eagerly on the CPU: where the graph unbatches a vmap
  itself (`torch.compile(create_block_mask)`) or makes a tensor in C++, its result was a
  CPU tensor though the capture, on fake cuda tensors, put it on cuda.

So, while a program runs: vmap's entry (`torch._functorch.apis.vmap_impl`, what
`torch.vmap` and `torch.func.vmap` call; patch point PROGRAM_VMAP) hands back the fresh
tensors among its results as virtual GPU tensors when a tensor among its inputs is one,
as the mode does for an op (under Dynamo it only calls through: Dynamo inlines it and
traces vmap as always); and Dynamo's graph, run eagerly (`graph_results_where_captured`,
virtual_cuda's compile_fx), hands back each result the capture put on cuda on the
virtual GPU. A result that is one of the inputs keeps its class in both.
"""
from __future__ import annotations

from kernelscope.engine import program_patch_points as program_points
from kernelscope.engine.patching import Patches


def install(patches: Patches) -> None:
    """vmap's results on the virtual GPU (see the module docstring), put back when `patches` ends."""
    patches.wrap(program_points.PROGRAM_VMAP, _vmap_on_the_virtual_gpu)


def _vmap_on_the_virtual_gpu(vmap_impl):
    import torch
    from torch.utils._pytree import tree_flatten

    from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class

    vgt = tensor_class()

    def vmap_on_the_virtual_gpu(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs):
        outputs = vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs)
        if torch.compiler.is_compiling():
            return outputs
        inputs = tree_flatten((args, kwargs))[0]
        if any(type(value) is vgt for value in inputs):
            _fresh_on_the_virtual_gpu(tree_flatten(outputs)[0], inputs)
        return outputs

    return vmap_on_the_virtual_gpu


def graph_results_where_captured(gm, forward):
    """`forward` (Dynamo's graph `gm`, captured on the virtual GPU, run eagerly) whose results
    the capture put on cuda come back as virtual GPU tensors; `forward` itself where the
    capture put none there."""
    import functools

    import torch
    from torch.utils._pytree import tree_flatten

    from kernelscope.engine.devices.virtual_gpu_tensor import on_virtual_gpu

    output = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    on_cuda = [isinstance(value := getattr(node, "meta", {}).get("example_value"), torch.Tensor)
               and value.device.type == "cuda" for node in tree_flatten(output.args)[0]]
    if not any(on_cuda):
        return forward

    @functools.wraps(forward)
    def run(*args, **kwargs):
        results = forward(*args, **kwargs)
        flat = tree_flatten(results)[0]
        if len(flat) == len(on_cuda):
            for value, cuda in zip(flat, on_cuda):
                if cuda and type(value) is torch.Tensor and not any(value is given for given in args):
                    on_virtual_gpu(value)
        return results

    return run


def _fresh_on_the_virtual_gpu(outputs, inputs) -> None:
    import torch

    from kernelscope.engine.devices.virtual_gpu_tensor import on_virtual_gpu

    for value in outputs:
        if type(value) is torch.Tensor and not any(value is given for given in inputs):
            on_virtual_gpu(value)
