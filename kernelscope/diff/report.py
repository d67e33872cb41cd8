"""Render a RunDiff and its gate results as text (terminal), JSON (tools) or Markdown
(a pull-request comment)."""
from __future__ import annotations

import json

from kernelscope.diff.compare import TOTALS, RunDiff
from kernelscope.diff.decisions import render_lines as render_decisions
from kernelscope.diff.device_time import render_lines as render_device_time
from kernelscope.diff.gates import GateResult
from kernelscope.diff.memory import render_lines as render_memory
from kernelscope.diff.resources import render_lines as render_resources
from kernelscope.diff.vectorization import render_lines as render_vectorization

FORMATS = ("text", "json", "md")
TOTAL_LABELS = {
    "graphs": "graphs", "kernels": "generated kernels", "extern_calls": "extern calls", "fallbacks": "ATen fallbacks",
    "kernel_lines": "kernel lines", "wrapper_lines": "wrapper lines", "graph_breaks": "graph breaks",
    "recompiles": "recompiles",
}
MARKS = {"appeared": "+", "vanished": "-", "changed": "~", "added": "+", "removed": "-", "new": "+",
         "fixed": "-", "gone": "-"}


def render(diff: RunDiff, gates: list[GateResult], exit_code: int, fmt: str) -> str:
    if fmt == "json":
        data = {**diff.to_dict(), "gates": [vars(result) for result in gates], "exit_code": exit_code}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    if fmt == "md":
        return _markdown(diff, gates)
    return _text(diff, gates)


def _ops(removed: dict[str, int], added: dict[str, int]) -> str:
    def fmt(sign, ops):
        return [f"{sign}{op}" + (f" x{count}" if count > 1 else "") for op, count in ops.items()]
    return ", ".join(fmt("-", removed) + fmt("+", added))


def _kernel_line(change) -> str:
    if change.status == "appeared":
        text = f"{change.after} in {change.graph_after}"
    elif change.status == "vanished":
        text = f"{change.before} in {change.graph_before}"
    else:
        names = change.after if change.before == change.after else f"{change.before} -> {change.after}"
        graph = change.graph_after if change.graph_before == change.graph_after else \
            f"{change.graph_before} -> {change.graph_after}"
        text = f"{names} in {graph} ({', '.join(change.changes)})"
    return text


def _kernel_details(change) -> list[str]:
    details = []
    ops = _ops(change.ops_removed, change.ops_added)
    if ops and change.status == "changed":
        details.append(f"ops: {ops}")
    if change.lines_before != change.lines_after:
        details.append(f"kernel file lines: {change.lines_before} -> {change.lines_after}"
                       if change.status == "changed"
                       else f"kernel file lines: {change.lines_before or change.lines_after}")
    if change.source_lines:
        details.append(f"source lines: {', '.join(change.source_lines)}")
    return details


def _line_details(line) -> list[str]:
    details = [f"appeared: {name}" for name in line.appeared]
    details += [f"vanished: {name}" for name in line.vanished]
    details += [f"changed fusion: {name}" for name in line.changed]
    details += [f"moved: {name}" for name in line.moved]
    ops = _ops(line.ops_removed, line.ops_added)
    if ops:
        details.append(f"ops: {ops}")
    if line.kernel_lines_before != line.kernel_lines_after:
        details.append(f"kernel lines computing it: {line.kernel_lines_before} -> {line.kernel_lines_after}")
    return details


def _code(line) -> str:
    if line.code_before and line.code_after and line.code_before != line.code_after:
        return f"{line.code_before}  ->  {line.code_after}"
    return line.code_after or line.code_before


def _gate_lines(gates: list[GateResult]) -> list[str]:
    out = []
    for result in gates:
        if result.tripped:
            out.append(f"{result.gate}: TRIPPED")
            out += [f"  {reason}" for reason in result.reasons]
        else:
            out.append(f"{result.gate}: ok")
    return out


def _text(diff: RunDiff, gates: list[GateResult]) -> str:
    out = [f"kernelscope diff: {diff.before.label} -> {diff.after.label} ({diff.after.target}, "
           f"{diff.after.device}, {diff.after.mode})"]
    out += [f"note: {note}" for note in diff.notes]
    if diff.is_empty:
        out.append(f"no differences ({diff.unchanged_kernels} kernel(s) unchanged)")
    else:
        totals = [f"{TOTAL_LABELS[name]} {c.before} -> {c.after}" for name in TOTALS
                  if (c := diff.totals[name]).delta]
        if totals:
            out.append("totals: " + " · ".join(totals))
        if diff.graphs:
            out.append("graphs:")
            for graph in diff.graphs:
                before, after = graph.before or {}, graph.after or {}  # None on the side without the graph
                numbers = after if graph.status == "added" else before if graph.status == "removed" else \
                    {key: f"{before[key]} -> {after[key]}" for key in before if before[key] != after[key]}
                detail = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in numbers.items())
                out.append(f"  {MARKS[graph.status]} {graph.graph} {graph.status}: {detail}")
        if diff.kernels:
            out.append(f"kernels ({diff.unchanged_kernels} unchanged):")
            for change in diff.kernels:
                out.append(f"  {MARKS[change.status]} {change.status} {_kernel_line(change)}")
                out += [f"      {detail}" for detail in _kernel_details(change)]
        if diff.source_lines:
            out.append("source lines:")
            for line in diff.source_lines:
                out.append(f"  {line.where}  {_code(line)}".rstrip())
                out += [f"      {detail}" for detail in _line_details(line)]
        if diff.graph_breaks:
            out.append("graph breaks:")
            out += [f"  {MARKS[brk.status]} {brk.status} at {brk.file}:{brk.line} [{brk.compile_id}]: {brk.reason}"
                    for brk in diff.graph_breaks]
        if diff.recompiles:
            out.append("recompiles:")
            out += [f"  {MARKS[rec['status']]} {rec['status']}: {rec['reason']}" for rec in diff.recompiles]
        for title, changes in (("guard failures (recompile causes):", diff.guard_failures),
                               ("shape guards:", diff.guards)):
            if changes:
                out.append(title)
                out += [f"  {MARKS[c['status']]} {c['status']} at {c['file']}:{c['line']}: {c['what']} ({c['detail']})"
                        for c in changes]
        if diff.numerics:
            out.append("numerics (model lines beyond tolerance against eager):")
            out += [f"  {MARKS[change['status']]} {change['status']}: {change['file']}:{change['line']} "
                    f"max rel {change['max_rel']}" for change in diff.numerics]
        if diff.fallbacks:
            out.append("ATen fallbacks:")
            out += [f"  {fb.op}: {fb.before} -> {fb.after} call(s)"
                    + (f" at {', '.join(fb.source_lines)}" if fb.source_lines else "") for fb in diff.fallbacks]
        if diff.coverage:
            out.append("coverage:")
            out += [f"  {cov.key}: {_share(cov.before)} -> {_share(cov.after)}" for cov in diff.coverage]
    out += render_device_time(diff.device_time)
    out += render_memory(diff.memory)
    out += render_resources(diff.resources)
    out += render_vectorization(diff.vectorization)
    out += render_decisions(diff.decisions)
    if gates:
        out.append("gates:")
        out += [f"  {line}" for line in _gate_lines(gates)]
    return "\n".join(out) + "\n"


def _share(ratio: dict) -> str:
    if ratio["share"] is None:
        return "n/a"
    return f"{ratio['share'] * 100:.1f}% ({ratio['covered']}/{ratio['total']})"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _markdown(diff: RunDiff, gates: list[GateResult]) -> str:
    tripped = [result for result in gates if result.tripped]
    status = (f"❌ {len(tripped)} gate(s) tripped: {', '.join(r.gate for r in tripped)}" if tripped
              else "✅ no gate tripped" if gates else "")
    out = [f"### kernelscope diff: `{diff.before.label}` → `{diff.after.label}`", ""]
    out.append(f"`{diff.after.target}` · {diff.after.device} · {diff.after.mode} · torch {diff.after.torch_version}"
               + (f" · {status}" if status else ""))
    out += [f"> note: {note}" for note in diff.notes]
    out.append("")
    if diff.is_empty:
        out.append(f"No differences ({diff.unchanged_kernels} kernels unchanged).")
    else:
        out += ["| | before | after | Δ |", "|---|---:|---:|---:|"]
        for name in TOTALS:
            count = diff.totals[name]
            delta = f"{count.delta:+d}" if count.delta else ""
            out.append(f"| {TOTAL_LABELS[name]} | {count.before} | {count.after} | {delta} |")
        out.append("")
        if diff.source_lines:
            out += ["#### Per source line", "", "| line | code | change |", "|---|---|---|"]
            for line in diff.source_lines:
                out.append(f"| `{_cell(line.where)}` | `{_cell(_code(line))}` | "
                           f"{_cell('<br>'.join(_line_details(line)))} |")
            out.append("")
        if diff.kernels:
            out += [f"#### Kernels ({diff.unchanged_kernels} unchanged)", "", "| | kernel | details |", "|---|---|---|"]
            for change in diff.kernels:
                out.append(f"| {change.status} | `{_cell(_kernel_line(change))}` | "
                           f"{_cell('<br>'.join(_kernel_details(change)))} |")
            out.append("")
        other = []
        other += [f"- graph {graph.status}: `{graph.graph}`" for graph in diff.graphs if graph.status != "changed"]
        other += [f"- {brk.status} graph break at `{brk.file}:{brk.line}`: {brk.reason}" for brk in diff.graph_breaks]
        other += [f"- {rec['status']} recompile: {rec['reason']}" for rec in diff.recompiles]
        other += [f"- {c['status']} guard failure at `{c['file']}:{c['line']}`: {c['what']}"
                  for c in diff.guard_failures]
        other += [f"- {c['status']} shape guard at `{c['file']}:{c['line']}`: {c['what']}" for c in diff.guards]
        other += [f"- ATen fallback `{fb.op}`: {fb.before} → {fb.after} call(s)" for fb in diff.fallbacks]
        other += [f"- coverage {cov.key}: {_share(cov.before)} → {_share(cov.after)}" for cov in diff.coverage]
        if other:
            out += ["#### Graphs, breaks, recompiles, fallbacks, coverage", "", *other, ""]
    device_lines = render_device_time(diff.device_time)
    if device_lines:
        out += ["#### Device time", "", "```", *device_lines, "```", ""]
    memory_lines = render_memory(diff.memory)
    if memory_lines:
        out += ["#### Memory", "", "```", *memory_lines, "```", ""]
    resource_lines = render_resources(diff.resources)
    if resource_lines:
        out += ["#### Registers and spills", "", "```", *resource_lines, "```", ""]
    vector_lines = render_vectorization(diff.vectorization)
    if vector_lines:
        out += ["#### C++ kernels and their vectorization", "", "```", *vector_lines, "```", ""]
    decision_lines = render_decisions(diff.decisions)
    if decision_lines:
        out += ["#### Timing decisions", "", "```", *decision_lines, "```", ""]
    if gates:
        out += ["#### Gates", ""]
        for result in gates:
            mark = "❌" if result.tripped else "✅"
            out.append(f"- {mark} `{result.gate}`" + (": " + "; ".join(result.reasons) if result.reasons else ""))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
