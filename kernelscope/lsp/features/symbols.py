"""Workspace symbols: the kernels and graphs of the shown run, by name."""
from __future__ import annotations

from lsprotocol import types

from kernelscope.lsp.editor import line_location, typed
from kernelscope.lsp.lookup import kernel_def_line

MAX_SYMBOLS = 500


def setup(server) -> None:
    @server.guarded_feature(types.WORKSPACE_SYMBOL)
    def workspace_symbol(server, params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
        return symbols(server, params.query)


def symbols(server, query: str) -> list[types.SymbolInformation]:
    from kernelscope.lsp import render  # the store side: loaded after `initialize`

    store = server.provenance.store()
    run_id = server.provenance.shown_run_id()
    if store is None or run_id is None:
        return []
    wanted = query.lower()
    provenance = server.provenance
    found = []
    run = server.provenance.run(run_id)
    details = run.details()
    for graph in details.graphs:
        name = f"graph [{graph.compile_id}] {graph.kind}" + (f" · {graph.label}" if graph.subgraph is not None else "")
        path = graph.files.get("post_grad") or graph.files.get("wrapper")
        if path and wanted in name.lower():
            found.append(types.SymbolInformation(
                name=name, kind=types.SymbolKind.Module, location=typed(line_location(provenance, path, 1)),
                container_name=f"run {run_id}"))
    for kernel in run.kernels().values():
        if len(found) >= MAX_SYMBOLS:
            break
        if not kernel.file or wanted not in kernel.name.lower():
            continue
        found.append(types.SymbolInformation(
            name=kernel.name, kind=types.SymbolKind.Function,
            location=typed(line_location(provenance, kernel.file, kernel_def_line(provenance, kernel.file))),
            container_name=render.kernel_detail(kernel)))
    return found
