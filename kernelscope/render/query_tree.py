"""A query's answer as a tree of labelled, styled branches: what `kernelscope query`
prints (as a rich tree on a terminal, as indented lines otherwise) and what a Python
API answer shows (`repr`, and nested lists in Jupyter).

A source line's default answer is a summary per graph and module group (alike
instances folded, `blocks.2–46 (45 × Block)`); a detailed answer lists every node,
kernel line and wrapper line; an answer from a generated line is always detailed,
with each node's whole call stack."""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.run_record import SHARED_LINE_REASON_PREFIX
from kernelscope.store.reading.folding import group_title
from kernelscope.store.results import (
    GraphChain,
    KernelPartRef,
    LineOverview,
    LineRef,
    Location,
    ModuleGroup,
    NodeRef,
    QueryResult,
    RecomputeRef,
    UserKernelCopy,
)


@dataclass
class Branch:
    label: str
    style: str = ""  # a rich style ("bold cyan"); HTML turns its words into classes
    children: list[Branch] = field(default_factory=list)


def plain_lines(branch: Branch, depth: int = 0) -> list[str]:
    """The tree as indented lines (two spaces a level): `kernelscope query | less`."""
    lines = ["  " * depth + branch.label]
    for child in branch.children:
        lines += plain_lines(child, depth + 1)
    return lines


def build_overview(overview: LineOverview) -> Branch:
    """Per graph, then per module group (instances of the same shape folded): what a
    source line became, counted. The default answer for a source line."""
    root = header(overview.location, overview.line, overview.text)
    for graph in overview.graphs:
        root.children.append(_graph_branch(graph.graph.title, graph.post_nodes,
                                           graph.called_nodes, graph.triton_kernels, graph.extern_calls,
                                           graph.generated_lines, graph.groups))
    return root


def build_summary(result: QueryResult) -> Branch:
    """As build_overview, from a query answer (`--module`, `--direct-only`, `--direction up`)."""
    root = header(result.location, result.line, result.text)
    for chain in result.graphs:
        calls = sum(1 for node in chain.post_nodes if node.via == "call")
        externs = sum(1 for kernel in chain.kernels if kernel.kind == "extern")
        root.children.append(_graph_branch(chain.graph.title, len(chain.post_nodes),
                                           calls, len(chain.kernels) - externs, externs, chain.generated_lines,
                                           chain.groups))
    return root


def kernels_label(names) -> str:
    """"Triton", "C++" (the kernels of Inductor's CPU backend, `cpp_fused_*`, also as
    `forward/cpp_fused_*`) or "Triton/C++": what generated kernels `names` are."""
    cpp = [name.rsplit("/", 1)[-1].startswith("cpp_") for name in names]
    return "Triton" if not any(cpp) else "C++" if all(cpp) else "Triton/C++"


def _graph_branch(graph: str, post_nodes: int, called: int, triton: int, externs: int, generated: int,
                  groups: list[ModuleGroup]) -> Branch:
    via = f" ({called} via call)" if called else ""
    label = kernels_label([name for group in groups for name in group.triton_kernels])
    branch = Branch(f"graph {graph}: {post_nodes} post-grad nodes{via} · {triton} {label} kernels · "
                    f"{externs} extern calls · {generated} generated lines", "bold cyan")
    branch.children = [_group_branch(group) for group in groups]
    return branch


def _group_branch(group: ModuleGroup) -> Branch:
    """One module instance, or a folded group of alike ones (its numbers are each member's)."""
    label = kernels_label(group.triton_kernels)
    counts = (f"{len(group.triton_kernels)} {label}, {len(group.extern_ops)} extern, "
              f"{group.generated_lines} generated lines, {group.post_nodes} post-grad nodes")
    if group.folded:
        counts += " each; same kernels"
    module = Branch(f"{group_title(group)}  {group.via or 'direct'}: {counts}", "bold yellow")
    module.children.append(Branch(f"source lines: {_compact_sources(group.source_lines)}", "green"))
    if group.triton_kernels:
        module.children.append(Branch(f"{label}: {_capped(group.triton_kernels)}", "yellow"))
    if group.folded and group.extern_ops:
        module.children.append(Branch(f"extern (each): {_capped(group.extern_ops)}", "blue"))
    elif group.extern_calls:
        module.children.append(Branch(f"extern: {_capped(group.extern_calls)}", "blue"))
    return module


def summary_hint(groups: list[ModuleGroup]) -> str:
    """The last line of a summary: how to see more (and how to open a folded group)."""
    text = "--detail lists every node, kernel line and wrapper line; --module PATH keeps one instance"
    folded = [group for group in groups if group.folded]
    if folded:
        members = folded[0].members
        text += f" (a folded group's member, e.g. --module {members[len(members) // 2]})"
    return text


def header(location: Location, line: int, text: str) -> Branch:
    what = f"{location.kind} file in run {location.run_id}"
    if location.graph is not None:
        what += f", graph {location.graph.title}"
    if location.kernel is not None:
        what += f", kernel {location.kernel}"
    root = Branch(f"{location.path}:{line}  ({what})", "bold")
    if text.strip():
        root.children.append(Branch(f"| {text.strip()}", "dim"))
    return root


def build_tree(result: QueryResult) -> Branch:
    """Every node, kernel line and wrapper line of the answer (`--detail`; generated lines)."""
    root = header(result.location, result.line, result.text)
    for origin in result.origins:
        root.children.append(Branch(f"recorded: {origin.reason} {', '.join(origin.nodes) or '(no nodes)'}", "magenta"))
    for chain in result.graphs:
        root.children.append(_chain_branch(chain))
    return root


def _chain_branch(chain: GraphChain) -> Branch:
    branch = Branch(f"graph {chain.graph.title}", "bold cyan")
    if chain.sources:
        sources = Branch("source lines (up)", "green")
        for source in chain.sources:
            sources.children.append(Branch(
                f"{source.file}:{source.line} in {source.function}  <- {', '.join(source.nodes)}  [{source.reason}]",
                "green", [Branch(f"| {source.code}", "dim")] if source.code else [],
            ))
        branch.children.append(sources)
        stacks = _distinct_stacks(chain.pre_nodes + chain.post_nodes)
        if any(len(stack) > 1 for stack in stacks):
            whole = Branch("call stacks (outermost first)", "green")
            for stack, names in stacks.items():
                whole.children.append(Branch(" > ".join(f"{frame.file}:{frame.line} {frame.code}" for frame in stack)
                                             + f"  <- {_capped(names, 6)}", "green"))
            branch.children.append(whole)
    for node in chain.pre_nodes + chain.post_nodes:
        branch.children.append(_node_branch(node))
    for kernel in chain.kernels:
        label = f"kernel {kernel.name} ({kernel.kind})  [{kernel.reason}: {', '.join(kernel.nodes)}]"
        if kernel.file:
            label += f"  {kernel.file}"
        kernel_branch = Branch(label, "bold yellow")
        shared = [line for line in kernel.lines if line.reason.startswith(SHARED_LINE_REASON_PREFIX)]
        kernel_branch.children += [_line_branch(line) for line in kernel.lines if line not in shared]
        if shared:
            kernel_branch.children.append(Branch(
                f"{kernel.file}:{compact([line.line for line in shared])}  "
                f"[{len(shared)} shared lines: indexing and masks of the whole kernel]", "dim"))
        kernel_branch.children += [_line_branch(call, "blue") for call in kernel.calls]
        branch.children.append(kernel_branch)
    # Kernel source embedded in wrapper.py repeats the kernel file's lines: one summary line.
    embedded = [line for line in chain.wrapper_lines if line.reason.startswith("defines kernel")]
    own = [line for line in chain.wrapper_lines if line not in embedded]
    if own or embedded:
        wrapper = Branch("wrapper lines", "blue", [_line_branch(line, "blue") for line in own])
        if embedded:
            wrapper.children.append(Branch(
                f"{embedded[0].file}:{compact([line.line for line in embedded])}  "
                "[the kernel source above, embedded in the wrapper]", "dim"))
        branch.children.append(wrapper)
    return branch


def _node_branch(node: NodeRef) -> Branch:
    stage = "pre-grad" if node.stage == "pre" else "post-grad"
    where = f"  {node.graph_file}:{node.graph_line}" if node.graph_file and node.graph_line else ""
    module = f" in {node.module}" if node.module else ""
    branch = Branch(f"{stage} {node.name} = {node.target}{module}  [{node.reason}]{where}", "magenta")
    if node.lineage:
        branch.children.append(Branch(f"made by pass {'; '.join(node.lineage)}", "dim"))
    if node.recomputed_from:
        branch.children.append(Branch(node.recomputed_from, "cyan"))
    return branch


def recompute_branch(recomputes: list[RecomputeRef], listed: int = 12) -> Branch:
    """What the backward computes again of this line (activation checkpointing): per backward
    graph the kernels that do it and up to `listed` recomputed nodes with what they recompute
    (an outer line's folded answer lists none: its modules' lines list theirs)."""
    whys = sorted({ref.why for ref in recomputes})
    root = Branch(f"recomputed in the backward ({', '.join(whys)}): {len(recomputes)} node"
                  f"{'s' if len(recomputes) != 1 else ''}", "bold cyan")
    by_graph: dict[str, list[RecomputeRef]] = {}
    for ref in recomputes:
        by_graph.setdefault(ref.graph, []).append(ref)
    for graph, refs in by_graph.items():
        kernels = list(dict.fromkeys(kernel for ref in refs for kernel in ref.kernels))
        branch = Branch(f"graph {graph}: kernels {_capped(kernels, 6) or 'none'}", "cyan")
        branch.children = [Branch(ref.text, "cyan") for ref in refs[:listed]]
        if len(refs) > listed:
            branch.children.append(Branch(f"... {'and ' if listed else ''}{len(refs) - listed} more "
                                          "(--json lists them all)", "dim"))
        root.children.append(branch)
    return root


def _distinct_stacks(nodes: list[NodeRef]) -> dict[tuple, list[str]]:
    stacks: dict[tuple, list[str]] = {}
    for node in nodes:
        if node.stack and node.name not in stacks.setdefault(tuple(node.stack), []):
            stacks[tuple(node.stack)].append(node.name)
    return stacks


def _capped(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _compact_sources(sources: list[str]) -> str:
    """['a.py:3', 'a.py:1', 'a.py:2', 'b.py:7'] -> 'a.py:1-3, b.py:7'."""
    by_file: dict[str, list[int]] = {}
    for source in sources:
        file, _, line = source.rpartition(":")
        by_file.setdefault(file, []).append(int(line))
    return ", ".join(f"{file}:{compact(sorted(set(lines)))}" for file, lines in sorted(by_file.items())) or "none"


def _line_branch(line: LineRef, style: str = "yellow") -> Branch:
    nodes = f" {', '.join(line.nodes)}" if line.nodes else ""
    return Branch(f"{line.file}:{line.line}  [{line.reason}{nodes}]  | {line.text.strip()}", style)


def compact(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    parts, start = [], None
    for index, number in enumerate(numbers):
        if start is None:
            start = number
        if index + 1 == len(numbers) or numbers[index + 1] != number + 1:
            parts.append(str(start) if start == number else f"{start}-{number}")
            start = None
    return ", ".join(parts)



def kernel_part_branch(parts: list[KernelPartRef], from_source: bool) -> Branch:
    """A foreach/combo kernel's sub-kernel of a kernel line, or the optimizer sub-kernels a
    source line became (the first LISTED), each with the parameters it updates."""
    from kernelscope.render.kernel_parts import LISTED, heading, part_lines, title

    branch = Branch(heading(parts, from_source), "bold green")
    for part in parts[:LISTED]:
        branch.children.append(Branch(title(part), "green", [Branch(text, "yellow") for text in part_lines(part)]))
    if len(parts) > LISTED:
        branch.children.append(Branch(f"... {len(parts) - LISTED} more sub-kernels (query --json lists all)", "dim"))
    return branch


def user_kernel_branch(copies: list[UserKernelCopy], from_source: bool) -> Branch:
    """A user Triton kernel's generated copies of a source line (down), or the user's line a
    kernel line was copied from (up), with the autotune config each copy launched."""
    from kernelscope.render.user_kernels import copy_lines, title, tuning_lines

    branch = Branch("generated copies of this user Triton kernel line (down)" if from_source
                    else "user Triton kernel source (up)", "bold green")
    for copy in copies:
        kernel = Branch(title(copy.kernel), "green")
        kernel.children += [Branch(text, "yellow") for text in copy_lines(copy, from_source)]
        if copy.kernel.launch_lines:
            kernel.children.append(Branch(f"launched at wrapper lines {compact(copy.kernel.launch_lines)}", "dim"))
        kernel.children += [Branch(text, "magenta") for text in tuning_lines(copy.kernel)]
        branch.children.append(kernel)
    return branch
