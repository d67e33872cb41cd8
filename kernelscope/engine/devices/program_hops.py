"""A higher-order op run eagerly in a virtual-cuda program: its body runs on the CPU.

Dynamo's graph of a program runs eagerly on the CPU (virtual_cuda's compile_fx hands it
back; torch's own `backend="eager"` compiles, as `flex_attention` outside torch.compile
makes, run it too). A higher-order op in it (FlexAttention's `flex_attention`, a
checkpointed region, `cond`) is one torch call to the program mode, which runs it below
itself: nothing its Python body does passes through the mode. So that the body computes
on the CPU, as the CPU kernels under the virtual GPU's tensors do:
- its tensor inputs on the virtual GPU are handed in as aliases that say cpu
  (`as_subclass`, which autograd differentiates through, so gradients reach the
  program's tensors): what the body makes on its inputs' device (FlexAttention's fake
  tensors for the score_mod's backward, `create_fw_bw_graph`) is made on the CPU;
- its subgraphs (the score_mod's, the mask_mod's, a branch's), which Dynamo captured on
  fake cuda tensors, name the CPU where they named cuda (`x.new_ones(..., device=cuda:0)`
  of FlexAttention's `noop_mask`, the mask of an attention call without a BlockMask).
  The subgraphs are changed in place, once: this graph is only run, its compile for
  cuda having been made from a copy.
Its results are handed back on the virtual GPU by the mode (`program_mode`).
"""
from __future__ import annotations

import weakref

_on_the_cpu: weakref.WeakSet = weakref.WeakSet()  # subgraphs already naming the CPU


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
