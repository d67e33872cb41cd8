"""HTML for Jupyter (`_repr_html_` of the Python API's objects): a run's summary table
and fusion picture, the table of a store's runs, a query's answer as nested lists.

Styles live in one `<style>` block scoped to `.kernelscope` (Jupyter shows each
output inside the notebook page); colours come from JupyterLab's theme variables,
with fallbacks for classic Notebook and VS Code's notebooks."""
from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kernelscope.render.report import COVERAGE_LABELS, NO_RUNS, runs_rows
from kernelscope.render.text import format_share, format_time

if TYPE_CHECKING:
    from kernelscope.render.query_tree import Branch
    from kernelscope.store.results import RunDetails, RunSummary

STYLE = """<style>
.kernelscope { font-family: var(--jp-ui-font-family, sans-serif); color: var(--jp-ui-font-color1, inherit); }
.kernelscope h3 { margin: 4px 0 6px; font-size: 1.1em; }
.kernelscope h3 .target { font-weight: normal; color: var(--jp-ui-font-color2, #666); margin-left: 8px; }
.kernelscope table.ks-summary td, .kernelscope table.ks-summary th { text-align: left; padding: 1px 14px 1px 0; }
.kernelscope table.ks-summary th { color: var(--jp-ui-font-color2, #666); font-weight: 600; }
.kernelscope .ks-fusion { overflow-x: auto; margin-top: 8px; }
.kernelscope svg.fusion { font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
.kernelscope svg.fusion .colhead { fill: var(--jp-ui-font-color2, #666); font-weight: 600; }
.kernelscope svg.fusion .fnode rect { fill: var(--jp-layout-color1, #fff); stroke: #888; stroke-width: 1; }
.kernelscope svg.fusion .fnode.source rect { stroke: #4e9ad6; }
.kernelscope svg.fusion .fnode.kernel.kind-triton rect { stroke: #d78a2a; }
.kernelscope svg.fusion .fnode.kernel.kind-template rect { stroke: #b86bd6; }
.kernelscope svg.fusion .fnode.kernel.kind-extern rect { stroke-dasharray: 4 3; }
.kernelscope svg.fusion .fnode text { fill: var(--jp-content-font-color1, #222); }
.kernelscope svg.fusion .fnode text.tag { fill: var(--jp-ui-font-color2, #666); font-size: 10px; }
.kernelscope svg.fusion .fnode:hover rect { stroke-width: 2.5; }
.kernelscope svg.memory { font-family: var(--jp-code-font-family, monospace); font-size: 11px; }
.kernelscope svg.memory .mgraph { fill: var(--jp-content-font-color1, #222); font-weight: 600; }
.kernelscope svg.memory .mtag { fill: var(--jp-ui-font-color2, #666); font-size: 10px; }
.kernelscope svg.memory .maxis { stroke: #888; }
.kernelscope svg.memory .minputs { stroke: #888; stroke-dasharray: 3 3; }
.kernelscope svg.memory .mline { fill: none; stroke: #4e9ad6; stroke-width: 1.6; }
.kernelscope svg.memory .mpeak { fill: #d78a2a; }
.kernelscope svg.fusion .fedge { fill: none; stroke: #888; stroke-opacity: 0.55; stroke-width: 1.3; }
.kernelscope ul.ks-tree { list-style: none; padding-left: 16px; margin: 0; font-size: 12px;
  font-family: var(--jp-code-font-family, monospace); }
.kernelscope > ul.ks-tree { padding-left: 0; }
.kernelscope .ks-warning { color: #b5651d; }
.kernelscope .ks-bold { font-weight: 600; }
.kernelscope .ks-dim { opacity: 0.65; }
.kernelscope .ks-cyan { color: #0f8a9d; }
.kernelscope .ks-yellow { color: #9a6b00; }
.kernelscope .ks-green { color: #2e7d32; }
.kernelscope .ks-blue { color: #2962c9; }
.kernelscope .ks-magenta { color: #a3349b; }
.kernelscope .ks-red { color: #c62828; }
</style>"""


def run_html(details: RunDetails, fusion_svg: str, memory_svg: str = "") -> str:
    """A run: the summary table (target, device, versions, counts, coverage), the fusion picture
    and, when the run recorded memory, the memory picture."""
    summary = details.summary
    triton = sum(1 for kernel in details.kernels if kernel.kind != "extern")
    externs = len(details.kernels) - triton
    rows = [
        ("created", format_time(summary.created)),
        ("device · mode", f"{summary.device} · {summary.mode}{' · dynamic' if summary.dynamic else ''}"),
        ("torch · triton", f"{summary.torch_version} · {summary.triton_version}"),
        ("provenance", summary.provenance),
        ("graphs", ", ".join(f"{graph.compile_id} {graph.kind}" for graph in details.graphs) or "none"),
        ("kernels", f"{triton} Triton, {externs} extern calls"),
        ("graph breaks", str(len(details.graph_breaks))),
        ("recompiles", str(len(details.recompiles))),
    ]
    rows += [(label, format_share(summary.coverage[key])) for key, label in COVERAGE_LABELS.items()
             if key in summary.coverage]
    rows += [("warning", warning) for warning in details.warnings]
    table = "".join(f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>" for name, value in rows)
    return (
        f'{STYLE}<div class="kernelscope ks-run">'
        f'<h3>Run {summary.id} <span class="target">{_e(summary.target)}</span></h3>'
        f'<table class="ks-summary">{table}</table>'
        f'<div class="ks-fusion">{fusion_svg}</div>'
        + (f'<div class="ks-memory">{memory_svg}</div>' if memory_svg else "")
        + "</div>"
    )


def runs_html(runs: list[RunSummary], ranks: dict) -> str:
    """A store's runs, newest first: the table `kernelscope runs` prints."""
    if not runs:
        return f'<div class="kernelscope"><p>{_e(NO_RUNS)}</p></div>'
    header, rows = runs_rows(runs, ranks)
    head = "".join(f"<th>{_e(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return (f'{STYLE}<div class="kernelscope"><table class="ks-summary"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def tree_html(tree: Branch, warnings: Sequence[str] = ()) -> str:
    """A query's answer: the same tree `kernelscope query` prints, as nested lists."""
    notes = "".join(f'<p class="ks-warning">warning: {_e(warning)}</p>' for warning in warnings)
    return f'{STYLE}<div class="kernelscope ks-answer">{notes}<ul class="ks-tree">{_branch_html(tree)}</ul></div>'


def _branch_html(branch: Branch) -> str:
    classes = " ".join(f"ks-{word}" for word in branch.style.split())
    label = f'<span class="{classes}">{_e(branch.label)}</span>' if classes else _e(branch.label)
    children = "".join(_branch_html(child) for child in branch.children)
    return f"<li>{label}" + (f'<ul class="ks-tree">{children}</ul>' if children else "") + "</li>"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
