"""Go to definition (down the chain: the kernel or wrapper lines a model line became;
from a wrapper launch to the kernel) and references (up the chain: from any
generated line back to the model lines; from a model line, every linked line)."""
from __future__ import annotations

from lsprotocol import types

from kernelscope.errors import StoreError, UserError
from kernelscope.lsp.editor import checked_line, location, recorded_line
from kernelscope.lsp.provenance import generated_lines
from kernelscope.store import QueryResult


def setup(server) -> None:
    @server.guarded_feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(server, params: types.DefinitionParams) -> list[types.Location] | None:
        return definitions(server, params.text_document.uri, params.position) or None

    @server.guarded_feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(server, params: types.ReferenceParams) -> list[types.Location] | None:
        return reference_locations(server, params.text_document.uri, params.position) or None


def query_at(server, uri: str, position: types.Position, direction: str):
    """(document, QueryResult) for the line at `position`; (document, None) without an answer."""
    document = server.document(uri)
    if document is None:
        return None, None
    line = recorded_line(document, position) if document.is_source else checked_line(document, position)
    if line is None:
        return document, None
    try:
        result = server.provenance.query(document, line, direction)
    except (StoreError, UserError):
        return document, None
    return document, result


def definitions(server, uri: str, position: types.Position) -> list[types.Location]:
    document, result = query_at(server, uri, position, "both")
    if result is None:
        return []
    provenance = server.provenance
    targets: list[types.Location | None] = []
    if document.is_source:
        for chain in result.graphs:
            for kernel in chain.kernels:
                if kernel.kind != "extern" and kernel.file:
                    targets.append(location(provenance, kernel.file, first_kernel_line(provenance, kernel)))
                elif kernel.calls:
                    targets.append(location(provenance, kernel.calls[0].file, kernel.calls[0].line))
        if not any(targets):
            for chain in result.graphs:
                for node in chain.post_nodes:
                    if node.graph_file:
                        targets.append(location(provenance, node.graph_file, node.graph_line))
    else:
        if document.location.kind == "wrapper":
            for chain in result.graphs:
                for kernel in chain.kernels:
                    if kernel.reason == "launched here" and kernel.file:
                        targets.append(location(provenance, kernel.file, kernel_def_line(provenance, kernel.file)))
        if not any(targets):
            targets += source_locations(server, result)
    return _unique(targets)


def reference_locations(server, uri: str, position: types.Position) -> list[types.Location]:
    document, result = query_at(server, uri, position, "both")
    if result is None:
        return []
    if not document.is_source:
        return _unique(source_locations(server, result))
    provenance = server.provenance
    found: list[types.Location | None] = []
    for chain in result.graphs:
        for node in chain.pre_nodes + chain.post_nodes:
            if node.graph_file:
                found.append(location(provenance, node.graph_file, node.graph_line))
        for kernel in chain.kernels:
            for line in kernel.lines:
                found.append(location(provenance, line.file, line.line))
            for call in kernel.calls:
                found.append(location(provenance, call.file, call.line))
        for line in chain.wrapper_lines:
            found.append(location(provenance, line.file, line.line))
    return _unique(found)


def source_locations(server, result: QueryResult) -> list[types.Location | None]:
    """The model lines of an answer, where they are in the files now."""
    found = []
    for chain in result.graphs:
        for source in chain.sources:
            uri = server.provenance.uri_for(source.file)
            line_map = server.provenance.line_map(source.file, result.location.run_id, server.text_of(uri))
            found.append(location(server.provenance, source.file, source.line, line_map=line_map))
    return found


def first_kernel_line(provenance, kernel) -> int:
    """The first kernel line that computes a value of the answer's nodes: Inductor
    names every value it computes `tmpN`, so that line, not the index set-up linked to
    the same node (`r0_1 = r0_index`); else the first line of the nodes' own, else
    the first linked line, else the `def` line."""
    own = sorted((line.line, line.text.strip()) for line in kernel.lines if not line.reason.startswith("shared:"))
    values = [number for number, text in own if text.startswith("tmp")]
    if values or own:
        return (values or [number for number, _ in own])[0]
    linked = sorted(line.line for line in kernel.lines)
    return linked[0] if linked else kernel_def_line(provenance, kernel.file)


def kernel_def_line(provenance, kernel_file: str) -> int:
    """The `def` line of a Triton kernel file (1 when there is none)."""
    for number, text in enumerate(generated_lines(str(provenance.absolute_path(kernel_file))), 1):
        if text.startswith("def "):
            return number
    return 1


def _unique(locations: list[types.Location | None]) -> list[types.Location]:
    seen, unique = set(), []
    for item in locations:
        if item is None:
            continue
        key = (item.uri, item.range.start.line)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
