"""A recording's guards, recompile failures and fusion refusals, assembled for the RunRecord
(docs/why.md): the trace's records read by compile_text/guards.py, the hooks' findings
(why_probes.py) attached."""
from __future__ import annotations

from kernelscope.compile_text.guards import GuardReader, TraceEntry, attach_failures
from kernelscope.run_record import GraphRecord, Guard, NotFused, Recompile


def _entries(trace) -> list[TraceEntry]:
    entries = []
    for record in trace.records:
        cid = record.compile_id
        compile_id = f"{cid[0]}/{cid[1]}" + (f"_{cid[2]}" if cid[2] else "") if cid else ""
        entries.append(TraceEntry(record.kind, record.metadata, record.payload, compile_id))
    return entries


def interned_strings() -> dict[int, str]:
    """torch's table of interned file names (index -> text): frames in trace records name
    files by index, and a string interned before this recording is not sent again."""
    from torch._logging import structured

    return {index: text for text, index in getattr(structured, "INTERN_TABLE", {}).items()}


def guards(trace, skip: tuple[str, ...]) -> tuple[list[Guard], set[str]]:
    """Every guard the recording's compiles installed, and the user files the trace names."""
    reader = GuardReader(interned_strings(), skip)
    found = reader.read(_entries(trace))
    return found, reader.user_files


def with_failures(recompiles: list[Recompile], trace, why, user_files: set[str],
                  guards: list[Guard]) -> list[Recompile]:
    """Each recompile with the guards that failed, the values the failing call had
    (why_probes) and their user lines (compile_text/guards.py's `attach_failures`)."""
    values = why.failure_values if why is not None else {}
    return attach_failures(recompiles, _entries(trace), values, user_files, guards)


def not_fused(capture, graph: GraphRecord, why) -> list[NotFused]:
    """Why this graph's ops ended in different kernels: the scheduler's refusals whose two
    sides still did (a pair refused in one round may be fused in a later one, through a
    node between them), the extern calls' neighbours, and the values the lowering stored in
    a buffer whose users ended elsewhere."""
    kernel_of: dict[str, set[str]] = {}
    for kernel in graph.kernels:
        for node in kernel.nodes:
            kernel_of.setdefault(node, set()).add(kernel.name)
    kept = []
    for (name1, name2, reason), (nodes1, nodes2, cause) in capture.not_fused.items():
        kernels1 = {k for node in nodes1 for k in kernel_of.get(node, ())}
        kernels2 = {k for node in nodes2 for k in kernel_of.get(node, ())}
        if kernels1 & kernels2:
            continue
        kept.append(NotFused(name1, name2, list(nodes1), list(nodes2), reason, cause))
    gm = capture.post_grad_gm
    if why is None or gm is None:
        return kept
    nodes = {node.name: node for node in gm.graph.nodes}
    kept += _extern_neighbours(graph, nodes, kernel_of)
    kept += _realized_apart(why.realized.get(id(gm), {}), nodes, kernel_of)
    return kept


# Extern calls Inductor can also make as a Triton template (max_autotune), which fuses epilogues.
_TEMPLATE_ABLE = ("mm", "addmm", "bmm", "baddbmm", "convolution", "_int_mm")


def _extern_neighbours(graph: GraphRecord, nodes: dict, kernel_of: dict[str, set[str]]) -> list[NotFused]:
    """Each extern call (`extern_kernels.mm`: a library kernel) and the ops next to it in
    other kernels: the scheduler never asks to fuse anything with an extern call."""
    found = []
    for kernel in graph.kernels:
        if kernel.kind != "extern":
            continue
        neighbours: dict[str, list[str]] = {}
        for name in kernel.nodes:
            node = nodes.get(name)
            if node is None:
                continue
            for other in _neighbours(node, kernel_of):
                if kernel.name not in kernel_of[other.name]:
                    for other_kernel in sorted(kernel_of[other.name]):
                        neighbours.setdefault(other_kernel, []).append(other.name)
        op = kernel.name.split("#")[0].rsplit(".", 1)[-1]
        advice = ("; config.max_autotune=True lets Inductor try its Triton templates for it, which fuse "
                  "pointwise epilogues") if op in _TEMPLATE_ABLE else ""
        reason = (f"{kernel.name.split('#')[0]} is an extern call (a library kernel): Inductor fuses no op "
                  f"into it{advice}")
        for other_kernel, names in neighbours.items():
            found.append(NotFused(kernel.name, other_kernel, list(kernel.nodes), list(dict.fromkeys(names)),
                                  reason, "extern"))
    return found


def _realized_apart(realized: dict[str, str], nodes: dict, kernel_of: dict[str, set[str]]) -> list[NotFused]:
    """A value the lowering stored in a buffer (why_probes: its heuristic and numbers) whose
    users ended in other kernels: unrealized, it would have been computed inside them."""
    found = []
    for name, reason in realized.items():
        own = kernel_of.get(name)
        node = nodes.get(name)
        if not own or node is None:
            continue
        apart: dict[str, list[str]] = {}
        for user in _neighbours(node, kernel_of, producers=False):
            if not own & kernel_of[user.name]:
                for other_kernel in sorted(kernel_of[user.name]):
                    apart.setdefault(other_kernel, []).append(user.name)
        for users in apart.values():
            found.append(NotFused("", "", [name], list(dict.fromkeys(users)), reason, "realized buffer"))
    return found


def _neighbours(node, kernel_of: dict[str, set[str]], producers: bool = True) -> list:
    """The nearest ops in some kernel that use `node` (and feed it, with `producers`),
    looking through the ones in none (views, getitem)."""
    found = []
    steps = [lambda n: list(n.users)] + ([lambda n: list(n.all_input_nodes)] if producers else [])
    for step in steps:
        seen, todo = {node}, step(node)
        while todo:
            other = todo.pop(0)
            if other in seen or other.op != "call_function":
                continue
            seen.add(other)
            if other.name in kernel_of:
                found.append(other)
            else:
                todo += step(other)
    return found


def graph_break_pairs(graphs: list[GraphRecord], breaks: list) -> None:
    """Nodes kept apart by a graph break: the last user line before the break in the
    graph that broke, and the first after it in the graph of the frame Dynamo resumed in
    (the next graph compiled for a later frame with a line of that file at or after the
    break). The pair is kept on the first graph, `other_graph` naming the second."""
    compiled = [graph for graph in graphs if graph.kind != "backward" and graph.subgraph is None]
    for graph_break in breaks:
        where = graph_break.source
        if where is None or not graph_break.compile_id:
            continue
        frame = graph_break.compile_id.split("/")[0]
        before = [index for index, graph in enumerate(compiled)
                  if f"{graph.frame_id}/{graph.frame_compile_id}" == graph_break.compile_id]
        if not before:
            continue
        first = compiled[before[-1]]
        side1 = _line_nodes(first, where.file, where.line, before_break=True)
        after = next((graph for graph in compiled[before[-1] + 1:] if str(graph.frame_id) != frame
                      and _line_nodes(graph, where.file, where.line, before_break=False)), None)
        if not side1 or after is None:
            continue
        side2 = _line_nodes(after, where.file, where.line, before_break=False)
        reason = f"graph break at line {where.line}: {graph_break.reason}"
        first.not_fused.append(NotFused("", "", side1, side2, reason, "graph break", other_graph=after.key))


def _line_nodes(graph: GraphRecord, file: str, break_line: int, before_break: bool) -> list[str]:
    """The post-grad nodes of the graph's last user line in `file` up to the break (or its
    first from the break on), in graph order; none when the graph has no such line."""
    placed = [node for node in graph.post_grad_nodes if node.op == "call_function" and node.source is not None
              and node.source.file == file
              and (node.source.line <= break_line if before_break else node.source.line >= break_line)]
    if not placed:
        return []
    line = (placed[-1] if before_break else placed[0]).source.line
    return [node.name for node in placed if node.source.line == line]
