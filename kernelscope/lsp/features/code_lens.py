"""Code lenses: over model lines ("2 kernels fw · 1 bw · fused with L27"; on a line that
reaches alike module instances, "· 48 × Block: blocks.2–46 alike") and over kernel
definitions ("from model.py:27, 31", with the kernel's registers and spills once built
below Triton), over model lines that issue or need a collective ("⇄ all_gather_into_tensor
over 8 ranks (attention · PrepareModuleInput input S(1) -> R)") and on the first line of a
PTX or SASS file (its kernel and facts); a model line's lens ends with the memory it holds
("· saves 256.0 KiB for backward · 1.0 MiB live at peak"; docs/memory.md); over a user's
`@triton.jit` kernel and its launch line, its compiled copies and the autotune config the
run launched ("compiled copy in add_kernel (0/0 forward) · config BLOCK=256"). Labels only (no command): the hover and
go-to-definition on the same line give the details."""
from __future__ import annotations

from lsprotocol import types

from kernelscope.lsp.editor import line_range
from kernelscope.lsp.lookup import kernel_def_line


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(server, params: types.CodeLensParams) -> list[types.CodeLens]:
        return lenses(server, params.text_document.uri)


def lenses(server, uri: str) -> list[types.CodeLens]:
    from kernelscope.lsp import render  # the store side: loaded after `initialize`

    document = server.document(uri)
    if document is None:
        return []
    run = server.provenance.run(document.run_id)
    found = []
    if document.is_source:
        from kernelscope.render.memory import line_brief

        times = run.file_line_times(document.location.path)
        overviews = run.file_overviews(document.location)
        memory = run.file_memory(document.location)
        for line, summary in run.line_summaries(document.location).items():
            current = document.shown_line(line)
            if current is None:
                continue
            folded = render.fold_note(overviews.get(line, []))
            held = line_brief(memory[line]) if line in memory else ""
            title = (render.lens_title(summary) + (f" · {folded}" if folded else "")
                     + render.device_time_suffix(times, line) + (f" · {held}" if held else ""))
            if document.stale:
                title += f" (run {document.run_id}, stale)"
            found.append(types.CodeLens(range=line_range(current), command=types.Command(title=title, command="")))
        found += _collective_lenses(run, document)
        found += _user_kernel_lenses(run, document)
    elif document.location.kind == "kernel":
        kernel = run.kernel_of_file(document.location.path)
        if kernel is not None:
            from kernelscope.lsp.below import kernel_facts_suffix

            sources = run.kernel_sources(kernel.id)
            line = kernel_def_line(server.provenance, document.location.path)
            title = (f"{render.kernel_lens_title(sources)} · {kernel.graph_kind} [{kernel.compile_id}]"
                     + kernel_facts_suffix(run, kernel.id))
            found.append(types.CodeLens(range=line_range(line), command=types.Command(title=title, command="")))
    elif document.location.kind == "asm":
        from kernelscope.lsp.below import stage_file_lens

        title = stage_file_lens(run, document.location)
        if title:
            found.append(types.CodeLens(range=line_range(1), command=types.Command(title=title, command="")))
    return found


def _user_kernel_lenses(run, document) -> list[types.CodeLens]:
    """Over a user's `@triton.jit` kernel and the line that launches it: its generated copies
    and the autotune config the run launched (`compiled copy in add_kernel (0/0 forward) ·
    config BLOCK=256, num_warps=4`)."""
    from kernelscope.render.user_kernels import lens_title

    defined, called = run.user_kernel_lines(document.location)
    found = []
    for table, at_call in ((defined, False), (called, True)):
        for line, kernels in table.items():
            current = document.shown_line(line)
            if current is not None:
                found.append(types.CodeLens(range=line_range(current),
                                            command=types.Command(title=lens_title(kernels, at_call), command="")))
    return found


def _collective_lenses(run, document) -> list[types.CodeLens]:
    """`⇄ all_gather_into_tensor over 8 ranks (attention · PrepareModuleInput input S(1) -> R)`
    over each model line that issues, waits on or needed a collective."""
    from kernelscope.render.distributed import collectives_brief

    found = []
    for line, collectives in run.file_collectives(document.location).items():
        current = document.shown_line(line)
        if current is None:
            continue
        title = f"⇄ {collectives_brief(collectives)}"
        found.append(types.CodeLens(range=line_range(current), command=types.Command(title=title, command="")))
    return found

