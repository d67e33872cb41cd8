"""A query's answer: what `kernelscope query FILE:LINE` prints, as an object.

`ask` is the one function behind `kernelscope query`, `Store.query` and `Run.query`:
it locates the file in a run, reads the line's default answer (the counts the store
keeps per line: one index probe, alike module instances folded) or its whole chain
(`detail`, `module`, `direct_only`, `direction="up"`), and the collectives the line
issues. The CLI prints the answer's tree; Python gets the structured data with a
readable `repr` (the same text) and `_repr_html_` (the same tree, for Jupyter).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kernelscope.errors import UserError
from kernelscope.store.results import (
    SOURCE,
    KernelPartRef,
    LineOverview,
    Location,
    ModuleGroup,
    QueryResult,
    RecomputeRef,
    UserKernelCopy,
)

if TYPE_CHECKING:
    from kernelscope.render.query_tree import Branch
    from kernelscope.store import StoreBackend
    from kernelscope.store.parts.distributed import CollectiveRef
    from kernelscope.store.parts.why import LineWhy

DIRECTIONS = ("up", "down", "both")


@dataclass
class Answer:
    """What a line became (down) or came from (up), in one run.

    `overview` holds the default answer for a model source line (counts per graph and
    module group); `result` the whole chain (every node, kernel line and wrapper line:
    `detail=True`, a generated file's line, or a narrowed summary). `str(answer)` and
    `repr(answer)` are the lines `kernelscope query` prints."""

    location: Location  # the file, in the run that answered
    line: int
    text: str  # the line's code ("" when the file is not on this machine)
    direction: str
    module: str | None
    direct_only: bool
    summary: bool  # a source line's counted summary (not every node and line)
    overview: LineOverview | None = None
    result: QueryResult | None = None
    collectives: list[CollectiveRef] = field(default_factory=list)
    recomputes: list[RecomputeRef] = field(default_factory=list)  # backward nodes that recompute this line's ops
    linked_lines: list[int] = field(default_factory=list)  # an empty answer: the file's lines that have one
    warnings: list[str] = field(default_factory=list)  # e.g. a generated file edited since its run
    # a user Triton kernel's source line: its generated copies; a line of a copy: the user's line
    user_kernels: list[UserKernelCopy] = field(default_factory=list)
    # a foreach kernel's line: its sub-kernel; a source line: the optimizer sub-kernels it became
    kernel_parts: list[KernelPartRef] = field(default_factory=list)
    # A model line: the guards it installed, the recompiles it caused, the fusions refused
    # for its ops (store/parts/why.py; docs/why.md). None for a generated file's line.
    why: LineWhy | None = None

    @property
    def run_id(self) -> int:
        return self.location.run_id

    @property
    def empty(self) -> bool:
        """Nothing recorded at this line (no node, kernel, user kernel, guard, recompile or refusal)."""
        if self.user_kernels or self.kernel_parts:
            return False
        chain_empty = self.overview.empty if self.overview is not None else self._chain.empty
        return chain_empty and (self.why is None or self.why.empty)

    @property
    def _outer_line(self) -> bool:
        """A line whose nodes are all reached through a call (`x = block(x)`): its answer counts
        what the called modules became, their own lines list the details."""
        graphs = self.overview.graphs if self.overview is not None else []
        return bool(graphs) and all(graph.called_nodes == graph.post_nodes for graph in graphs)

    @property
    def graphs(self) -> list:
        """Per graph: GraphOverview (summary) or GraphChain (the chain)."""
        return self.overview.graphs if self.overview is not None else self._chain.graphs

    @property
    def _chain(self) -> QueryResult:
        """`result`, for an answer without an overview (an Answer holds one of the two)."""
        if self.result is None:
            raise ValueError("an Answer holds an overview or a result")
        return self.result

    @property
    def groups(self) -> list[ModuleGroup]:
        """The module groups of every graph (alike instances folded)."""
        return [group for graph in self.graphs for group in graph.groups]

    def tree(self) -> Branch:
        """The answer as a tree of labelled branches: what `kernelscope query` prints."""
        from kernelscope.render.distributed import collective_answer
        from kernelscope.render.query_tree import (
            Branch,
            build_overview,
            build_summary,
            build_tree,
            compact,
            kernel_part_branch,
            recompute_branch,
            summary_hint,
            user_kernel_branch,
        )

        if self.overview is not None:
            tree = build_overview(self.overview)
        elif self.summary:
            tree = build_summary(self._chain)
        else:
            tree = build_tree(self._chain)
        if self.collectives:
            tree.children.insert(1 if self.text.strip() else 0, Branch("collectives", "bold red", [
                Branch(lines[0], "red", [Branch(line, "red") for line in lines[1:]])
                for lines in map(collective_answer, self.collectives)]))
        if self.user_kernels:
            tree.children.append(user_kernel_branch(self.user_kernels, self.location.kind == SOURCE))
        if self.kernel_parts:
            tree.children.append(kernel_part_branch(self.kernel_parts, self.location.kind == SOURCE))
        if self.why is not None and not self.why.empty:
            from kernelscope.render.why import why_branches

            tree.children.extend(why_branches(self.why))
        if self.recomputes:
            tree.children.append(recompute_branch(self.recomputes, listed=0 if self._outer_line else 12))
        if self.empty:
            if self.module:
                hint = f"none in module instance {self.module!r}: drop --module to see all"
            else:
                hint = (f"lines with links in this file: {compact(self.linked_lines)}" if self.linked_lines
                        else "no line of this file has links")
            tree.children.append(Branch(f"nothing recorded at this line in run {self.location.run_id} ({hint})",
                                        "yellow"))
        elif self.summary:
            tree.children.append(Branch(summary_hint(self.groups), "dim"))
        result = self.result
        if result is not None and result.profile and not self.empty:  # device time from an attached profile
            from kernelscope.profile.report import query_time_lines

            tree.children.append(Branch("device time per step", "bold magenta",
                                        [Branch(text, "magenta") for text in query_time_lines(result)]))
        return tree

    def lines(self) -> list[str]:
        """The answer as `kernelscope query` prints it when not on a terminal."""
        from kernelscope.render.query_tree import plain_lines

        return plain_lines(self.tree())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: what `kernelscope query --json` prints (the chain with
        `detail=True`; a summary's counts otherwise), with the line's collectives and user
        Triton kernel links."""
        data = asdict(self.overview if self.overview is not None else self._chain)
        if self.collectives:
            data["collectives"] = [asdict(collective) for collective in self.collectives]
        if self.user_kernels:  # a user Triton kernel's line: its copies or its user line, with the configs
            data["user_kernels"] = [asdict(copy) for copy in self.user_kernels]
        if self.kernel_parts:  # foreach sub-kernels: nodes, lines, the optimizer parameters they update
            data["kernel_parts"] = [asdict(part) for part in self.kernel_parts]
        if self.why is not None:  # a model line: always present, empty lists when nothing (docs/why.md)
            data["guards"] = [asdict(guard) for guard in self.why.guards]
            data["recompiles"] = [asdict(recompile) for recompile in self.why.recompiles]
            data["not_fused"] = [asdict(refusal) for refusal in self.why.not_fused]
        if self.recomputes:
            data["recomputed"] = [asdict(ref) for ref in self.recomputes]
        return data

    def __str__(self) -> str:
        return "\n".join([f"warning: {warning}" for warning in self.warnings] + self.lines())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from kernelscope.render.html import tree_html

        return tree_html(self.tree(), self.warnings)


def parse_location(text: str) -> tuple[str, int]:
    """`examples/mlp.py:14` -> ("examples/mlp.py", 14)."""
    path, separator, line = text.rpartition(":")
    if not separator or not path or not line.isdigit() or int(line) < 1:
        raise UserError(f"expected FILE:LINE with a line number from 1 (e.g. examples/mlp.py:14), got {text!r}")
    return path, int(line)


def ask(store: StoreBackend, path: str, line: int, run_id: int | None = None, direction: str = "both",
        module: str | None = None, direct_only: bool = False, detail: bool = False,
        on_warning: Callable[[str], None] | None = None) -> Answer:
    """The answer at `path:line` in run `run_id` (else the latest run that has the file).

    A model source line answers with its summary unless `detail` (or `module`,
    `direct_only`, `direction="up"` narrow it: then the summary is counted from the
    chain); a generated file's line always answers in detail. `on_warning` hears
    about a generated file that is not as its run wrote it, before the answer is read."""
    if direction not in DIRECTIONS:
        raise UserError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    location = store.locate(path, run_id)
    warnings = []
    problem = store.file_problem(location)
    if problem:
        warnings.append(problem)
        if on_warning is not None:
            on_warning(problem)
    view = store.run(location.run_id)
    summary = location.kind == SOURCE and not detail
    answer = Answer(location, line, "", direction, module, direct_only, summary, warnings=warnings)
    if summary and module is None and not direct_only and direction != "up":
        # the default: the counts the store keeps per line (one index probe)
        answer.overview = view.line_overview(location, line)
        answer.text = answer.overview.text
        if view.has_profile() and not answer.overview.empty:  # device times are per kernel: read the kernels
            answer.result = view.query_at(location, line, direction, detail=False, rollup=True)
    else:
        answer.result = view.query_at(location, line, direction, module, direct_only, detail=not summary,
                                      rollup=summary)
        answer.text = answer.result.text
    answer.user_kernels = view.user_kernel_copies(location, line)
    answer.kernel_parts = view.kernel_parts_at(location, line)
    if location.kind == SOURCE:
        answer.why = view.why_at(location, line)
    if answer.empty:
        answer.linked_lines = (view.linked_lines(location) if location.kind == SOURCE
                               else [links.line for links in view.file_links(location).lines])
    collectives = view.collectives_at(location, line)  # communication at this line
    if location.kind == SOURCE:  # a model line: its collectives; their waits are named under each
        issued = {(collective.graph_key, collective.node) for collective in collectives}
        collectives = [collective for collective in collectives if collective.role != "wait"
                       or not any((collective.graph_key, peer) in issued for peer in collective.peers)]
    answer.collectives = collectives
    answer.recomputes = view.recomputes_at(location, line)  # what the backward computes again (checkpointing)
    return answer
