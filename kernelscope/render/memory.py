"""A run's memory as text: what `kernelscope memory` and `show`'s memory section print
(docs/memory.md). Plain data in (kernelscope.store.parts.memory's RunMemory), lines out."""
from __future__ import annotations

from kernelscope.render.text import format_bytes as size
from kernelscope.store.parts.memory import GraphMemoryInfo, LineMemory, RunMemory
from kernelscope.store.parts.memory_measured import MeasuredSummary
from kernelscope.store.parts.memory_step import StepPeak


def section_lines(memory: RunMemory | None, top: int = 10) -> list[str]:
    """The summary, one line per graph and the `top` model lines holding the most."""
    if memory is None:
        return ["  no memory recorded (a run recorded before kernelscope kept it, or an imported trace)"]
    out = [f"  peak {size(memory.peak_bytes)} in graph {memory.peak_graph} "
           f"(inputs included; planned by the wrapper, sizes at the example inputs)"]
    if memory.step is not None and memory.step.graph:
        out.append(f"  the step holds {size(memory.step.bytes)} at most above what its caller holds (parameters, "
                   f"inputs): in {memory.step.graph} at wrapper line {memory.step.line}")
    if memory.measured is not None:
        out += measured_lines(memory.measured, memory.step, top)
    if any(graph.kind == "forward" for graph in memory.graphs):
        inputs = sum(graph.saved_inputs_bytes for graph in memory.graphs)
        out.append(f"  saved for backward: {size(memory.saved_for_backward_bytes)} of activations"
                   + (f" (and {size(inputs)} of inputs the backward keeps)" if inputs else ""))
        if memory.eager is not None:
            difference = memory.saved_for_backward_bytes - memory.eager.saved_bytes
            out.append(f"  eager ({memory.eager.device}, saved-tensor hooks) saves {size(memory.eager.saved_bytes)}: "
                       f"compiled saves {_more_or_less(difference)}")
    for graph in memory.graphs:
        out.append("  " + graph_line(graph))
    lines = [entry for entry in memory.lines
             if entry.saved_for_backward_bytes or entry.live_at_peak_bytes or entry.more_than_eager]
    if lines:
        out.append(f"  model lines (saved for backward · live at the peak of {memory.peak_graph}):")
        out += ["    " + model_line(entry) for entry in lines[:top]]
        if len(lines) > top:
            out.append(f"    … {len(lines) - top} more (kernelscope memory RUN --all)")
    return out


def measured_lines(measured: MeasuredSummary, step: StepPeak | None, top: int = 10) -> list[str]:
    """`--memory`: the measured step beside the predicted one, and the wrapper lines joined."""
    predicted = step.bytes if step is not None else 0
    error = f" ({(predicted - measured.peak_bytes) / measured.peak_bytes:+.1%})" if measured.peak_bytes else ""
    before = (f"the {size(measured.before_bytes)} allocated before it" if measured.device == "cuda"
              else "what was allocated before it")  # the CPU allocator's events count from the step on
    out = [f"  measured on {measured.device} ({measured.method}): the step's peak {size(measured.peak_bytes)} above "
           f"{before}; predicted {size(predicted)}{error}"]
    if measured.device != "cuda" and not measured.joined:
        return out
    out.append(f"  {measured.joined} of {measured.allocations} allocations ({size(measured.joined_bytes)}) made on "
               f"wrapper lines of the run's graphs:")
    for line in sorted(measured.lines, key=lambda entry: -entry.bytes)[:top]:
        where = f"{line.file}:{line.line}" + (f" ({line.module})" if line.module else "") if line.file else ""
        guess = f"predicted {size(line.predicted_bytes)}" if line.predicted_bytes is not None else "predicted none"
        out.append(f"    {line.graph} line {line.wrapper_line:>5} {line.buffer:<8} measured {size(line.bytes)}"
                   f"{f' ({line.allocations} allocations)' if line.allocations > 1 else ''} · {guess}  {where}")
    return out


def graph_line(graph: GraphMemoryInfo) -> str:
    counts = {action: sum(1 for event in graph.timeline if event["action"] == action)
              for action in ("allocate", "reuse", "free")}
    part = graph.key.partition(f"-{graph.kind}")[2].lstrip("-")  # a subgraph's name, a split's part
    text = (f"[{graph.compile_id}] {graph.kind:<9}{f' {part}' if part else ''} peak {size(graph.peak_bytes)}"
            f"{f' at wrapper line {graph.peak_line}' if graph.peak_line else ''} · inputs {size(graph.inputs_bytes)}"
            f" · {counts['allocate']} allocations, {counts['reuse']} reuses, {counts['free']} frees")
    if graph.saved_bytes:
        text += f" · saves {size(graph.saved_bytes)} for backward"
    if graph.recomputed:
        text += f" · recomputes {len(graph.recomputed)} forward node(s)"
    return text


def model_line(entry: LineMemory) -> str:
    where = f"{entry.file}:{entry.line}" + (f" ({entry.module})" if entry.module else "")
    parts = []
    if entry.saved_for_backward_bytes:
        tensors = ", ".join(f"{b.node or b.name} {b.shape} {b.dtype.replace('torch.', '')}" for b in entry.saved[:3])
        more = f" +{len(entry.saved) - 3}" if len(entry.saved) > 3 else ""
        parts.append(f"saves {size(entry.saved_for_backward_bytes)} for backward [{tensors}{more}]")
    difference = entry.more_than_eager
    if difference:
        parts.append(f"compiled saves {_more_or_less(difference)} than eager ({size(entry.eager_saved_bytes or 0)})")
    if entry.live_at_peak_bytes:
        parts.append(f"{size(entry.live_at_peak_bytes)} live at peak")
    if entry.recomputed:
        parts.append(f"{entry.recomputed} node(s) recomputed in backward")
    return f"{where}  " + " · ".join(parts)


def _more_or_less(difference: int) -> str:
    return f"{size(difference)} more" if difference > 0 else (f"{size(-difference)} less" if difference else "the same")


def timeline_lines(graph: GraphMemoryInfo, measured: MeasuredSummary | None = None) -> list[str]:
    """Every allocation, reuse and free of one graph, with the bytes live after it (and, with
    `--memory`, the bytes the measured step allocated on each allocation's line)."""
    by_name = {buffer.name: buffer for buffer in graph.buffers}
    joined = {line.wrapper_line: line for line in measured.lines if line.graph == graph.key} if measured else {}
    held = sum(buffer.bytes for buffer in graph.buffers if buffer.kind == "input" and not buffer.freed_line)
    owned = graph.inputs_bytes - held
    out = [f"  {graph.key}: {graph.wrapper}  (inputs {size(graph.inputs_bytes)}"
           + (f"; {size(owned)} of them freed at their del)" if owned and graph.kind == "backward"
              else " live throughout)")]
    for event in graph.timeline:
        buffer = by_name.get(event["buffer"])
        where = f"{buffer.file}:{buffer.line}" if buffer is not None and buffer.file else ""
        mark = "  <- peak" if event["line"] == graph.peak_line else ""
        change = f"+{size(event['bytes'])}" if event["bytes"] > 0 else (
            f"-{size(-event['bytes'])}" if event["bytes"] < 0 else "reuse")
        seen = joined.get(event["line"]) if event["action"] == "allocate" else None
        seen_text = f"  measured {size(seen.bytes)}" if seen is not None else ""
        out.append(f"    line {event['line']:>5}  {event['action']:<8} {event['buffer']:<8} {change:>12}  "
                   f"live {size(event['live_bytes']):>10}{seen_text}  {where}{mark}")
    return out


def line_brief(entry: LineMemory) -> str:
    """A code lens: `saves 256.0 KiB for backward · 1.0 MiB live at peak` ('' when nothing to say)."""
    parts = []
    if entry.saved_for_backward_bytes:
        parts.append(f"saves {size(entry.saved_for_backward_bytes)} for backward")
    difference = entry.more_than_eager
    if difference:
        parts.append(f"{_more_or_less(difference)} than eager")
    if entry.live_at_peak_bytes:
        parts.append(f"{size(entry.live_at_peak_bytes)} live at peak")
    return " · ".join(parts)


def line_hover(entry: LineMemory, peak_graph: str) -> str:
    """A hover section (Markdown): what the line saves for the backward (each tensor, its
    shape and dtype, the backward kernels reading it), how that compares with eager, what
    is live at the peak, what the backward recomputes."""
    out = ["**memory**"]
    for buffer in entry.saved:
        readers = ", ".join(f"`{name}`" for name in buffer.read_by[:3]) or "—"
        more = f" +{len(buffer.read_by) - 3}" if len(buffer.read_by) > 3 else ""
        out.append(f"- saves `{buffer.node or buffer.name}` {buffer.shape} {buffer.dtype.replace('torch.', '')} "
                   f"({size(buffer.bytes)}) for backward, read by {readers}{more}")
    if entry.eager_saved_bytes is not None:
        out.append(f"- eager saves {size(entry.eager_saved_bytes)} here: compiled saves "
                   f"{_more_or_less(entry.more_than_eager or 0)}")
    if entry.live_at_peak_bytes:
        out.append(f"- {size(entry.live_at_peak_bytes)} live at the peak of graph {peak_graph}")
    if entry.recomputed:
        out.append(f"- the backward recomputes {entry.recomputed} of its node(s) instead of saving them")
    return "\n".join(out) if len(out) > 1 else ""
