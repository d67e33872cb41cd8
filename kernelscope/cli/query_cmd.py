"""`kernelscope query FILE:LINE`: the provenance chain through one line, as a tree."""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from kernelscope.cli.common import new_parser, open_store, parse_file_line, parse_run_id, print_json, stdout_is_tty
from kernelscope.record import SHARED_LINE_REASON_PREFIX
from kernelscope.store import DEFAULT_STORE_DIR, GraphChain, LineRef, NodeRef, QueryResult


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
            "kernelscope query examples/mlp.py:13 --json",
        ],
    )
    parser.add_argument("location", metavar="FILE:LINE", help="the line to start from")
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID",
                        help="run id (default: the latest run that has FILE)")
    parser.add_argument("--direction", choices=["up", "down", "both"], default="both",
                        help="which way to follow the chain (default: both)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path, line = parse_file_line(args.location)
    with open_store(args) as store:
        result = store.query(path, line, run_id=args.run_id, direction=args.direction)
        linked_lines = [] if not result.empty else [links.line for links in store.lines_for_file(path, result.location.run_id).lines]
    if args.json:
        print_json(result)
        return 0
    tree = build_tree(result)
    if result.empty:
        hint = f"lines with links in this file: {_compact(linked_lines)}" if linked_lines else "no line of this file has links"
        tree.children.append(Branch(f"nothing recorded at this line in run {result.location.run_id} ({hint})", "yellow"))
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


def build_tree(result: QueryResult) -> Branch:
    location = result.location
    what = f"{location.kind} file in run {location.run_id}"
    if location.graph is not None:
        what += f", graph {location.graph.compile_id} {location.graph.kind}"
    if location.kernel is not None:
        what += f", kernel {location.kernel}"
    root = Branch(f"{location.path}:{result.line}  ({what})", "bold")
    if result.text.strip():
        root.children.append(Branch(f"| {result.text.strip()}", "dim"))
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
    return Branch(f"{stage} {node.name} = {node.target}  [{node.reason}]{where}", "magenta")


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
