"""A run's numerics as text: `kernelscope numerics`, the numerics section of `show`, and the
one-line summaries the editor shows (docs/numerics.md)."""
from __future__ import annotations

from dataclasses import dataclass

from kernelscope.run_record import NumericsDivergence, NumericsOutput, NumericsReport
from kernelscope.store.parts.numerics import line_numerics


def error(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def where(divergence: NumericsDivergence) -> str:
    source = divergence.source
    return f"{source.file}:{source.line}" if source is not None else "(no model line)"


def divergence_text(divergence: NumericsDivergence) -> str:
    """One line: where compiled and eager first part ways."""
    return (f"{where(divergence)} node {divergence.node} ({divergence.target}) in kernel {divergence.kernel} "
            f"[{divergence.graph}]: max abs {error(divergence.max_abs)}, max rel {error(divergence.max_rel)}")


def judge_text(divergence_or_output) -> str:
    """Which side the float64 judge finds closer."""
    compiled, eager = divergence_or_output.compiled_vs_fp64, divergence_or_output.eager_vs_fp64
    if compiled is None or eager is None:
        return ""
    closer = "compiled" if compiled < eager else ("eager" if eager < compiled else "neither")
    return f"vs float64: compiled {error(compiled)}, eager {error(eager)} ({closer} is closer)"


def output_text(output: NumericsOutput) -> str:
    place = f"{output.source.file}:{output.source.line}" if output.source else "-"
    if output.max_abs is None:
        return f"#{output.launch} {output.kernel} {output.arg} -> {output.node or '?'}: not compared ({output.note})"
    mark = "OVER" if output.over else "ok"
    return (f"#{output.launch} {output.kernel} {output.arg} -> {output.node} {output.dtype} {place}: "
            f"max abs {error(output.max_abs)}, max rel {error(output.max_rel)} "
            f"({output.mismatched}/{output.elements} beyond rtol {output.rtol:g} atol {output.atol:g}) {mark}")


def report_lines(report: NumericsReport, kernels: bool = True) -> list[str]:
    compared = [output for output in report.outputs if output.max_abs is not None]
    over = [output for output in compared if output.over]
    tolerance = ("per dtype" if report.rtol is None and report.atol is None
                 else f"rtol {report.rtol if report.rtol is not None else 'per dtype'}, "
                      f"atol {report.atol if report.atol is not None else 'per dtype'}")
    out = [f"numerics ({report.target}, {tolerance}): {len(compared)} kernel output(s) compared with eager, "
           f"{len(over)} beyond tolerance"]
    first = report.first_divergence
    if first is None:
        out.append("  no divergence: every compared kernel output agrees with eager")
    else:
        out.append(f"  first divergence: {divergence_text(first)}")
        if first.source is not None and first.source.code:
            out.append(f"    {first.source.code}")
        out.append(f"    {first.cause}: {first.why}")
        judged = judge_text(first)
        if judged:
            out.append(f"    {judged}")
    lines = [line for line in line_numerics(report) if line.over][:10]
    if lines:
        out.append("  model lines beyond tolerance (worst first):")
        out += [f"    {line.file}:{line.line}  max abs {error(line.max_abs)}, max rel {error(line.max_rel)}"
                for line in lines]
    for fix in report.fixes:
        if fix.error:
            verdict = f"the recompile failed: {fix.error}"
        elif fix.gone:
            verdict = "the divergence is gone"
        else:
            remaining = fix.first_divergence
            verdict = ("still diverges" + (f", first at {divergence_text(remaining)}" if remaining else ""))
        out.append(f"  fix {fix.what}: {verdict}")
    if kernels:
        out.append("  kernel outputs in launch order:")
        out += [f"    {output_text(output)}" for output in report.outputs]
    out += [f"  note: {note}" for note in report.notes]
    return out


@dataclass
class LineNote:
    """What the editor says about one model line's numerics."""

    line: int
    first: bool  # where compiled and eager first part ways
    over: bool  # a kernel output of the line beyond tolerance
    message: str


def fixes_text(report: NumericsReport) -> str:
    said = []
    for fix in report.fixes:
        if not fix.error:
            said.append(f"{fix.what}: {'the divergence is gone' if fix.gone else 'still diverges'}")
    return "; ".join(said)


def file_notes(report: NumericsReport, file: str) -> list[LineNote]:
    """The numerics of a model file's lines (`file`: its stored key), by line."""
    notes: dict[int, LineNote] = {}
    first = report.first_divergence
    if first is not None and first.source is not None and first.source.file == file:
        message = (f"numerics: compiled and eager part ways here: node {first.node} ({first.target}) in kernel "
                   f"{first.kernel}, max abs {error(first.max_abs)}, max rel {error(first.max_rel)} "
                   f"({first.cause}: {first.why})")
        judged = judge_text(first)
        message += f"; {judged}" if judged else ""
        fixes = fixes_text(report)
        message += f"\nfixes tried: {fixes}" if fixes else ""
        notes[first.source.line] = LineNote(first.source.line, True, True, message)
    for line in line_numerics(report, file):
        state = "beyond" if line.over else "within"
        text = (f"numerics: {len(line.outputs)} kernel output(s) of this line {state} tolerance against eager: "
                f"max abs {error(line.max_abs)}, max rel {error(line.max_rel)}")
        if line.line in notes:
            notes[line.line].message += "\n" + text
        else:
            notes[line.line] = LineNote(line.line, False, line.over, text)
    return [notes[line] for line in sorted(notes)]
