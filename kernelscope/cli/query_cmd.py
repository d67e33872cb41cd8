"""`kernelscope query FILE:LINE`: the provenance chain through one line, as a tree.

A source line's answer leads with a summary per graph and module instance (the
line `x = block(x)` of a 12-layer model reaches thousands of generated lines),
read from the counts the store keeps per line (RunView.line_overview: one index
probe however deep the model), with instances of the same shape folded into one
group (`blocks.2–46 (45 × Block)`); `--module` opens one instance and `--detail`
prints every node, kernel line and wrapper line. Answers from a generated line
are small and always detailed, with each node's whole call stack."""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass, field

from kernelscope.text import distributed as distributed_text
from kernelscope.cli.common import new_parser, open_store, parse_file_line, parse_run_id, print_json, stdout_is_tty
from kernelscope.record import SHARED_LINE_REASON_PREFIX
from kernelscope.store import (
    DEFAULT_STORE_DIR,
    GraphChain,
    LineOverview,
    LineRef,
    Location,
    ModuleGroup,
    NodeRef,
    QueryResult,
    RunView,
)
from kernelscope.store.folding import group_title
from kernelscope.store.results import SOURCE


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "query",
        help="show what a line became (down) or came from (up)",
        description="Follow the provenance chain through FILE:LINE. FILE is a model source file, or a "
        f"generated file of a run ({DEFAULT_STORE_DIR}/runs/<id>/...: a kernel, wrapper.py, "
        "pre_grad.py or post_grad.py). Down from a source line: its pre- and post-grad nodes, the kernel "
        "lines and wrapper lines they became. Up from a generated line: its post-grad nodes, their "
        "pre-grad nodes and the source lines. Every hop says why.",
        examples=[
            "kernelscope query examples/mlp.py:13",
            "kernelscope query examples/mlp.py:13 --direction down --run 3",
            f"kernelscope query {DEFAULT_STORE_DIR}/runs/3/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py:12",
            "kernelscope query examples/nanogpt.py:69                  # x = block(x): every layer, alike ones folded",
            "kernelscope query examples/nanogpt.py:69 --module blocks.1          # one layer, by submodule",
            "kernelscope query examples/nanogpt.py:69 --module blocks.1 --detail",
            "kernelscope query examples/mlp.py:13 --json",
            "kernelscope query bench/models/gpt2.py:40 --asm        # down to PTX and SASS (sm_90), registers, spills",
        ],
    )
    parser.add_argument("location", metavar="FILE:LINE", help="the line to start from")
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID",
                        help="run id (default: the latest run that has FILE)")
    parser.add_argument("--direction", choices=["up", "down", "both"], default="both",
                        help="which way to follow the chain (default: both)")
    parser.add_argument("--module", metavar="PATH",
                        help="keep only this module instance and those inside it (dotted prefix, e.g. blocks.1)")
    parser.add_argument("--direct-only", action="store_true",
                        help="only nodes whose own line this is, not those it calls into")
    parser.add_argument("--detail", action="store_true",
                        help="every node, kernel line and wrapper line (default for a source line: a summary "
                        "per graph and module instance, instances of the same shape folded into one group)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (always complete: every node and line, each graph's "
                        "module instances and their folded groups with the members of each)")
    parser.add_argument("--asm", action="store_true",
                        help="below the kernel: each Triton kernel's PTX and SASS lines for this line, with its "
                        "registers, spills and occupancy (compiled on first ask); a .ptx/.sass FILE goes up")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelscope.cli import asm_query

    if asm_query.wanted(args):
        return asm_query.run(args)
    path, line = parse_file_line(args.location)
    with open_store(args) as store:
        location = store.locate(path, args.run_id)
        problem = store.file_problem(location)
        if problem:
            print(f"kernelscope: warning: {problem}", file=sys.stderr)
        view = store.run(location.run_id)
        summary = location.kind == SOURCE and not args.detail and not args.json
        answer = None  # the query's answer: every node (and line, unless summarized)
        if summary and args.module is None and not args.direct_only and args.direction != "up":
            # the default: the counts the store keeps per line (one index probe)
            overview = view.line_overview(location, line)
            tree, empty, text = build_overview(overview), overview.empty, overview.text
            groups = [group for graph in overview.graphs for group in graph.groups]
            if view.has_profile() and not empty:  # device times are per kernel: read the kernels
                answer = view.query_at(location, line, args.direction, detail=False, rollup=True)
        else:
            answer = view.query_at(location, line, args.direction, args.module, args.direct_only,
                                  detail=not summary, rollup=summary)
            tree = build_summary(answer) if summary else build_tree(answer)
            empty, text = answer.empty, answer.text
            groups = [group for chain in answer.graphs for group in chain.groups]
        linked_lines = _linked_lines(view, location) if empty else []
        collectives = view.collectives_at(location, line)  # communication at this line
    if location.kind == SOURCE:  # a model line: its collectives; their waits are named under each
        issued = {(collective.graph_key, collective.node) for collective in collectives}
        collectives = [collective for collective in collectives if collective.role != "wait"
                       or not any((collective.graph_key, peer) in issued for peer in collective.peers)]
    if args.json:
        print_json({**asdict(answer), "collectives": [asdict(collective) for collective in collectives]}
                   if collectives else answer)
        return 0
    if collectives:
        tree.children.insert(1 if text.strip() else 0, Branch("collectives", "bold red", [
            Branch(lines[0], "red", [Branch(line, "red") for line in lines[1:]])
            for lines in map(distributed_text.collective_answer, collectives)]))
    if empty:
        if args.module:
            hint = f"none in module instance {args.module!r}: drop --module to see all"
        else:
            hint = f"lines with links in this file: {_compact(linked_lines)}" if linked_lines else "no line of this file has links"
        tree.children.append(Branch(f"nothing recorded at this line in run {location.run_id} ({hint})", "yellow"))
    elif summary:
        tree.children.append(Branch(_summary_hint(groups), "dim"))
    if answer is not None and answer.profile and not empty:  # device time from an attached profile
        from kernelscope.profile.report import query_time_lines

        tree.children.append(Branch("device time per step", "bold magenta",
                                    [Branch(text, "magenta") for text in query_time_lines(answer)]))
    if stdout_is_tty():
        _print_rich(tree)
    else:
        print("\n".join(_plain_lines(tree)))
    return 0


@dataclass
class Branch:
    label: str
    style: str = ""
    children: list[Branch] = field(default_factory=list)


def build_overview(overview: LineOverview) -> Branch:
    """Per graph, then per module group (instances of the same shape folded): what a
    source line became, counted. The default answer for a source line."""
    root = _header(overview.location, overview.line, overview.text)
    for graph in overview.graphs:
        root.children.append(_graph_branch(f"{graph.graph.compile_id} {graph.graph.kind}", graph.post_nodes,
                                           graph.called_nodes, graph.triton_kernels, graph.extern_calls,
                                           graph.generated_lines, graph.groups))
    return root


def build_summary(result: QueryResult) -> Branch:
    """As build_overview, from a query answer (`--module`, `--direct-only`, `--direction up`)."""
    root = _header(result.location, result.line, result.text)
    for chain in result.graphs:
        calls = sum(1 for node in chain.post_nodes if node.via == "call")
        externs = sum(1 for kernel in chain.kernels if kernel.kind == "extern")
        root.children.append(_graph_branch(f"{chain.graph.compile_id} {chain.graph.kind}", len(chain.post_nodes),
                                           calls, len(chain.kernels) - externs, externs, chain.generated_lines,
                                           chain.groups))
    return root


def _graph_branch(graph: str, post_nodes: int, called: int, triton: int, externs: int, generated: int,
                  groups: list[ModuleGroup]) -> Branch:
    via = f" ({called} via call)" if called else ""
    branch = Branch(f"graph {graph}: {post_nodes} post-grad nodes{via} · {triton} Triton kernels · "
                    f"{externs} extern calls · {generated} generated lines", "bold cyan")
    branch.children = [_group_branch(group) for group in groups]
    return branch


def _group_branch(group: ModuleGroup) -> Branch:
    """One module instance, or a folded group of alike ones (its numbers are each member's)."""
    counts = (f"{len(group.triton_kernels)} Triton, {len(group.extern_ops)} extern, "
              f"{group.generated_lines} generated lines, {group.post_nodes} post-grad nodes")
    if group.folded:
        counts += " each; same kernels"
    module = Branch(f"{group_title(group)}  {group.via or 'direct'}: {counts}", "bold yellow")
    module.children.append(Branch(f"source lines: {_compact_sources(group.source_lines)}", "green"))
    if group.triton_kernels:
        module.children.append(Branch(f"Triton: {_capped(group.triton_kernels)}", "yellow"))
    if group.folded and group.extern_ops:
        module.children.append(Branch(f"extern (each): {_capped(group.extern_ops)}", "blue"))
    elif group.extern_calls:
        module.children.append(Branch(f"extern: {_capped(group.extern_calls)}", "blue"))
    return module


def _summary_hint(groups: list[ModuleGroup]) -> str:
    """The last line of a summary: how to see more (and how to open a folded group)."""
    text = "--detail lists every node, kernel line and wrapper line; --module PATH keeps one instance"
    folded = [group for group in groups if group.folded]
    if folded:
        members = folded[0].members
        text += f" (a folded group's member, e.g. --module {members[len(members) // 2]})"
    return text


def _linked_lines(view: RunView, location: Location) -> list[int]:
    if location.kind == SOURCE:
        return view.linked_lines(location)
    return [links.line for links in view.file_links(location).lines]


def _header(location: Location, line: int, text: str) -> Branch:
    what = f"{location.kind} file in run {location.run_id}"
    if location.graph is not None:
        what += f", graph {location.graph.compile_id} {location.graph.kind}"
    if location.kernel is not None:
        what += f", kernel {location.kernel}"
    root = Branch(f"{location.path}:{line}  ({what})", "bold")
    if text.strip():
        root.children.append(Branch(f"| {text.strip()}", "dim"))
    return root


def build_tree(result: QueryResult) -> Branch:
    root = _header(result.location, result.line, result.text)
    for origin in result.origins:
        root.children.append(Branch(f"recorded: {origin.reason} {', '.join(origin.nodes) or '(no nodes)'}", "magenta"))
    for chain in result.graphs:
        root.children.append(_chain_branch(chain))
    return root


def _chain_branch(chain: GraphChain) -> Branch:
    branch = Branch(f"graph {chain.graph.compile_id} {chain.graph.kind}", "bold cyan")
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
                f"{kernel.file}:{_compact([line.line for line in shared])}  "
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
                f"{embedded[0].file}:{_compact([line.line for line in embedded])}  "
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
    return branch


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
    return ", ".join(f"{file}:{_compact(sorted(set(lines)))}" for file, lines in sorted(by_file.items())) or "none"


def _line_branch(line: LineRef, style: str = "yellow") -> Branch:
    nodes = f" {', '.join(line.nodes)}" if line.nodes else ""
    return Branch(f"{line.file}:{line.line}  [{line.reason}{nodes}]  | {line.text.strip()}", style)


def _plain_lines(branch: Branch, depth: int = 0) -> list[str]:
    lines = ["  " * depth + branch.label]
    for child in branch.children:
        lines += _plain_lines(child, depth + 1)
    return lines


def _print_rich(tree: Branch) -> None:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    def add(parent: Tree, branch: Branch) -> None:
        node = parent.add(Text(branch.label, style=branch.style))
        for child in branch.children:
            add(node, child)

    root = Tree(Text(tree.label, style=tree.style))
    for child in tree.children:
        add(root, child)
    Console().print(root)


def _compact(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    parts, start = [], None
    for index, number in enumerate(numbers):
        if start is None:
            start = number
        if index + 1 == len(numbers) or numbers[index + 1] != number + 1:
            parts.append(str(start) if start == number else f"{start}-{number}")
            start = None
    return ", ".join(parts)
