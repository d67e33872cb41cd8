"""Turn one store answer (`QueryResult`) into what each pane shows and highlights.

This is the one place the TUI reads a query answer: which file each pane
should show, which of its lines are linked to the cursor's line, which line
to scroll into view, and a one-line summary of the chain. A module-instance
filter keeps only the nodes of one layer (`NodeRef.module`, recorded by the
whole-stack provenance work; "" when the store has none).

A model line without a module filter is answered from the file's source index
(`source_link_set`: line numbers only, read once per file), a PTX/SASS line from
`RunView.asm_line` (`asm_link_set`), every other move from `StoreBackend.query`
(`link_set`): on a deep model a model line reaches thousands of generated lines,
and listing them with their texts cost a second.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.store.reading.source_index import LineAnswer
from kernelscope.store.results import KERNEL, POST_GRAD, SOURCE, WRAPPER, GraphChain, KernelRef, NodeRef, QueryResult
from kernelscope.tui.run_data import in_instance

PANES = (SOURCE, POST_GRAD, KERNEL, WRAPPER)  # left to right, top to bottom
ASM = "asm"  # the PTX/SASS pane: shown in the wrapper pane's place (`a`), linked to the kernel pane
STAGE_NAMES = {"sass": "SASS", "ptx": "PTX", "x86": "x86-64"}  # the stages below the kernel the ASM pane shows
PANE_TITLES = {SOURCE: "model source", POST_GRAD: "post-grad graph", KERNEL: "kernel", WRAPPER: "wrapper",
               ASM: "below the kernel"}


@dataclass
class PaneLinks:
    """What one pane should show: `path` (None: keep its file), linked lines, the line to bring into view."""

    path: str | None = None
    lines: list[int] = field(default_factory=list)
    focus_line: int | None = None


@dataclass
class LinkSet:
    origin: str  # the pane whose cursor asked
    panes: dict[str, PaneLinks]
    summary: str  # one line: graph, nodes, kernels, source lines

    @property
    def empty(self) -> bool:
        return not any(pane.lines for name, pane in self.panes.items() if name != self.origin)


def in_module(node: NodeRef, module: str | tuple[str, ...]) -> bool:
    """Whether the node belongs to module instance `module` (or one of its children), or to
    any of several instances (a folded group's members); "" or () keeps all."""
    if not module:
        return True
    node_module = getattr(node, "module", "") or ""
    return any(in_instance(node_module, m) for m in ((module,) if isinstance(module, str) else module))


def link_set(result: QueryResult, origin: str, shown: dict[str, str | None], module: str | tuple[str, ...] = "",
             label: str = "") -> LinkSet:
    """The linked lines of `result` per pane.

    `shown` maps each pane to the file it shows now: a graph already on screen
    is preferred over the first one the line reaches (forward vs backward), and
    a kernel already open over the first kernel of the chain.
    """
    chains = [_filtered(chain, module) for chain in result.graphs]
    chains = [chain for chain in chains if chain.pre_nodes or chain.post_nodes or chain.kernels]
    panes = {name: PaneLinks() for name in PANES}
    if not chains:
        where = f" in module {label or module}" if module else ""
        return LinkSet(origin, panes, f"line {result.line}: no links{where}")

    # Source lines do not depend on the graph: every chain's count.
    source_path = shown.get(SOURCE) if origin != SOURCE else None
    source_lines: dict[str, set[int]] = {}
    for chain in chains:
        for source in chain.sources:
            source_lines.setdefault(source.file, set()).add(source.line)
        for node in chain.post_nodes + chain.pre_nodes:
            if node.source is not None:
                source_lines.setdefault(node.source.file, set()).add(node.source.line)
    if origin != SOURCE and source_lines:
        if source_path not in source_lines:
            source_path = sorted(source_lines)[0]
        lines = sorted(source_lines[source_path])
        panes[SOURCE] = PaneLinks(source_path, lines, lines[0])

    chain = _pick_chain(chains, shown, origin, result)
    post_file = next((node.graph_file for node in chain.post_nodes if node.graph_file), None)
    if origin != POST_GRAD and post_file:
        lines = sorted({node.graph_line for node in chain.post_nodes
                        if node.graph_file == post_file and node.graph_line > 0})
        panes[POST_GRAD] = PaneLinks(post_file, lines, lines[0] if lines else None)

    kernel = _pick_kernel(chain.kernels, shown.get(KERNEL))
    if origin != KERNEL and kernel is not None:
        own = [line for line in kernel.lines if line.file == kernel.file]
        lines = sorted({line.line for line in own})
        # Bring a line that computes the node into view, not the index set-up every node shares.
        specific = sorted(line.line for line in own if not line.reason.startswith("shared"))
        panes[KERNEL] = PaneLinks(kernel.file, lines, (specific or lines or [1])[0])

    if origin != WRAPPER:
        wrapper_lines = chain.wrapper_lines + [call for ref in chain.kernels for call in ref.calls]
        files = [line.file for line in wrapper_lines if line.file]
        if files:
            wrapper_file = files[0]
            lines = sorted({line.line for line in wrapper_lines if line.file == wrapper_file})
            calls = sorted(call.line for call in (kernel.calls if kernel else []) if call.file == wrapper_file)
            panes[WRAPPER] = PaneLinks(wrapper_file, lines, calls[0] if calls else lines[0])

    kernel_names = [ref.name for ref in chain.kernels]
    modules = sorted({getattr(node, "module", "") for node in chain.post_nodes} - {""})
    summary = describe(chain.graph.compile_id, chain.graph.label or chain.graph.kind, len(chains),
                       [node.name for node in chain.post_nodes],
                       kernel_names, kernel.name if kernel else None, modules)
    return LinkSet(origin, panes, summary)


def source_link_set(answer: LineAnswer, shown: dict[str, str | None]) -> LinkSet:
    """The linked lines of a model line from its source-index answer (see link_set for
    which graph and kernel are shown)."""
    hits = [hit for hit in answer.graphs if hit.post_nodes or hit.kernels]
    panes = {name: PaneLinks() for name in PANES}
    if not hits:
        return LinkSet(SOURCE, panes, f"line {answer.line}: no links")
    current = shown.get(POST_GRAD)
    graph = next((hit for hit in hits if current and hit.graph.files.get("post_grad") == current), hits[0])
    post_file = graph.graph.files.get("post_grad")
    if post_file and graph.post_lines:
        panes[POST_GRAD] = PaneLinks(post_file, graph.post_lines, graph.post_lines[0])
    with_file = [hit for hit in graph.kernels if hit.kernel.file]
    kernel = next((hit for hit in with_file if hit.kernel.file == shown.get(KERNEL)),
                  with_file[0] if with_file else None)
    if kernel is not None:
        focus = kernel.first_own or (kernel.lines[0] if kernel.lines else 1)
        panes[KERNEL] = PaneLinks(kernel.kernel.file, kernel.lines, focus)
    wrapper_file = graph.graph.files.get("wrapper")
    wrapper_lines = sorted({*graph.wrapper_lines, *(call for hit in graph.kernels for call in hit.calls)})
    if wrapper_file and wrapper_lines:
        calls = kernel.calls if kernel is not None else []
        panes[WRAPPER] = PaneLinks(wrapper_file, wrapper_lines, calls[0] if calls else wrapper_lines[0])
    kernel_names = [hit.kernel.name for hit in graph.kernels]
    summary = describe(graph.graph.compile_id, graph.graph.label or graph.graph.kind, len(hits), graph.post_names,
                       kernel_names,
                       kernel.kernel.name if kernel else None, sorted(graph.modules))
    return LinkSet(SOURCE, panes, summary)


def asm_link_set(answer, shown: dict[str, str | None], module: tuple[str, ...], label: str) -> LinkSet:
    """The linked lines of a PTX/SASS line: its kernel line(s) in the kernel pane, and the chain
    of the first of them in the others."""
    stage = STAGE_NAMES.get(answer.file.stage, answer.file.stage.upper())
    if not answer.chains:
        return LinkSet(ASM, {name: PaneLinks() for name in PANES},
                       f"{stage} :{answer.line} {answer.text[:60]} · no kernel line: a declaration, label or directive")
    links = link_set(answer.chains[0], ASM, shown, module, label)
    kernel_lines = answer.kernel_lines
    links.panes[KERNEL] = PaneLinks(answer.file.kernel_file, kernel_lines, kernel_lines[0])
    lines = ", ".join(map(str, kernel_lines))
    links.summary = f"{stage} :{answer.line} {answer.text[:60]} · kernel line {lines} · {links.summary}"
    return links


def add_kernel_launches(links: LinkSet, wrapper_path: str, launch_lines: list[int]) -> None:
    """From a kernel line, the wrapper pane shows the kernel's own graph with its launch lines
    (the store's answer for a kernel line stops at its nodes and source lines)."""
    if links.origin == KERNEL and not links.panes[WRAPPER].lines:
        lines = sorted(launch_lines)
        links.panes[WRAPPER] = PaneLinks(wrapper_path, lines, lines[0] if lines else None)


def launch_lines(text: str) -> dict[str, list[int]]:
    """The wrapper's launch lines per kernel (`name.run(...)`), for when the run's facts are not loaded."""
    launches: dict[str, list[int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if ".run(" in line:
            name = line.strip().split(".run(", 1)[0]
            if name.isidentifier():
                launches.setdefault(name, []).append(number)
    return launches


def describe(compile_id: str, kind: str, graph_count: int, post_names: list[str], kernel_names: list[str],
             chosen_kernel: str | None, modules: list[str]) -> str:
    """`[0/0] forward · post-grad erf, mul (+3) · kernel triton_… (+1) · module blocks.0.mlp`
    (the kernel shown in the kernel pane first); `kind` is a subgraph's label for a subgraph."""
    parts = [f"[{compile_id}] {kind}"]
    if graph_count > 1:
        parts[0] += f" (1 of {graph_count} graphs)"
    if post_names:
        parts.append("post-grad " + _some(post_names))
    if chosen_kernel is not None:
        kernel_names = [chosen_kernel] + [name for name in kernel_names if name != chosen_kernel]
    if kernel_names:
        parts.append(("kernel " if len(kernel_names) == 1 else "kernels ") + _some(kernel_names, 2))
    if modules:
        parts.append("module " + _some(modules, 2))
    return " · ".join(parts)


def _some(names: list[str], shown: int = 3) -> str:
    names = list(dict.fromkeys(names))
    more = f" (+{len(names) - shown})" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _pick_chain(chains: list[GraphChain], shown: dict[str, str | None], origin: str,
                result: QueryResult) -> GraphChain:
    if result.location.graph is not None:  # a generated file belongs to one graph
        for chain in chains:
            if chain.graph.id == result.location.graph.id:
                return chain
    current = shown.get(POST_GRAD) if origin != POST_GRAD else None
    for chain in chains:
        if current and any(node.graph_file == current for node in chain.post_nodes):
            return chain
    return chains[0]


def _pick_kernel(kernels: list[KernelRef], current: str | None) -> KernelRef | None:
    with_file = [kernel for kernel in kernels if kernel.file]
    for kernel in with_file:
        if kernel.file == current:
            return kernel
    return with_file[0] if with_file else None


def _filtered(chain: GraphChain, module: str | tuple[str, ...]) -> GraphChain:
    if not module:
        return chain
    post = [node for node in chain.post_nodes if in_module(node, module)]
    pre = [node for node in chain.pre_nodes if in_module(node, module)]
    kept = {node.name for node in post}
    kernels = []
    for kernel in chain.kernels:
        if not kept.intersection(kernel.nodes):
            continue
        kernels.append(KernelRef(
            name=kernel.name, kind=kernel.kind, file=kernel.file,
            nodes=[name for name in kernel.nodes if name in kept], reason=kernel.reason,
            lines=[line for line in kernel.lines if kept.intersection(line.nodes)], calls=kernel.calls,
        ))
    sources = [source for source in chain.sources if kept.intersection(source.nodes) or
               any(node.source and (node.source.file, node.source.line) == (source.file, source.line) for node in pre)]
    return GraphChain(graph=chain.graph, pre_nodes=pre, post_nodes=post, sources=sources, kernels=kernels,
                      wrapper_lines=[line for line in chain.wrapper_lines if kept.intersection(line.nodes)])
