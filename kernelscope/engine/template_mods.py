"""FlexAttention's score_mod and mask_mod subgraphs, recorded as subgraphs of their graph.

`flex_attention` (and, in the backward, `flex_attention_backward`) takes the user's
score_mod and mask_mod as graph modules (`sdpa_score0`, `sdpa_mask0`; the backward's
`fw_graph0`, `joint_graph0`, `mask_graph0`). Inductor lowers each with a
PointwiseSubgraphLowering and inlines it into the FlexAttention Triton template
(`TritonTemplateKernel.modification`): there is no codegen of its own, so no GraphCapture.
The template_mods probe (probes.py) names each of their nodes `sdpa_mask0.ge` while it is
lowered, and the template lines that compute it link to that name; here each such subgraph
becomes a GraphRecord nested in its parent (its Subgraph record, its nodes traced to the
user's lines), which the store resolves those names against.

AOTAutograd re-traces a score_mod without its stack traces (its nodes point at torch's
`flex_attention` call); their user lines come from Dynamo's own copy of the function
(`score_mod_0` in the pre-grad graph). Which copy is exact (`_dynamo_copy`): the
post-grad call's pre-grad `flex_attention` node passes its score_mod and mask_mod as its
first and second subgraph arguments, as the post-grad call passes its own. Within the
function its ops are paired op by op by name (`_align`). Nodes no op of it matches (the
gradient's, in `joint_graph0`) take the line of a neighbour they were made from or for.
"""
from __future__ import annotations

import os

from kernelscope.compile_text.printed_graph import node_lines
from kernelscope.engine import fx_nodes, subgraphs
from kernelscope.engine.probes import GraphCapture, ModCapture, PreGradCapture
from kernelscope.run_record import FxNode, GraphRecord, Subgraph

# op -> {position of the argument that passes the subgraph (alone, or in the block mask's tuple): role}
ROLES: dict[str, dict[int, str]] = {
    "flex_attention": {3: "score_mod", 4: "mask_mod"},
    "flex_attention_backward": {7: "score_mod", 8: "score_mod gradient", 9: "mask_mod"},
}
# Dynamo's op names (`operator.truediv`) as the post-grad aten op that computes them
_SAME_OP = {"truediv": "div", "floordiv": "div", "getitem": "index", "and_": "bitwise_and", "or_": "bitwise_or",
            "xor": "bitwise_xor", "invert": "bitwise_not", "rsub": "sub"}


def mod_graphs(capture: GraphCapture, parent: GraphRecord, pre_grad: PreGradCapture | None,
               skip_prefixes: tuple[str, ...]) -> list[GraphRecord]:
    """A GraphRecord for each score_mod/mask_mod subgraph inlined into the parent's templates
    (its `subgraph.parent` is the parent's key as it is now: set again once final)."""
    by_name = {node.name: node for node in capture.post_grad_gm.graph.nodes}
    parent_nodes = {node.name: node for node in parent.post_grad_nodes}
    records = []
    for mod in capture.mods.values():
        call_site = by_name.get(mod.call_site)
        op = fx_nodes.target_name(call_site.target).rsplit(".", 1)[-1] if call_site is not None else "flex_attention"
        role = _role(op, call_site, mod.name)
        record = GraphRecord(parent.frame_id, parent.frame_compile_id, parent.attempt, parent.kind)
        record.post_grad_text, record.post_grad_nodes = _nodes(mod, skip_prefixes)
        site = parent_nodes.get(mod.call_site)
        if pre_grad is not None and site is not None:
            _align(record, mod, role, site, pre_grad, skip_prefixes)
        for node in record.post_grad_nodes:  # the module instance whose flex_attention call runs it
            if site is not None and not node.module_path and node.op == "call_function":
                node.module_path, node.module_class = site.module_path, site.module_class
        record.subgraph = Subgraph(name=mod.name, op=op, role=role, parent=parent.key, call_sites=[mod.call_site],
                                   label=_label(op, role, record, site))
        records.append(record)
    return records


def _role(op: str, call_site, name: str) -> str:
    if call_site is None:
        return "subgraph"
    for position, arg in enumerate(call_site.args):
        items = arg if isinstance(arg, (list, tuple)) else [arg]
        if any(getattr(item, "op", None) == "get_attr" and str(item.target) == name for item in items):
            return ROLES.get(op, {}).get(position, "subgraph")
    return "subgraph"


def _nodes(mod: ModCapture, skip_prefixes) -> tuple[str, list[FxNode]]:
    text = mod.gm.print_readable(print_output=False, include_stride=True, include_device=True)
    lines = node_lines(text)
    nodes = [fx_nodes.to_fx_node(node.name, node.op, fx_nodes.target_name(node.target),
                                 node.meta.get("stack_trace"), lines, skip_prefixes)
             for node in mod.gm.graph.nodes]
    return text, nodes


def _align(record: GraphRecord, mod: ModCapture, role: str, site: FxNode, pre_grad: PreGradCapture,
           skip_prefixes) -> None:
    """Nodes that reach no user line of their own (only the flex_attention call's) take the
    line of the op of Dynamo's subgraph they compute; the rest borrow from neighbours."""
    from kernelscope.engine import links

    def borrowed(node: FxNode) -> bool:
        return node.op == "call_function" and (node.source is None or _same_line(node, site))

    if not any(borrowed(node) for node in record.post_grad_nodes):
        return
    post = [node for node in record.post_grad_nodes if node.op == "call_function"]
    post_ops = [_op_name(node.target) for node in post]
    best = _dynamo_copy(role, site, pre_grad)
    via = "Dynamo's trace of the function"
    if best is None:  # no pre-grad call to follow: the Dynamo subgraph with the most ops in common
        best = max(pre_grad.submodules, key=lambda candidate: len(_pairs(post_ops, _ops(candidate))), default=None)
        via = "Dynamo's trace of the function with the most ops in common"
    if best is None or not _pairs(post_ops, _ops(best)):
        return
    best_pairs = _pairs(post_ops, _ops(best))
    record.pre_grad_text = best.text
    record.pre_grad_nodes = links._pre_grad_nodes(best, skip_prefixes)
    pre = [node for node in record.pre_grad_nodes if node.op == "call_function"]
    matched = set()
    for mine_index, their_index in best_pairs:
        mine, theirs = post[mine_index], pre[their_index]
        mine.from_pre_grad = [theirs.name]
        matched.add(mine.name)  # Dynamo's node says where it is, if anywhere
        if borrowed(mine) and theirs.source is not None and not _same_line(theirs, site):
            mine.source, mine.stack = theirs.source, list(theirs.stack)
            mine.source_via = f"{via} (node {theirs.name})"
    unmatched = [node for node in post if borrowed(node) and node.name not in matched]
    for node in unmatched:
        node.source = None
    links._borrow_sources_from_neighbours(mod.gm, record.post_grad_nodes)
    for node in unmatched:
        if node.source is None:  # nothing to borrow from: the flex_attention call's line, as before
            node.source, node.stack, node.source_via = site.source, list(site.stack), "the flex_attention call"


def _ops(pre_grad: PreGradCapture) -> list[str]:
    return [_op_name(node["target"]) for node in pre_grad.gm if node["op"] == "call_function"]


def _dynamo_copy(role: str, site: FxNode, pre_grad: PreGradCapture) -> PreGradCapture | None:
    """Dynamo's own trace of the score_mod or mask_mod this subgraph is: the pre-grad
    `flex_attention` node the call site came from passes its score_mod, then its mask_mod, as
    subgraph arguments (get_attr nodes naming a submodule: `score_mod_0`, `mask_fn_0`); the
    score_mod's gradient (`joint_graph0`, which Dynamo never traced) is that score_mod's. None
    where no such node is found."""
    position = {"score_mod": 0, "score_mod gradient": 0, "mask_mod": 1}.get(role)
    if position is None:
        return None
    by_name = {submodule.name: submodule for submodule in pre_grad.submodules}
    nodes = {node["name"]: node for node in pre_grad.gm}
    for name in site.from_pre_grad:
        call = nodes.get(name)
        if call is None or "flex_attention" not in call["target"]:
            continue
        passed = [nodes[input_name]["target"] for input_name in call["inputs"]
                  if input_name in nodes and nodes[input_name]["op"] == "get_attr"
                  and nodes[input_name]["target"] in by_name]
        if len(passed) == 2:
            return by_name[passed[position]]
    return None


def _pairs(post_ops: list[str], pre_ops: list[str]) -> list[tuple[int, int]]:
    """(post index, pre index) of the same op, each post op paired with the first unpaired
    pre op of its name: the two traces run the same function, in nearly the same order."""
    unused: dict[str, list[int]] = {}
    for index, op in enumerate(pre_ops):
        unused.setdefault(op, []).append(index)
    return [(index, unused[op].pop(0)) for index, op in enumerate(post_ops) if unused.get(op)]


def _same_line(node: FxNode, site: FxNode) -> bool:
    return (node.source is not None and site.source is not None
            and (node.source.file, node.source.line) == (site.source.file, site.source.line))


def _op_name(target: str) -> str:
    """`aten.sub.Tensor` -> sub, `_operator.truediv` -> div, `torch.tanh` -> tanh."""
    parts = target.split(".")
    name = parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[-1]
    return _SAME_OP.get(name, name)


def _label(op: str, role: str, record: GraphRecord, site: FxNode | None) -> str:
    """"flex_attention score_mod alibi_soft_cap (model.py:49)": the user functions its nodes'
    lines are in, and the first such line; else where the flex_attention call is."""
    own = [node.source for node in record.post_grad_nodes
           if node.op == "call_function" and node.source is not None
           and (site is None or not _same_line(node, site))]
    backward = " (backward)" if record.kind == "backward" else ""
    if own:
        functions = ", ".join(dict.fromkeys(source.function for source in own))
        first = own[0]
        return f"{op} {role}{backward} {functions} ({os.path.basename(first.file)}:{first.line})"
    if site is not None and site.source is not None:
        where = subgraphs.qualname_at(site.source.file, site.source.line) or site.source.function
        return f"{op} {role}{backward} of {where} ({os.path.basename(site.source.file)}:{site.source.line})"
    return f"{op} {role}{backward}"
