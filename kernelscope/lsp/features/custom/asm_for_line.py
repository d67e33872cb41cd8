"""`kernelscope/asmForLine`: the Triton and C++ kernels of a model line, kernel line or stage file line,
each with its build below Triton (the VS Code extension's "show the SASS"). Nothing is
built here: `kernelscope.buildAsm` builds.

Answer: `{kernels: [{name, kernelUri, status: built | not built | failed, facts, error,
stages: {ptx: {uri, focus, ranges}, sass: {...}}} (a C++ kernel: {x86: {...}})], how}` where `ranges`
are the lines of this line in that stage file, `focus` the one to open it at, and `how`
says how to build what is not built (that building is off, in an untrusted workspace).
0-based lines.
"""
from __future__ import annotations

from lsprotocol import types

from kernelscope.lsp.editor import checked_line, location, range_of, text_position
from kernelscope.lsp.lookup import ASM, answer_at

METHOD = "kernelscope/asmForLine"


def setup(server) -> None:
    @server.guarded_feature(METHOD)
    def asm_for_line_request(server, params) -> dict:
        return asm_for_line(server, *text_position(params))


def asm_for_line(server, uri: str, position: types.Position) -> dict:
    from kernelscope.asm.text import cpu_facts_line, facts_line
    from kernelscope.lsp.below import BUILDABLE, SHOWN_STAGES, buildable, how_to_build, kernel_hits
    from kernelscope.store.parts.asm_builds import is_cpp_kernel

    document, answer = answer_at(server, uri, position)
    if document is None:
        return {"kernels": [], "how": ""}
    view = server.provenance.run(document.run_id)
    wanted: list[tuple[int, str, str, list[int]]] = []  # (kernel id, name, kernel file, kernel lines)
    line = checked_line(document, position)
    if document.is_source:
        if answer is not None:
            wanted = [(hit.kernel.id, hit.kernel.name, hit.kernel.file, hit.lines) for hit in kernel_hits(answer)]
    elif document.location.kind == "kernel":
        kernel = view.kernel_of_file(document.location.path)
        if kernel is not None and (kernel.kind in BUILDABLE or is_cpp_kernel(kernel.file)):
            wanted = [(kernel.id, kernel.name, kernel.file, [line])]
    elif document.location.kind == ASM:
        ref = view.asm_file(document.location)
        if ref is not None:
            lines = view.asm_line(document.location, line).kernel_lines
            wanted = [(ref.kernel_id, ref.kernel_name, ref.kernel_file, lines)]
    builds = view.asm_builds([kernel_id for kernel_id, *_ in wanted]) if wanted else {}
    kernels = []
    for kernel_id, name, kernel_file, kernel_lines in wanted:
        info = builds.get(kernel_id)
        entry = {"name": name, "kernelUri": server.provenance.uri_for(kernel_file), "status": "not built",
                 "facts": None, "error": None, "stages": {}}
        if info is not None and not info.built:
            entry.update(status="failed", error=info.error)
        elif info is not None:
            below = view.asm_below(kernel_file, kernel_lines, SHOWN_STAGES)
            entry.update(status="built", facts=facts_line(info.facts) if info.facts else cpu_facts_line(info.cpu))
            for stage in SHOWN_STAGES:
                stage_lines = below.stage_lines(stage)
                numbers = sorted({asm_line.line for asm_line in stage_lines})
                if info.files.get(stage):
                    # where to open it: the most notable instruction (MUFU.EX2 before FFMA), PTX's first line
                    focus = _focus(stage, stage_lines).line if numbers else 1
                    entry["stages"][stage] = {
                        "uri": server.provenance.uri_for(info.files[stage]), "focus": focus - 1,
                        "ranges": [range_of(location(server.provenance, info.files[stage], n)) for n in numbers]}
        kernels.append(entry)
    how = ""
    if any(entry["status"] == "not built" for entry in kernels) and buildable(view):
        how = how_to_build(document.location.path, line, server.options.trusted).replace("*", "")
    return {"kernels": kernels, "how": how}


def _focus(stage: str, stage_lines: list):
    """Where a stage file opens: SASS's most notable instruction (MUFU.EX2 before FFMA),
    x86-64's first widest-vector one, PTX's first line."""
    from kernelscope.asm.text import most_notable, most_vector

    if stage == "sass":
        return most_notable(stage_lines)
    return most_vector(stage_lines) if stage == "x86" else stage_lines[0]
