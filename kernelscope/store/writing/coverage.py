"""How much of a run carries provenance, computed once when the run is written.

Every figure is a `{"covered", "total", "share"}` dict (`share` is None when
`total` is 0), so a reader sees the counts behind each percentage:
- kernel_lines: body lines of generated kernels (kinds "triton", "template" and "cpp") with at least one node;
- kernel_lines_specific: of those, lines tied to the one node that produced them
  (not the "shared:" index set-up and masks, which link to every node of the kernel);
- wrapper_lines: wrapper lines with nodes over the lines that should have them
  (`GraphRecord.wrapper_attributable`);
- forward_nodes_with_source / backward_nodes_with_source: post-grad
  call_function nodes that have a user source line, forward and inference
  graphs counted together;
- kernel_agreement: generated kernels whose node set equals Inductor's own
  kernel->node mapping; kernels Inductor gave no mapping for are left out and
  counted in `excluded`.
"""
from __future__ import annotations

from kernelscope.run_record import SHARED_LINE_REASON_PREFIX, RunRecord, in_subgraph


def ratio(covered: int, total: int) -> dict:
    return {"covered": covered, "total": total, "share": round(covered / total, 4) if total else None}


def compute_coverage(record: RunRecord) -> dict:
    kernel_lines_covered = kernel_lines_total = kernel_lines_specific = 0
    wrapper_covered = wrapper_total = 0
    forward_with_source = forward_total = 0
    backward_with_source = backward_total = 0
    agreeing = compared = excluded = 0

    for graph in record.graphs:
        wrapper_covered += sum(1 for origin in graph.wrapper_lines if origin.nodes)
        wrapper_total += graph.wrapper_attributable

        calls = [node for node in graph.post_grad_nodes if node.op == "call_function"]
        with_source = sum(1 for node in calls if node.source is not None)
        if graph.kind == "backward":
            backward_with_source += with_source
            backward_total += len(calls)
        else:
            forward_with_source += with_source
            forward_total += len(calls)

        for kernel in graph.kernels:
            if kernel.kind not in ("triton", "template", "cpp"):
                continue
            kernel_lines_total += len(kernel.lines)
            kernel_lines_covered += sum(1 for origin in kernel.lines if origin.nodes)
            kernel_lines_specific += sum(
                1 for origin in kernel.lines
                if origin.nodes and not origin.reason.startswith(SHARED_LINE_REASON_PREFIX)
            )
            if kernel.inductor_nodes is None:
                excluded += 1
                continue
            compared += 1
            # Inductor's mapping names the graph's own nodes, not those of an inlined score_mod/mask_mod
            agreeing += {name for name in kernel.nodes if not in_subgraph(name)} == set(kernel.inductor_nodes)

    return {
        "kernel_lines": ratio(kernel_lines_covered, kernel_lines_total),
        "kernel_lines_specific": ratio(kernel_lines_specific, kernel_lines_total),
        "wrapper_lines": ratio(wrapper_covered, wrapper_total),
        "forward_nodes_with_source": ratio(forward_with_source, forward_total),
        "backward_nodes_with_source": ratio(backward_with_source, backward_total),
        "kernel_agreement": {**ratio(agreeing, compared), "excluded": excluded},
    }
