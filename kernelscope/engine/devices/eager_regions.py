"""Dynamo's graph run eagerly, its nested compile regions called as plain functions.

virtual-cuda keeps the code Inductor generates and runs Dynamo's own graph eagerly, so the
program goes on (`virtual_cuda.make_compile_fx`). A region marked
`torch.compiler.nested_compile_region` is an `invoke_subgraph` node in that graph. On a GPU
that node is only ever traced (AOTAutograd, Inductor), never run on real tensors: torch's
autograd implementation of it asserts a fake mode ("fake_mode should be enabled for HOPs"
in the backward of a trained model). In eager PyTorch a nested compile region is a no-op,
the function called as it is (`invoke_subgraph.mark_compile_region`). So the graph run
eagerly calls each region's subgraph directly (`call_region`, as invoke_subgraph's own dense
kernel does), in a copy of Dynamo's graph that shares its submodules and parameters; the
graph given to the compile is untouched. Values and gradients are those of the eager
program; the compile still sees (and records) the regions.
"""
from __future__ import annotations


def call_region(subgraph, identifier, *operands):
    """One nested compile region, called as eager PyTorch calls it (`identifier`: Dynamo's
    name of the region, which only the compile uses)."""
    if getattr(subgraph, "_boxed_call", False):
        return subgraph(list(operands))
    return subgraph(*operands)


def runs_regions_inline(gm):
    """`gm` itself where no graph in it has an `invoke_subgraph` node, else a GraphModule
    sharing its submodules and parameters whose regions are called by `call_region`, in
    the subgraphs of other higher-order ops too (a checkpointed region's body)."""
    import torch
    import torch.fx

    subgraphs = {node.target: getattr(gm, node.target) for node in gm.graph.nodes
                 if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule)}
    inlined = {name: runs_regions_inline(subgraph) for name, subgraph in subgraphs.items()}
    invoke_subgraph = torch.ops.higher_order.invoke_subgraph
    if not any(node.op == "call_function" and node.target is invoke_subgraph for node in gm.graph.nodes) \
            and all(inlined[name] is subgraphs[name] for name in subgraphs):
        return gm
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    inline = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    for name, subgraph in inlined.items():
        if subgraph is not subgraphs[name]:
            setattr(inline, name, subgraph)
    for node in inline.graph.nodes:
        if node.op == "call_function" and node.target is invoke_subgraph:
            node.target = call_region
    inline.recompile()
    inline.meta = dict(gm.meta)
    return inline
