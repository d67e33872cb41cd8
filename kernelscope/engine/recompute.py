"""Backward nodes that recompute forward ops, tied to the forward node they recompute.

AOTAutograd traces the forward and the backward as one joint graph and tags every node of
the forward part `partitioner_tag="is_forward"` (`_aot_autograd/graph_capture_wrappers.py`,
`create_joint`). The partitioner (`_functorch/partitioners.py`) then cuts it in two: what
the backward needs is either saved by the forward or computed again in the backward, where
the forward nodes are copied (`node_copy`: the same name, stack trace, `seq_nr`, and
`recompute`/`ac_graph_id` tags). So a backward graph's node still tagged `is_forward` is a
recomputation:
- inside a `torch.utils.checkpoint` region its meta carries the checkpoint policy
  (`recompute`: PREFER_RECOMPUTE / MUST_RECOMPUTE) and the region (`ac_graph_id`):
  "activation checkpointing";
- without those, the min-cut partitioner chose to recompute it because it is cheaper than
  saving it (views, cheap pointwise ops): "partitioner".

`reason` reads that from a post-grad node; `link_to_forward` names each recomputed
backward node's twin in the forward graph of the same compile (the same op at the same
source line and module instance, the node of the same name first).
"""
from __future__ import annotations

from kernelscope.run_record import FxNode, GraphRecord

CHECKPOINT = "activation checkpointing"
PARTITIONER = "partitioner"
_CHECKPOINT_POLICIES = ("MUST_RECOMPUTE", "PREFER_RECOMPUTE")


def reason(node, is_backward: bool) -> str:
    """Why a post-grad node of a backward graph recomputes a forward op; '' if it does not."""
    meta = node.meta
    if not is_backward or node.op != "call_function" or meta.get("partitioner_tag") != "is_forward":
        return ""
    policy = getattr(meta.get("recompute"), "name", "")
    return CHECKPOINT if "ac_graph_id" in meta or policy in _CHECKPOINT_POLICIES else PARTITIONER


def link_to_forward(graphs: list[GraphRecord]) -> None:
    """Set `recomputed_from` on every recomputed node of each backward graph."""
    forwards = {(g.frame_id, g.frame_compile_id, g.attempt): g for g in graphs
                if g.kind == "forward" and g.subgraph is None and g.split is None}
    for graph in graphs:
        if graph.kind != "backward" or graph.subgraph is not None:
            continue
        forward = forwards.get((graph.frame_id, graph.frame_compile_id, graph.attempt))
        if forward is None:
            continue
        by_name = {node.name: node for node in forward.post_grad_nodes if node.op == "call_function"}
        for node in graph.post_grad_nodes:
            if node.recompute:
                twin = _twin(node, by_name)
                node.recomputed_from = twin.name if twin is not None else ""


def _twin(node: FxNode, forward_by_name: dict[str, FxNode]) -> FxNode | None:
    """The forward node `node` recomputes: the same op at the same line in the same module
    instance, the one of the same name first (post-grad passes name their new nodes in each
    graph apart: a backward `add_tensor_2` need not be the forward's)."""
    if node.source is None:
        return None

    def same_op(other: FxNode) -> bool:
        return (other.target == node.target and other.module_path == node.module_path and other.source is not None
                and (other.source.file, other.source.line) == (node.source.file, node.source.line))

    same_name = forward_by_name.get(node.name)
    if same_name is not None and same_op(same_name):
        return same_name
    return next((other for other in forward_by_name.values() if same_op(other)), None)
