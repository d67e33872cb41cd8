"""What is at an editor position, as the store answers it, and the lines features point at.

Shared by the features that take a position (navigation, the custom requests) and those
that point at kernels (lenses, symbols): the document and its line's answer (a model
line's LineAnswer, a generated line's QueryResult, a PTX/SASS line's chains), a kernel's
`def` line, the first line a model line's kernel computes, and a model line where it is
in the file now. Imports nothing of the store side at import time (see server.py).
"""
from __future__ import annotations

from lsprotocol import types

from kernelscope.errors import StoreError, UserError
from kernelscope.lsp.editor import checked_line, location, recorded_line

ASM = "asm"  # kernelscope.store.results.ASM (the store side loads after `initialize`)


def query_at(server, uri: str, position: types.Position, direction: str):
    """(document, QueryResult) for the line at `position`; (document, None) without an answer."""
    document = server.document(uri)
    if document is None or document.location.kind == ASM:  # stage files: asm_chains
        return document, None
    line = recorded_line(document, position) if document.is_source else checked_line(document, position)
    if line is None:
        return document, None
    try:
        result = server.provenance.query(document, line, direction)
    except (StoreError, UserError):
        return document, None
    return document, result


def answer_at(server, uri: str, position: types.Position):
    """(document, LineAnswer) for a model source line; (document, None) without one."""
    document = server.document(uri)
    if document is None or not document.is_source:
        return document, None
    line = recorded_line(document, position)
    if line is None:
        return document, None
    return document, server.provenance.run(document.run_id).source_line(document.location, line)


def asm_chains(server, document, position: types.Position, direction: str) -> list:
    """The chains (QueryResult) of the kernel line(s) a PTX or SASS line came from."""
    return server.provenance.run(document.run_id).asm_line(document.location, checked_line(document, position),
                                                           direction).chains


def model_location(server, stored_file: str, line: int, run_id: int, line_maps: dict | None = None) -> dict | None:
    """Model line `line` of run `run_id` as a location where it is in the file now (the
    editor's text when open); None when it was edited away. `line_maps` caches each file's
    line map across the calls of one answer."""
    provenance = server.provenance
    line_map = line_maps.get(stored_file) if line_maps is not None else None
    if line_map is None:
        line_map = provenance.line_map(stored_file, run_id, server.text_of(provenance.uri_for(stored_file)))
        if line_maps is not None:
            line_maps[stored_file] = line_map
    return location(provenance, stored_file, line, line_map=line_map)


def first_kernel_line(provenance, hit) -> int:
    """The first kernel line that computes a value of the line's nodes: Inductor
    names every value it computes `tmpN`, so that line, not the index set-up linked to
    the same node (`r0_1 = r0_index`); else the first line of the nodes' own, else
    the first linked line, else the `def` line."""
    return hit.first_value or hit.first_own or (hit.lines[0] if hit.lines else
                                                kernel_def_line(provenance, hit.kernel.file))


def kernel_def_line(provenance, kernel_file: str) -> int:
    """The `def` line of a Triton kernel file (1 when there is none)."""
    from kernelscope.lsp.provenance import generated_lines

    for number, text in enumerate(generated_lines(str(provenance.absolute_path(kernel_file))), 1):
        if text.startswith("def "):
            return number
    return 1
