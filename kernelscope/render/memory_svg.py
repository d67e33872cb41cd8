"""The memory picture: each graph's bytes live over its allocation timeline, as an SVG
(`<svg class="memory">`, styled by class only) that Jupyter shows (`Run.memory_svg`, a run's
HTML) and the VS Code run overview draws. One row per graph, all on one byte scale; a step
line of the bytes live after each allocation, reuse and free; the peak marked and labelled.
With `uri` (stored path -> editor URI) the peak marker carries data-uri/data-line of its
wrapper line, which the overview turns into a click that opens it."""
from __future__ import annotations

from collections.abc import Callable
from html import escape

from kernelscope.render.text import format_bytes
from kernelscope.store.parts.memory import GraphMemoryInfo, RunMemory

WIDTH = 760
ROW = 96  # height of one graph's row
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 150, 740, 18, 80


def svg(memory: RunMemory | None, uri: Callable[[str], str | None] | None = None) -> str:
    if memory is None or not memory.graphs:
        return '<p class="empty">This run recorded no memory.</p>'
    scale = max(graph.peak_bytes for graph in memory.graphs) or 1
    rows = [_row(graph, index * ROW, scale, uri) for index, graph in enumerate(memory.graphs)]
    height = ROW * len(memory.graphs)
    return (f'<svg class="memory" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}">{"".join(rows)}</svg>')


def _row(graph: GraphMemoryInfo, top: int, scale: int, uri) -> str:
    def y(live: int) -> float:
        return round(top + PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * live / scale, 1)

    steps = len(graph.timeline) or 1

    def x(index: int) -> float:
        return round(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * index / steps, 1)

    points = [(x(0), y(graph.inputs_bytes))]
    peak_at = None
    for index, event in enumerate(graph.timeline, 1):
        points += [(x(index), points[-1][1]), (x(index), y(event["live_bytes"]))]
        if peak_at is None and event["line"] == graph.peak_line and event["live_bytes"] == graph.peak_bytes:
            peak_at = (x(index), y(event["live_bytes"]))
    label = (f'<text class="mgraph" x="4" y="{top + 34}">{escape(graph.kind)} [{escape(graph.compile_id)}]</text>'
             f'<text class="mtag" x="4" y="{top + 50}">inputs {format_bytes(graph.inputs_bytes)}</text>'
             f'<text class="mtag" x="4" y="{top + 64}">{len(graph.timeline)} steps</text>')
    axis = (f'<line class="maxis" x1="{PLOT_LEFT}" y1="{top + PLOT_BOTTOM}" x2="{PLOT_RIGHT}" '
            f'y2="{top + PLOT_BOTTOM}"/>'
            f'<line class="minputs" x1="{PLOT_LEFT}" y1="{y(graph.inputs_bytes)}" x2="{PLOT_RIGHT}" '
            f'y2="{y(graph.inputs_bytes)}"/>')
    line = f'<polyline class="mline" points="{" ".join(f"{px},{py}" for px, py in points)}"/>'
    peak = ""
    if peak_at is not None:
        target = uri(graph.wrapper) if uri is not None and graph.wrapper else None
        data = (f' data-uri="{escape(target)}" data-line="{graph.peak_line - 1}"' if target else "")
        text = f"peak {format_bytes(graph.peak_bytes)} · wrapper L{graph.peak_line}"
        anchor = "end" if peak_at[0] > (PLOT_LEFT + PLOT_RIGHT) / 2 else "start"
        peak = (f'<g class="mpeak{" clickable" if target else ""}"{data}>'
                f'<circle cx="{peak_at[0]}" cy="{peak_at[1]}" r="3.5"/>'
                f'<text x="{peak_at[0]}" y="{max(peak_at[1] - 6, top + 10)}" text-anchor="{anchor}">'
                f'{escape(text)}</text></g>')
    return f'<g class="mrow">{label}{axis}{line}{peak}</g>'
