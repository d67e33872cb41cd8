"""Hover: what a model line became (down the chain), or where a generated line came from (up).

A model line: `render.source_hover` (per graph and module instance), then its sections
below the kernel (`below.source_line_text`), collectives (`render.collectives_text`), memory
(kernelscope.render.memory's `line_hover`) and GPU time (`render.device_time_suffix`). A kernel, wrapper or graph line:
`render.generated_hover`, below the kernel on kernel lines (`below.kernel_line_text`),
collectives. A user Triton kernel's line, in the user's file or in its generated copy:
`render.user_kernel_text` (the other side's lines, the autotune config). A compiled
optimizer step's foreach sub-kernels, at a kernel line or the `opt.step()` line:
`render.kernel_parts_text` (the parameters each updates). Both: what the
backward recomputes (`render.recompute_text`). A PTX or SASS
line: `below.stage_file_hover`. A new section: its text in
`render.py` (or `below.py`), appended in `hover_text`.
"""
from __future__ import annotations

from lsprotocol import types

from kernelscope.errors import UserError
from kernelscope.lsp.editor import checked_line, link, recorded_line


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_HOVER)
    def hover(server, params: types.HoverParams) -> types.Hover | None:
        text = hover_text(server, params.text_document.uri, params.position)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def hover_text(server, uri: str, position: types.Position) -> str | None:
    from kernelscope.lsp import below, render  # the store side: loaded after `initialize`
    from kernelscope.render.distributed import rank_label
    from kernelscope.store.results import ASM, KERNEL

    document = server.document(uri)
    if document is None:
        problem = server.provenance.problem
        return f"**kernelscope**: {problem}" if problem else None
    view = server.provenance.run(document.run_id)
    run = view.summary()
    rank = rank_label(view.rank())
    links = link(server.provenance)
    line: int | None  # None: a source line edited since the run (below)
    if document.location.kind == ASM:  # a PTX/SASS line: up through its kernel line(s)
        line = checked_line(document, position)
        answer = view.asm_line(document.location, line)
        return below.stage_file_hover(answer, render.run_label(run, document.run_id, rank), links)
    if not document.is_source:
        line = checked_line(document, position)
        try:
            result = server.provenance.query(document, line, "up")
        except UserError:
            return None  # past the end of the generated file's recorded lines
        collectives = view.collectives_at(document.location, line) if view.has_collectives() else []
        if not result.origins and result.empty and not collectives:
            return None
        hover = render.generated_hover(result, run, links, rank)
        if result.user_kernels:  # a line of a user Triton kernel's copy: the user's line, the config
            hover += "\n\n" + render.user_kernel_text(result.user_kernels, False, links)
        parts = view.kernel_parts_at(document.location, line)  # a foreach kernel's sub-kernel
        if parts:
            hover += "\n\n" + render.kernel_parts_text(parts, False, links)
        if document.location.kind == KERNEL and result.origins:
            below_text = below.kernel_line_text(view, document.location.path, line, links,
                                                server.options.trusted)
            hover += f"\n\n{below_text}" if below_text else ""
        if collectives:
            hover += "\n\n" + render.collectives_text(collectives, links)
        recomputes = view.recomputes_at(document.location, line)
        if recomputes:
            hover += "\n\n" + render.recompute_text(recomputes, links)
        return hover
    current = checked_line(document, position)
    line = recorded_line(document, position)
    if line is None:
        if not document.stale:
            return None
        return (f"**kernelscope** · {render.run_label(run, document.run_id, rank)}\n\n⚠ **stale**: this line changed "
                f"since run {document.run_id} was recorded, so it has no recorded provenance. "
                "Compile again (kernelscope.compile) to see what it becomes.")
    answer = view.source_line(document.location, line)
    collectives = view.file_collectives(document.location).get(line, [])
    copies = view.user_kernel_copies(document.location, line)  # a line of a user Triton kernel
    why = view.why_at(document.location, line)
    memory_text = _memory_section(view, document, line)
    if answer.empty and not collectives and not memory_text:
        if not copies and why.empty:
            return None
        parts = []
        if copies:
            parts.append(render.user_kernel_text(copies, True, links))
        if not why.empty:
            parts.append(why_markdown(why))
        return f"**kernelscope** · {render.run_label(run, document.run_id, rank)}\n\n" + "\n\n".join(parts)
    summary = view.line_summaries(document.location).get(line)
    stale = render.StaleNote(document.location.path, document.run_id, line, current) if document.stale else None
    text = document.lines[current - 1] if current <= len(document.lines) else ""
    overviews = view.file_overviews(document.location).get(line, [])
    open_one = f"kernelscope query {document.location.path}:{line} --module"
    hover = render.source_hover(answer, text, summary, run, links, stale, overviews, open_one, rank)
    below_text = below.source_line_text(view, answer, links, server.options.trusted)
    if below_text:
        hover += f"\n\n{below_text}"
    if collectives:
        hover += "\n\n" + render.collectives_text(collectives, links)
    if copies:
        hover += "\n\n" + render.user_kernel_text(copies, True, links)
    parts = view.kernel_parts_at(document.location, line)  # the optimizer sub-kernels of `opt.step()`
    if parts:
        hover += "\n\n" + render.kernel_parts_text(parts, True, links)
    if not why.empty:
        hover += "\n\n" + why_markdown(why)
    recomputes = view.recomputes_at(document.location, line)
    if recomputes:
        hover += "\n\n" + render.recompute_text(recomputes, links)
    if memory_text:
        hover += "\n\n" + memory_text
    device_time = render.device_time_suffix(view.file_line_times(document.location.path), line)
    if device_time:
        hover += (f"\n\n**GPU time**{device_time.replace(' · ', ': ', 1)} "
                  "(profiled; shared = the kernels also serve other lines)")
    numerics = _numerics_text(view, document.location.path, line)
    if numerics:
        hover += f"\n\n{numerics}"
    return hover


def why_markdown(why) -> str:
    """The hover's "why" sections: guards this line installed, recompiles it caused, fusions
    refused for its ops (docs/why.md)."""
    from kernelscope.render.why import dynamo_guard_summary, guard_text, not_fused_text, recompile_text
    from kernelscope.store.parts.why import SHAPE_KINDS

    parts = []
    shape = [guard for guard in why.guards if guard.kind in SHAPE_KINDS]
    others = [guard for guard in why.guards if guard.kind not in SHAPE_KINDS]
    if why.guards:
        lines = [f"- `{guard_text(guard)}`" for guard in shape]
        if others:
            lines.append(f"- Dynamo's guards on this line's values: {dynamo_guard_summary(others)}")
        parts.append("**guards**\n" + "\n".join(lines))
    if why.recompiles:
        parts.append("**recompiles**\n" + "\n".join(
            f"- {recompile_text(recompile)}" + (f"\n  - advice: {recompile.advice}" if recompile.advice else "")
            for recompile in why.recompiles))
    if why.not_fused:
        parts.append("**not fused**\n" + "\n".join(f"- {not_fused_text(refusal)}" for refusal in why.not_fused))
    return "\n\n".join(parts)


def _memory_section(view, document, line: int) -> str:
    """What the line saves for the backward and holds at the peak ('' when nothing)."""
    from kernelscope.render.memory import line_hover

    memory = view.memory()
    entry = view.file_memory(document.location).get(line) if memory is not None else None
    return line_hover(entry, memory.peak_graph) if entry is not None else ""


def _numerics_text(view, key: str, line: int) -> str:
    """The line's numerics against eager (`kernelscope numerics`), or ''."""
    from kernelscope.render.numerics import file_notes

    report = view.numerics()
    if report is None:
        return ""
    notes = [note for note in file_notes(report, key) if note.line == line]
    return "**numerics** " + notes[0].message.replace("numerics: ", "", 1).replace("\n", "\n\n") if notes else ""
