"""Higher-order ops in a virtual-cuda program run eagerly as the CPU program's.

A higher-order op (`torch.cond`, `while_loop`, FlexAttention's `flex_attention`, a
checkpointed region: in the program's own code or in Dynamo's graph, which virtual-cuda
runs eagerly; torch's own `backend="eager"` compiles, as `flex_attention` outside
torch.compile makes, run it too) dispatches in Python: its implementations for autograd,
functionalization and the dense kernel read their tensors' Python `device` and make
tensors there (`_from_fun`'s `torch.empty_strided(..., device=t.device)` before it traces
a branch for autograd; FlexAttention's fake tensors for the score_mod's backward,
`create_fw_bw_graph`), and they run below the program mode, which torch pops while its
`__torch_function__` runs. On a virtual GPU tensor that device is `cuda:0`, so the op's
own machinery reached the CUDA runtime (seen: a compiled `torch.cond` failing in the eager
run of Dynamo's graph).

The cause is the Python device, not the op: a virtual GPU tensor is a CPU tensor. So the
program mode (`program_mode`) hands a higher-order op
- its tensor inputs on the virtual GPU as plain CPU aliases (`as_subclass`: same data, and
  autograd differentiates through the alias to the program's tensor, so gradients land in
  the program's `.grad` and in captured buffers);
- its subgraphs (the score_mod's, the mask_mod's, a branch's), which Dynamo captured on
  fake cuda tensors, naming the CPU where they named cuda (`x.new_ones(...,
  device=cuda:0)` of FlexAttention's `noop_mask`). The subgraphs are changed in place,
  once: this graph is only run, its compile for cuda having been made from a copy.
An operator a library defines with `torch.library.custom_op` is handed its inputs the same
way (`is_python_custom_op`): its kernel is the library's Python function, which runs below
the mode too (transformers' MoE `grouped_mm_fallback` makes its output with
`device=input.device`). The op then runs as it runs in a CPU program — its branches, subgraphs, autograd and
checkpointing included — with real values; the mode hands its results back on the virtual
GPU. The compile is not touched. (A compiled checkpoint's `tag_activation_checkpoint`
does not dispatch through torch functions: its region runs inside the mode, as the
program's code, see program_autograd; a nested compile region is called inline, see
eager_regions.)
"""
from __future__ import annotations

import weakref

_on_the_cpu: weakref.WeakSet = weakref.WeakSet()  # subgraphs already naming the CPU
_TORCH_NAMESPACES = ("aten", "prims", "prim")  # torch's own operators (torch registers prims as custom ops)


def is_python_custom_op(func) -> bool:
    """Whether `func` is an operator a library defined with `torch.library.custom_op`: its kernel
    is a Python function, which runs below the program mode as a higher-order op's body does
    (transformers' `grouped_mm_fallback` makes `torch.zeros(..., device=input.device)`), so it is
    handed CPU aliases too (`cpu_arguments`)."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        name = func.name()
    elif isinstance(func, torch._ops.OpOverloadPacket):  # `torch.ops.ns.op(...)`, as Dynamo's graph calls it
        name = func._qualified_op_name
    else:
        return False
    if name.split("::", 1)[0] in _TORCH_NAMESPACES:
        return False
    from torch._library.custom_ops import OPDEFS

    return name in OPDEFS


def is_library_op(func) -> bool:
    """Whether `func` is an operator outside torch's own namespaces (`torch.ops.ns.op`, a C++
    extension's or a `torch.library` one's) that is no Python custom op."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        name = func.name()
    elif isinstance(func, torch._ops.OpOverloadPacket):
        name = func._qualified_op_name
    else:
        return False
    return name.split("::", 1)[0] not in _TORCH_NAMESPACES and not is_python_custom_op(func)


def cpu_arguments(args, kwargs, vgt):
    """(args, kwargs) of a higher-order op, as its body runs on the CPU (see the module docstring);
    call with torch-function subclass handling off."""
    import torch
    from torch.fx import GraphModule
    from torch.utils._pytree import tree_map

    def on_the_cpu(value):
        if type(value) is vgt:
            return value.as_subclass(torch.Tensor)
        if isinstance(value, GraphModule):
            _subgraph_on_the_cpu(value)
        return value

    return tree_map(on_the_cpu, (args, kwargs))


def _subgraph_on_the_cpu(subgraph) -> None:
    """Every cuda device a node of `subgraph` (or of a subgraph inside it) names becomes the CPU."""
    import torch
    from torch.fx import GraphModule
    from torch.fx.node import map_aggregate

    if subgraph in _on_the_cpu:
        return
    cpu = torch.device("cpu")
    changed: list[bool] = []

    def cpu_for_cuda(value):
        if isinstance(value, torch.device) and value.type == "cuda":
            changed.append(True)
            return cpu
        return value

    for module in subgraph.modules():
        if not isinstance(module, GraphModule) or module in _on_the_cpu:
            continue
        changed.clear()
        for node in module.graph.nodes:
            node.args = map_aggregate(node.args, cpu_for_cuda)
            node.kwargs = map_aggregate(node.kwargs, cpu_for_cuda)
            device = node.kwargs.get("device")
            if isinstance(device, str) and torch.device(device).type == "cuda":
                node.kwargs = {**node.kwargs, "device": cpu}
                changed.append(True)
        if changed:
            module.recompile()
        _on_the_cpu.add(module)
