"""Small reads of Inductor's objects that the probes (engine/probes.py) make while a graph is
lowered and generated: a pre-grad graph frozen as plain records, the post-grad node a
template or a scheduler node was made for, the get_attr by which a higher-order op passes a
subgraph, Inductor's own kernel -> node records, and torch's table of the program's own
Triton kernels. Each is called inside a probe's guard: torch's internals may change."""
from __future__ import annotations

from typing import Any

from kernelscope.engine.fx_nodes import target_name


class NodeView:
    """A frozen copy of what we need from FX nodes (graphs are rewritten in place)."""

    @staticmethod
    def from_graph(graph) -> list[dict]:
        return [
            {
                "name": node.name,
                "op": node.op,
                "target": target_name(node.target),
                "stack_trace": node.meta.get("stack_trace"),
                "nn_module_stack": dict(node.meta.get("nn_module_stack") or {}),
                # DTensor programs: the placements of a node's value ("S(0)", "R", "P(sum)")
                # and its inputs, so a collective can say what redistribution it makes.
                "placements": placements(node.meta.get("example_value")),
                "inputs": [input_node.name for input_node in node.all_input_nodes],
            }
            for node in graph.nodes
        ]


def placements(value) -> str:
    placements = getattr(value, "placements", None)
    if placements is None or not hasattr(value, "device_mesh"):
        return ""
    return ", ".join(str(placement) for placement in placements)


def template_node(node_schedule) -> str | None:
    """The post-grad node a template kernel's template buffer was made for: its origin node
    (for a multi-output template such as FlexAttention's, the `getitem` of one output: the
    op it reads, `flex_attention`), else the earliest of its origins that is no `getitem`."""
    import operator

    import torch._inductor.ir as ir

    for snode in node_schedule:
        buffer = getattr(snode, "node", None)
        if not isinstance(buffer, ir.TemplateBuffer):
            continue
        node = getattr(buffer, "origin_node", None)
        if node is None:
            origins = [origin for origin in buffer.get_origins() if origin.target is not operator.getitem]
            node = min(origins) if origins else None
        while node is not None and node.target is operator.getitem and node.args:
            node = node.args[0]
        return node.name if node is not None else None
    return None


def subgraph_argument(module, call_site, gm) -> str | None:
    """The get_attr target by which `call_site` passes the graph module `gm` (nested in a
    tuple, as a block mask passes its mask_mod), None if it passes it none."""
    import torch.fx

    found: list[str] = []

    def visit(arg) -> None:
        if isinstance(arg, torch.fx.Node) and arg.op == "get_attr" and getattr(module, str(arg.target), None) is gm:
            found.append(str(arg.target))
        elif isinstance(arg, (list, tuple)):
            for item in arg:
                visit(item)

    visit(list(call_site.args))
    return found[0] if found else None


def inductor_kernel_records() -> dict[str, list[str]]:
    import torch._inductor.debug as inductor_debug

    records = getattr(inductor_debug, "_inductor_triton_kernel_to_post_grad_node_info", None)
    return {key: list(nodes) for key, nodes in (records or {}).items()}


def scheduler_node_origin(snode) -> str | None:
    ir_node = getattr(snode, "node", None)
    if ir_node is None:
        return None
    data = getattr(ir_node, "data", None)
    fx_node = getattr(data, "_kernelscope_fx", None) or getattr(ir_node, "origin_node", None)
    if fx_node is None:
        # The buffer is the value of the last op folded into it (origins are a set: take
        # the latest in graph order, e.g. a scatter, not one of the ops feeding it).
        origins = list(ir_node.get_origins()) if hasattr(ir_node, "get_origins") else []
        fx_node = max(origins) if origins else None
    return fx_node.name if fx_node is not None else None


def user_triton_kernels() -> dict[int, Any]:
    """kernel_idx -> the program's Triton kernel, as torch's kernel_side_table has them now."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    return dict(kernel_side_table.id_to_kernel)


def wrapper_file(text: str) -> str:
    """The path Inductor writes a graph's wrapper to and imports it from (its code cache:
    `PyCodeCache.write` names the file after the hash of the stripped text), computed the
    same way without writing anything."""
    from torch._inductor.codecache import get_hash, get_path

    return get_path(get_hash(text.strip(), "", "code"), "py")[2]


def kernel_arg_buffers(kernel) -> dict[str, list[str]]:
    """A generated kernel's pointer arguments and the buffers each stands for (`in_ptr0` ->
    [`arg0_1`]; an in-place argument `in_out_ptr0` -> every name of its buffer). A combo
    kernel's sub-kernels share their parent's arguments (ComboKernel.create_sub_kernel)."""
    args = getattr(kernel, "args", None)
    if args is None:
        return {}
    found: dict[str, list[str]] = {}
    for table in (args.input_buffers, args.output_buffers):
        for buffer, inner in table.items():
            if isinstance(inner, str):  # a removed argument is a RemovedArg
                found.setdefault(inner, []).append(buffer)
    for buffer, inplaced in args.inplace_buffers.items():
        inner = getattr(inplaced, "inner_name", None)
        if isinstance(inner, str):
            found.setdefault(inner, []).extend([buffer, *getattr(inplaced, "other_names", ())])
    return {inner: list(dict.fromkeys(buffers)) for inner, buffers in found.items()}


def input_descriptor(placeholder) -> tuple[str, str | int] | None:
    """Where AOTAutograd took a post-grad placeholder from (its `desc`, torch >= 2.9):
    ("attr", target) for a lifted parameter or buffer of Dynamo's graph, ("input", index)
    for Dynamo's index-th graph input; None when torch gives no such descriptor."""
    desc = placeholder.meta.get("desc")
    target, index = getattr(desc, "target", None), getattr(desc, "idx", None)
    if isinstance(target, str):
        return "attr", target
    if isinstance(index, int):
        return "input", index
    return None
