"""Higher-order ops' subgraphs, recorded as what they are.

Inductor lowers each subgraph of a higher-order op (`torch.cond`'s branches, `while_loop`'s
cond and body, a nested compile region's `invoke_subgraph`, `scan`'s combine_fn, `map`'s
body) with a SubgraphLowering, and generates it by a codegen run inside its parent's: the
subgraph becomes a function of the parent's output code (`def true_graph_0(args):`, its
kernels defined above it), spliced whole into the parent's wrapper. The graph_codegen probe
captures it as a graph of its own, with its name and its parent (probes.GraphCapture).

Here, torch-free apart from reading the parent's post-grad graph:
- `call_sites`: which of a graph's post-grad nodes call which subgraph, in which role;
- `pick_pre_grad`: the pre-grad subgraph (Dynamo's `cond_true_0`, `subgraph_0`) a child's
  nodes came from, so they link to its nodes rather than the parent's;
- `splice`: where a child's generated lines lie in the parent's wrapper, so the parent
  leaves the child's kernels to the child (listed once, with their nodes) and its copy of
  the child's lines links to the call sites;
- `describe`: a child's `Subgraph` record, with its label ("cond: true branch of
  Gate.forward (cond_branch.py:25)", "nested region Block.forward, 4 call sites");
- `lowered_from`, `restore_lowered_sources`: Inductor rewrites `scan` and `map` as a
  while_loop before lowering (so no subgraph is ever called by a scan or map node): its
  cond and body are labelled as the scan's or map's ("scan: combine_fn of ..., as while_loop
  body"), and the body's retraced ops get back the lines of the subgraph the op was given.

`torch.utils.checkpoint` regions leave no subgraph to record: AOTAutograd inlines them
into the joint graph before Inductor sees it, so their nodes are the parent's own.
"""
from __future__ import annotations

import ast
import os
from collections import Counter
from dataclasses import dataclass
from functools import cache

from kernelscope.run_record import FxNode, GraphRecord, LineOrigin, SourceLocation, Subgraph

# op -> {position of a subgraph among the op's arguments: its role}
ROLES: dict[str, dict[int, str]] = {
    "cond": {1: "true branch", 2: "false branch"},
    "while_loop": {0: "cond", 1: "body"},
    "while_loop_stack_output": {0: "cond", 1: "body"},
    "invoke_subgraph": {0: "region"},
    "scan": {0: "combine_fn"},
    "associative_scan": {0: "combine_fn"},
    "map_impl": {0: "body"},
}
SHOWN_OP = {"map_impl": "map", "while_loop_stack_output": "while_loop"}
# Inductor's post-grad passes that rewrite a higher-order op as a while_loop (fx_passes/post_grad.py):
# the while_loop's cond and body are then what the user wrote as `scan`'s combine_fn or `map`'s body.
LOWERED_BY = {"decompose_scan_to_while_loop": "scan", "decompose_map_to_while_loop": "map"}
LOWERED_ROLES = {"scan": {"body": "combine_fn", "cond": "loop condition"},
                 "map": {"body": "body", "cond": "loop condition"}}


@dataclass(frozen=True)
class CallSite:
    node: str  # the parent's post-grad node that calls the subgraph
    op: str
    role: str


def qualify(parent_name: str | None, name: str) -> str:
    """Inductor's name for a subgraph of a graph named `parent_name` (GraphLowering.qualify_name)."""
    return f"{parent_name}_{name}" if parent_name else name


def call_sites(gm, parent_name: str | None) -> dict[str, list[CallSite]]:
    """{subgraph name: the higher-order op nodes of `gm` that call it, in graph order}."""
    from torch._ops import HigherOrderOperator

    found: dict[str, list[CallSite]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, HigherOrderOperator):
            continue
        op = node.target.name()
        roles = ROLES.get(op, {})
        for position, arg in enumerate(node.args):
            if getattr(arg, "op", None) == "get_attr":
                site = CallSite(node.name, op, roles.get(position, "subgraph"))
                found.setdefault(qualify(parent_name, str(arg.target)), []).append(site)
    return found


def pick_pre_grad(gm, candidates: list, ancestors) -> object | None:
    """The candidate pre-grad graph most of `gm`'s nodes came from (`ancestors(node,
    graph_id)` lists a node's pre-grad ancestors in that graph), None if none did."""
    best, best_hits = None, 0
    for candidate in candidates:
        hits = sum(1 for node in gm.graph.nodes if node.op == "call_function" and ancestors(node, candidate.graph_id))
        if hits > best_hits:
            best, best_hits = candidate, hits
    return best


@dataclass
class Splice:
    """A child's generated code inside its parent's wrapper."""

    child: GraphRecord
    lines: dict[int, int]  # child's wrapper line -> the same line in the parent's wrapper
    first: int  # parent's first and last line of the spliced code
    last: int

    def holds(self, parent_line: int) -> bool:
        return self.first <= parent_line <= self.last


def splice(parent_text: str, child: GraphRecord) -> Splice | None:
    """Where the child's wrapper lies in the parent's (blank lines may differ), else None."""
    child_lines = [(number, line.rstrip()) for number, line in enumerate(child.wrapper_text.splitlines(), 1)
                   if line.strip()]
    parent_lines = [(number, line.rstrip()) for number, line in enumerate(parent_text.splitlines(), 1)
                    if line.strip()]
    if not child_lines:
        return None
    texts = [text for _, text in parent_lines]
    wanted = [text for _, text in child_lines]
    # The child starts at its function's or its first kernel's line, never at a shared header.
    anchor = next((index for index, text in enumerate(wanted) if text.startswith(("def ", "# kernel path"))), 0)
    for start in range(len(texts) - len(wanted) + anchor + 1):
        if texts[start:start + len(wanted) - anchor] == wanted[anchor:]:
            mapped = {child_number: parent_lines[start + offset][0]
                      for offset, (child_number, _) in enumerate(child_lines[anchor:])}
            return Splice(child, mapped, min(mapped.values()), max(mapped.values()))
    return None


def spliced_lines(parent_splice: Splice, sites: list[CallSite]) -> tuple[list[LineOrigin], int]:
    """The parent's copy of a child's attributed lines, each linked to the call sites; and
    how many of the copied lines should carry provenance (as many as the child's)."""
    nodes = [site.node for site in sites]
    name = parent_splice.child.subgraph.name if parent_splice.child.subgraph else ""
    rows = [
        LineOrigin(parent_splice.lines[origin.line], origin.text, list(nodes), f"subgraph {name}: {origin.reason}")
        for origin in parent_splice.child.wrapper_lines
        if origin.nodes and origin.line in parent_splice.lines
    ]
    attributable = sum(1 for origin in parent_splice.child.wrapper_lines if origin.line in parent_splice.lines)
    return rows, attributable


def describe(name: str, parent: GraphRecord, sites: list[CallSite], child: GraphRecord) -> Subgraph:
    """The child's Subgraph record and its label."""
    op = sites[0].op if sites else "subgraph"
    role = sites[0].role if sites else "subgraph"
    record = Subgraph(name=name, op=op, role=role, parent=parent.key, call_sites=[site.node for site in sites])
    by_name = {node.name: node for node in parent.post_grad_nodes}
    first = by_name.get(sites[0].node) if sites else None
    backward = " (backward)" if child.kind == "backward" else ""  # the gradient's subgraph, as AOTAutograd made it
    if op == "invoke_subgraph":
        count = len(sites)
        record.label = (f"nested region {_region_function(child, first)}{backward}, "
                        f"{count} call site{'s' if count != 1 else ''}")
    else:
        where = _where(first.source) if first is not None and first.source is not None else "?"
        lowered = lowered_from(first)
        if lowered:
            record.label = (f"{lowered}: {LOWERED_ROLES[lowered].get(role, role)}{backward} of {where}, "
                            f"as while_loop {role}")
        else:
            record.label = f"{SHOWN_OP.get(op, op)}: {role}{backward} of {where}"
    return record


def lowered_from(call_site: FxNode | None) -> str:
    """'scan' or 'map' when Inductor rewrote that op as the while_loop `call_site`; else ''."""
    if call_site is None:
        return ""
    return next((LOWERED_BY[step.pass_name] for step in call_site.lineage if step.pass_name in LOWERED_BY), "")


def restore_lowered_sources(parent_gm, child: GraphRecord, call_site: FxNode, skip: tuple[str, ...]) -> None:
    """Give the ops of a while_loop body that Inductor made from a `scan`/`map` their lines.

    The pass that rewrites the op retraces its subgraph inside the new loop body and drops
    the ops' stack traces; the subgraph it was given is still an attribute of the parent
    graph, with them. Its ops appear in the body in the same order: each body op without a
    line takes the one of the next original op of the same target (the original that
    matches most of them, when the parent has several). Ops with no twin are left for the
    caller (the op's own line)."""
    from kernelscope.engine import fx_nodes

    # a backward body's ops have no stack trace either; the line they borrowed through seq_nr
    # ("gradient of forward node lt") is the loop's, not theirs
    missing = [node for node in child.post_grad_nodes if node.op == "call_function"
               and (node.source is None or node.source_via.startswith("gradient of forward node"))]
    best: list[tuple[FxNode, object]] = []
    for _, original in parent_gm.named_children():
        graph = getattr(original, "graph", None)
        if graph is None:
            continue
        ops = [node for node in graph.nodes if node.op == "call_function" and node.meta.get("stack_trace")]
        pairs, position = [], 0
        for node in missing:
            match = next((index for index in range(position, len(ops))
                          if fx_nodes.target_name(ops[index].target) == node.target), None)
            if match is not None:
                pairs.append((node, ops[match]))
                position = match + 1
        if len(pairs) > len(best):
            best = pairs
    role = LOWERED_ROLES.get(lowered_from(call_site), {}).get("body", "subgraph")
    for node, original in best:
        twin = fx_nodes.to_fx_node(node.name, node.op, node.target, original.meta.get("stack_trace"), {}, skip,
                                   original.meta.get("nn_module_stack"))
        node.source, node.stack = twin.source, twin.stack
        node.source_via = f"the {role}'s op (before Inductor rewrote {lowered_from(call_site)} as a while_loop)"
        if not node.module_path:
            node.module_path, node.module_class = twin.module_path, twin.module_class


def _where(source: SourceLocation) -> str:
    return f"{qualname_at(source.file, source.line) or source.function} ({os.path.basename(source.file)}:{source.line})"


def _region_function(child: GraphRecord, call_site: FxNode | None) -> str:
    """The function a nested region compiled (`Block.forward`): the frame its nodes' stacks
    reach one below the call site's, the most common among its ops."""
    depth = len(call_site.stack) if call_site is not None else 0
    frames: Counter = Counter()
    for node in child.post_grad_nodes:
        if node.op != "call_function" or node.source is None:
            continue
        frame = node.stack[depth] if len(node.stack) > depth else node.source
        frames[(frame.file, frame.line, frame.function)] += 1
    if not frames:
        return child.subgraph.name if child.subgraph else "?"
    file, line, function = frames.most_common(1)[0][0]
    return qualname_at(file, line) or function


def qualname_at(path: str, line: int) -> str:
    """`Class.method` (or `function`) of the innermost def enclosing `line` in the file; '' if unreadable."""
    for start, end, name in _definitions(path):
        if start <= line <= end:
            return name
    return ""


@cache
def _definitions(path: str) -> list[tuple[int, int, str]]:
    """Every def of a file as (first line, last line, qualified name), innermost first."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[tuple[int, int, str]] = []

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return sorted(found, key=lambda item: item[1] - item[0])
