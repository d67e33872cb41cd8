"""`kernelscope/kernelsForLine`: the kernels and extern calls the line at a position reached,
each with where its kernel file opens (the VS Code extension's "open the kernel beside").

Answer: `{kernels: [{name, kind, graph, uri, range}]}`: a model line's kernels open at the
first value they compute for it, a generated line's at the kernel's `def` line; extern
calls have no file (`uri` and `range` null). 0-based lines.
"""
from __future__ import annotations

from lsprotocol import types

from kernelscope.lsp.editor import location, range_of, text_position
from kernelscope.lsp.lookup import answer_at, first_kernel_line, kernel_def_line, query_at

METHOD = "kernelscope/kernelsForLine"


def setup(server) -> None:
    @server.guarded_feature(METHOD)
    def kernels_for_line_request(server, params) -> dict:
        return kernels_for_line(server, *text_position(params))


def kernels_for_line(server, uri: str, position: types.Position) -> dict:
    document, answer = answer_at(server, uri, position)
    if document is not None and document.is_source:
        if answer is None:
            return {"kernels": []}
        found = []
        for graph in answer.graphs:
            for hit in graph.kernels:
                loc = None
                if hit.kernel.kind != "extern" and hit.kernel.file:
                    loc = location(server.provenance, hit.kernel.file, first_kernel_line(server.provenance, hit))
                found.append({"name": hit.kernel.name, "kind": hit.kernel.kind, "graph": hit.kernel.graph_label,
                              "uri": loc["uri"] if loc else None, "range": range_of(loc)})
        return {"kernels": found}
    document, result = query_at(server, uri, position, "down")
    if result is None:
        return {"kernels": []}
    provenance = server.provenance
    kernels = []
    for chain in result.graphs:
        for kernel in chain.kernels:
            loc = None
            if kernel.kind != "extern" and kernel.file:
                loc = location(provenance, kernel.file, kernel_def_line(provenance, kernel.file))
            kernels.append({"name": kernel.name, "kind": kernel.kind,
                            "graph": chain.graph.title,
                            "uri": loc["uri"] if loc else None, "range": range_of(loc)})
    return {"kernels": kernels}
