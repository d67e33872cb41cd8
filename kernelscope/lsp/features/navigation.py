"""Go to definition (down the chain: the kernel or wrapper lines a model line became, a
user Triton kernel's line its generated copies; from a wrapper launch to the kernel) and
references (up the chain: from any generated line back to the model lines; from a model
line, every linked line)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.lsp.editor import checked_line, location, recorded_line
from kernelscope.lsp.lookup import (
    ASM,
    answer_at,
    asm_chains,
    first_kernel_line,
    kernel_def_line,
    model_location,
    query_at,
)

if TYPE_CHECKING:  # the store side loads after `initialize` (see server.py)
    from kernelscope.lsp.positions import LineMap
    from kernelscope.store import QueryResult


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(server, params: types.DefinitionParams) -> list[dict] | None:
        return definitions(server, params.text_document.uri, params.position) or None

    @server.guarded_feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(server, params: types.ReferenceParams) -> list[dict] | None:
        return reference_locations(server, params.text_document.uri, params.position) or None


def definitions(server, uri: str, position: types.Position) -> list[dict]:
    """Down the chain: a model line to its kernels (or extern calls, or post-grad nodes); a
    wrapper launch to its kernel, a wrapper line of a collective to the model line that
    needed it; a kernel line to its PTX and SASS lines once built (the model lines before);
    a PTX or SASS line to its kernel line(s)."""
    document, answer = answer_at(server, uri, position)
    provenance = server.provenance
    if document is not None and document.location.kind == ASM:
        return _unique(_asm_kernel_lines(server, document, position))
    if document is not None and document.is_source:
        copies = _user_kernel_copies(server, document, position)
        if copies:  # a line of a user Triton kernel: its generated copies
            return _unique([location(provenance, copy.kernel.file, row.line) for copy in copies for row in copy.lines])
        if answer is None:
            return []
        targets: list[dict | None] = []
        for graph in answer.graphs:
            for hit in graph.kernels:
                if hit.kernel.kind != "extern" and hit.kernel.file:
                    targets.append(location(provenance, hit.kernel.file, first_kernel_line(provenance, hit)))
                elif hit.calls and graph.graph.files.get("wrapper"):
                    targets.append(location(provenance, graph.graph.files["wrapper"], hit.calls[0]))
        if not any(targets):
            for graph in answer.graphs:
                if graph.graph.files.get("post_grad"):
                    targets += [location(provenance, graph.graph.files["post_grad"], line) for line in graph.post_lines]
        return _unique(targets)
    document, result = query_at(server, uri, position, "both")
    if result is None:
        return []
    targets = []
    view = provenance.run(document.run_id)
    if document.location.kind == "wrapper":
        for chain in result.graphs:
            for kernel in chain.kernels:
                if kernel.reason == "launched here" and kernel.file:
                    targets.append(location(provenance, kernel.file, kernel_def_line(provenance, kernel.file)))
        if not any(targets):
            targets += collective_model_lines(server, view.collectives_at(document.location, result.line),
                                              document.run_id)
    elif document.location.kind == "kernel":
        from kernelscope.lsp.below import SHOWN_STAGES, stage_ranges

        below = view.asm_below(document.location.path, [result.line], SHOWN_STAGES)
        targets += [{"uri": provenance.uri_for(path),
                     "range": {"start": {"line": first - 1, "character": 0}, "end": {"line": last, "character": 0}}}
                    for path, first, last in stage_ranges(below)]
    if not any(targets):
        targets += source_locations(server, result)
    return _unique(targets)


def _user_kernel_copies(server, document, position: types.Position) -> list:
    """The generated copies of the user Triton kernel line at `position` ([] elsewhere)."""
    line = recorded_line(document, position)
    if line is None:
        return []
    return server.provenance.run(document.run_id).user_kernel_copies(document.location, line)


def collective_model_lines(server, collectives, run_id: int) -> list[dict | None]:
    """The model lines whose ops needed these collectives, where they are in the files now."""
    found: list[dict | None] = []
    line_maps: dict[str, LineMap] = {}
    for collective in collectives:
        model = collective.model_line
        if model is None:
            continue
        found.append(model_location(server, model.file, model.line, run_id, line_maps))
    return found


def _asm_kernel_lines(server, document, position: types.Position) -> list[dict | None]:
    """The kernel line(s) a PTX or SASS line came from."""
    ref = server.provenance.run(document.run_id).asm_file(document.location)
    if ref is None:
        return []
    answer = server.provenance.run(document.run_id).asm_line(ref.path, checked_line(document, position))
    return [location(server.provenance, ref.kernel_file, line) for line in answer.kernel_lines]


def reference_locations(server, uri: str, position: types.Position) -> list[dict]:
    document, answer = answer_at(server, uri, position)
    if document is not None and document.is_source:
        return [] if answer is None else _unique(entry_locations(server, answer))
    if document is not None and document.location.kind == ASM:  # up: through the kernel line(s)
        chains = asm_chains(server, document, position, "up")
        return _unique([loc for chain in chains for loc in source_locations(server, chain)])
    document, result = query_at(server, uri, position, "up")
    if result is None:
        return []
    return _unique(source_locations(server, result))


def entry_locations(server, answer) -> list[dict | None]:
    """Where a model line went, one place per thing: each kernel at its first computed
    line, each launch or extern call in the wrapper (the post-grad nodes of a graph
    where nothing reached a kernel). Every linked line is in `kernelscope/linkedRanges`;
    a references list of thousands would help nobody."""
    provenance = server.provenance
    found: list[dict | None] = []
    for graph in answer.graphs:
        files = graph.graph.files
        if files.get("post_grad") and not graph.kernels:
            found += [location(provenance, files["post_grad"], number) for number in graph.post_lines]
        for hit in graph.kernels:
            if hit.kernel.file:
                found.append(location(provenance, hit.kernel.file, first_kernel_line(provenance, hit)))
            if files.get("wrapper"):
                found += [location(provenance, files["wrapper"], number) for number in hit.calls]
    return found


def source_locations(server, result: QueryResult) -> list[dict | None]:
    """The model lines of an answer, where they are in the files now."""
    found: list[dict | None] = []
    line_maps: dict[str, LineMap] = {}
    if result.location.kind == "kernel":  # a line of a user Triton kernel's copy: the user's line first
        found += [model_location(server, row.source_file, row.source_line, result.location.run_id, line_maps)
                  for copy in result.user_kernels for row in copy.lines]
    for chain in result.graphs:
        for source in chain.sources:
            found.append(model_location(server, source.file, source.line, result.location.run_id, line_maps))
    return found


def _unique(locations: list[dict | None]) -> list[dict]:
    seen, unique = set(), []
    for item in locations:
        if item is None:
            continue
        key = (item["uri"], item["range"]["start"]["line"])
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
