"""`kernelscope/sourceForLine`: the model lines a generated line came from (kernel, wrapper,
graph, PTX or SASS line), where they are in the files now (the VS Code extension's "go to
the model line").

Answer: `{sources: [{uri, range, label}]}` with labels `mlp.py:21 h = gelu(h)`, each model
line once; lines edited since the run are left out. 0-based lines.
"""
from __future__ import annotations

import os

from lsprotocol import types

from kernelscope.lsp.editor import range_of, text_position
from kernelscope.lsp.lookup import ASM, asm_chains, model_location, query_at
from kernelscope.lsp.positions import LineMap

METHOD = "kernelscope/sourceForLine"


def setup(server) -> None:
    @server.guarded_feature(METHOD)
    def source_for_line_request(server, params) -> dict:
        return source_for_line(server, *text_position(params))


def source_for_line(server, uri: str, position: types.Position) -> dict:
    document, result = query_at(server, uri, position, "up")
    results = [result] if result is not None else []
    if document is not None and document.location.kind == ASM:
        results = asm_chains(server, document, position, "up")
    if not results:
        return {"sources": []}
    sources, seen = [], set()
    line_maps: dict[str, LineMap] = {}
    for chain in (chain for result in results for chain in result.graphs):
        for source in chain.sources:
            if (source.file, source.line) in seen:
                continue
            seen.add((source.file, source.line))
            loc = model_location(server, source.file, source.line, document.run_id, line_maps)
            if loc is None:
                continue
            code = f" {source.code.strip()}" if source.code else ""
            sources.append({"uri": loc["uri"], "range": range_of(loc),
                            "label": f"{os.path.basename(source.file)}:{source.line}{code}"})
    return {"sources": sources}
