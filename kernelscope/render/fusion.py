"""The fusion picture of a run: model source lines on the left, kernels on the right,
an edge where a line's nodes were fused into (or called) a kernel.

One implementation for every front end: the VS Code run overview receives the SVG
from the language server (`kernelscope/runOverview`), Jupyter shows it in a Run's
`_repr_html_`. The SVG has no inline style and no script — the webview's content
security policy allows only its stylesheet — so everything is styled by class
(`svg.fusion`, `.fnode.source`, `.fnode.kernel.kind-triton`, `.fedge`, ...). A node
whose file can be opened carries `data-uri` and `data-line` (0-based): the webview
posts a click on it to the editor, which opens that file at that line. `data-id` on
nodes and `data-source`/`data-kernel` on edges let a page light up a node's edges.
"""
from __future__ import annotations

import html
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.store.run_view import RunView

ROW = 30
NODE_HEIGHT = 22
SOURCE_WIDTH = 380
KERNEL_WIDTH = 400
GAP = 160
MARGIN = 12
HEADER = 26
# Label budgets in characters: 12px monospace is about 7.3px a character, 8px padding each side.
SOURCE_LABEL_CHARS = math.floor((SOURCE_WIDTH - 16) / 7.3)
KERNEL_LABEL_CHARS = math.floor((KERNEL_WIDTH - 16 - 24) / 7.3)  # room for the fw/bw tag
EMPTY = '<p class="empty">No fusion links in this run.</p>'


@dataclass(frozen=True)
class FusionSource:
    """A model source line with at least one kernel below it."""

    id: str
    file: str  # the stored key (workspace-relative or absolute)
    line: int  # 1-based
    code: str
    uri: str | None = None  # where a click opens it (None: not clickable)


@dataclass(frozen=True)
class FusionKernel:
    id: str
    name: str
    kind: str  # triton | template | extern
    graph: str  # graph key, `0_0_0-forward`
    uri: str | None = None


@dataclass(frozen=True)
class FusionEdge:
    source: str
    kernel: str


@dataclass
class Fusion:
    """What the picture shows, before layout."""

    sources: list[FusionSource] = field(default_factory=list)
    kernels: list[FusionKernel] = field(default_factory=list)
    edges: list[FusionEdge] = field(default_factory=list)


@dataclass(frozen=True)
class PlacedNode:
    id: str
    x: float
    y: float
    width: int
    height: int
    label: str
    tag: str  # fw / bw / inf for kernels
    title: str
    uri: str | None
    line: int  # 0-based (data-line)
    kind: str  # source, or the kernel's kind


@dataclass(frozen=True)
class PlacedEdge:
    source: str
    kernel: str
    path: str  # SVG path data


@dataclass
class FusionLayout:
    width: int
    height: int
    sources: list[PlacedNode]
    kernels: list[PlacedNode]
    edges: list[PlacedEdge]


def fusion_of_run(view: RunView, uri: Callable[[str], str | None] = lambda stored: None) -> Fusion:
    """The run's fusion: every kernel, every model line its nodes come from, an edge for
    each pair. `uri(stored path)` names where a click opens a file (None: not clickable)."""
    kernel_sources = view.all_kernel_sources()
    sources: dict[str, FusionSource] = {}
    kernels, edges = [], []
    for kernel_id, kernel in view.kernels().items():
        identifier = f"k{kernel_id}"
        kernels.append(FusionKernel(identifier, kernel.name, kernel.kind, kernel.graph_key,
                                    uri(kernel.file) if kernel.file else None))
        for file, line in kernel_sources.get(kernel_id, []):
            source_id = f"{file}:{line}"
            if source_id not in sources:
                sources[source_id] = FusionSource(source_id, file, line, view.source_code(file, line), uri(file))
            edges.append(FusionEdge(source_id, identifier))
    return Fusion(list(sources.values()), kernels, edges)


def layout(fusion: Fusion) -> FusionLayout:
    """Place the nodes: sources in file/line order, kernels ordered by the mean position of
    the lines fused into them (fewer crossings), both columns spread over the same height.
    Edges whose ends are not both in the picture are dropped."""
    sources = sorted(fusion.sources, key=lambda s: (s.uri or s.file, s.line, s.id))
    source_index = {source.id: index for index, source in enumerate(sources)}
    kernel_ids = {kernel.id for kernel in fusion.kernels}
    edges = [edge for edge in fusion.edges if edge.source in source_index and edge.kernel in kernel_ids]
    positions: dict[str, list[int]] = {}
    for edge in edges:
        positions.setdefault(edge.kernel, []).append(source_index[edge.source])
    barycenter = {kernel.id: (sum(positions[kernel.id]) / len(positions[kernel.id]) if kernel.id in positions
                              else math.inf) for kernel in fusion.kernels}
    kernels = sorted(fusion.kernels, key=lambda k: (barycenter[k.id], k.name))

    rows = max(len(sources), len(kernels), 1)
    column_height = rows * ROW
    height = HEADER + column_height + MARGIN
    width = MARGIN * 2 + SOURCE_WIDTH + GAP + KERNEL_WIDTH

    def row_y(index: int, count: int) -> float:
        return HEADER + (index + 0.5) * (column_height / count) - NODE_HEIGHT / 2

    placed_sources = []
    for index, source in enumerate(sources):
        text = f"{os.path.basename(source.file)}:{source.line}  {source.code.strip()}"
        placed_sources.append(PlacedNode(source.id, MARGIN, row_y(index, len(sources)), SOURCE_WIDTH, NODE_HEIGHT,
                                         shorten_end(text, SOURCE_LABEL_CHARS), "", text, source.uri,
                                         source.line - 1, "source"))
    kernel_x = MARGIN + SOURCE_WIDTH + GAP
    placed_kernels = [
        PlacedNode(kernel.id, kernel_x, row_y(index, len(kernels)), KERNEL_WIDTH, NODE_HEIGHT,
                   shorten(kernel.name, KERNEL_LABEL_CHARS), pass_of(kernel.graph),
                   f"{kernel.name} ({kernel.kind}{f', {kernel.graph}' if kernel.graph else ''})", kernel.uri, 0,
                   kernel.kind)
        for index, kernel in enumerate(kernels)
    ]
    source_by_id = {node.id: node for node in placed_sources}
    kernel_by_id = {node.id: node for node in placed_kernels}
    placed_edges = []
    for edge in edges:
        start, end = source_by_id[edge.source], kernel_by_id[edge.kernel]
        x1, y1 = start.x + start.width, _round(start.y + start.height / 2)
        x2, y2 = end.x, _round(end.y + end.height / 2)
        bend = GAP // 2
        path = (f"M{_num(x1)},{_num(y1)} C{_num(x1 + bend)},{_num(y1)} {_num(x2 - bend)},{_num(y2)} "
                f"{_num(x2)},{_num(y2)}")
        placed_edges.append(PlacedEdge(edge.source, edge.kernel, path))
    return FusionLayout(width, height, placed_sources, placed_kernels, placed_edges)


def svg(fusion: Fusion) -> str:
    """The whole picture as an `<svg>` element string (a `<p class="empty">` when the run
    has no fusion links)."""
    placed = layout(fusion)
    if not placed.sources and not placed.kernels:
        return EMPTY
    edges = "".join(f'<path class="fedge" data-source="{_escape(edge.source)}" data-kernel="{_escape(edge.kernel)}" '
                    f'd="{edge.path}"/>' for edge in placed.edges)
    kernel_x = placed.kernels[0].x if placed.kernels else placed.width / 2
    return (
        f'<svg class="fusion" xmlns="http://www.w3.org/2000/svg" width="{placed.width}" height="{placed.height}" '
        f'viewBox="0 0 {placed.width} {placed.height}" role="img" aria-label="Fusion of model lines into kernels">'
        f'<text class="colhead" x="{MARGIN}" y="16">model lines ({len(placed.sources)})</text>'
        f'<text class="colhead" x="{_num(kernel_x)}" y="16">kernels ({len(placed.kernels)})</text>'
        f'<g class="edges">{edges}</g>'
        f'<g class="sources">{"".join(_node_svg(node, "source") for node in placed.sources)}</g>'
        f'<g class="kernels">{"".join(_node_svg(node, "kernel") for node in placed.kernels)}</g>'
        "</svg>"
    )


def _node_svg(node: PlacedNode, side: str) -> str:
    clickable = node.uri is not None
    data = f' data-uri="{_escape(node.uri)}" data-line="{node.line}"' if clickable else ""
    classes = f"fnode {side} kind-{_escape(node.kind)}{' clickable' if clickable else ''}"
    text_y = _num(_round(node.y + node.height / 2 + 4))
    tag = (f'<text class="tag" x="{_num(node.x + node.width - 6)}" y="{text_y}" text-anchor="end">'
           f"{_escape(node.tag)}</text>" if node.tag else "")
    return (
        f'<g class="{classes}" data-id="{_escape(node.id)}"{data}>'
        f"<title>{_escape(node.title)}</title>"
        f'<rect x="{_num(node.x)}" y="{_num(_round(node.y))}" width="{node.width}" height="{node.height}" rx="4"/>'
        f'<text x="{_num(node.x + 8)}" y="{text_y}">{_escape(node.label)}</text>'
        f"{tag}</g>"
    )


def shorten_end(text: str, limit: int) -> str:
    """Shorten to `limit` characters with an ellipsis at the end (code reads from its start)."""
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def shorten(text: str, limit: int) -> str:
    """Shorten to `limit` characters with an ellipsis in the middle (kernel names differ at their end)."""
    if len(text) <= limit:
        return text
    head = math.ceil((limit - 1) * 0.6)
    tail = limit - 1 - head
    return f"{text[:head]}…{text[len(text) - tail:]}"


def pass_of(graph: str) -> str:
    """"fw", "bw" or "inf" from a graph key or label (`0_0_0-backward`, `0/0 forward`)."""
    for word, tag in (("backward", "bw"), ("forward", "fw"), ("inference", "inf")):
        if word in graph:
            return tag
    return ""


def _round(value: float) -> float:
    """To one decimal, halves up (as the picture has always been drawn)."""
    return math.floor(value * 10 + 0.5) / 10


def _num(value: float) -> str:
    """A coordinate as SVG text: `38`, `38.5`."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)
