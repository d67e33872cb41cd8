"""Custom requests of the VS Code extension (see the LSP contract):
kernelscope/linkedRanges, kernelscope/kernelsForLine, kernelscope/sourceForLine,
kernelscope/runOverview. Plain JSON objects in and out; 0-based lines. The run overview's
fusion picture comes as SVG, drawn by kernelscope.render.fusion."""
from __future__ import annotations

import os

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from kernelscope.lsp.editor import location, param, text_position
from kernelscope.lsp.features.navigation import answer_at, first_kernel_line, kernel_def_line, query_at

LINKED_RANGES, KERNELS_FOR_LINE, SOURCE_FOR_LINE, RUN_OVERVIEW = (
    "kernelscope/linkedRanges", "kernelscope/kernelsForLine", "kernelscope/sourceForLine",
    "kernelscope/runOverview")


def setup(server) -> None:
    @server.guarded_feature(LINKED_RANGES)
    def linked_ranges_request(server, params) -> dict:
        return linked_ranges(server, *text_position(params))

    @server.guarded_feature(KERNELS_FOR_LINE)
    def kernels_for_line_request(server, params) -> dict:
        return kernels_for_line(server, *text_position(params))

    @server.guarded_feature(SOURCE_FOR_LINE)
    def source_for_line_request(server, params) -> dict:
        return source_for_line(server, *text_position(params))

    @server.guarded_feature(RUN_OVERVIEW)
    def run_overview_request(server, params) -> dict:
        run_id = param(params, "runId")
        if run_id is not None and (isinstance(run_id, bool) or not isinstance(run_id, int)):
            raise JsonRpcInvalidParams(f"runId must be a run id, got {run_id!r}")
        return run_overview(server, run_id)


def _range(loc: dict | None) -> dict | None:
    return None if loc is None else loc["range"]


def linked_ranges(server, uri: str, position: types.Position) -> dict:
    document, answer = answer_at(server, uri, position)
    if document is not None and document.is_source:
        return _linked_from_source(server, uri, position, document, answer)
    document, result = query_at(server, uri, position, "both")
    if result is None:
        return {"origin": None, "links": []}
    provenance = server.provenance
    run_id = document.run_id
    origin = _origin(document, position)
    groups: dict[tuple[str, str], dict] = {}

    def add(loc: types.Location | None, role: str, label: str) -> None:
        if loc is None or loc["uri"] == uri:
            return
        entry = groups.setdefault((loc["uri"], role), {"uri": loc["uri"], "ranges": [], "role": role, "label": label})
        key = _range(loc)
        if key not in entry["ranges"]:
            entry["ranges"].append(key)

    source_maps: dict[str, object] = {}
    for chain in result.graphs:
        graph = f"{chain.graph.kind} [{chain.graph.compile_id}]"
        for source in chain.sources:
            if source.file not in source_maps:
                source_uri = provenance.uri_for(source.file)
                source_maps[source.file] = provenance.line_map(source.file, run_id, server.text_of(source_uri))
            add(location(provenance, source.file, source.line, line_map=source_maps[source.file]), "source",
                os.path.basename(source.file))
        for node in chain.pre_nodes:
            if node.graph_file:
                add(location(provenance, node.graph_file, node.graph_line), "pre_grad", f"pre-grad {graph}")
        for node in chain.post_nodes:
            if node.graph_file:
                add(location(provenance, node.graph_file, node.graph_line), "post_grad", f"post-grad {graph}")
        for kernel in chain.kernels:
            for line in kernel.lines:
                add(location(provenance, line.file, line.line), "kernel", kernel.name)
            for call in kernel.calls:
                add(location(provenance, call.file, call.line), "wrapper", f"wrapper {graph}")
        for line in chain.wrapper_lines:
            add(location(provenance, line.file, line.line), "wrapper", f"wrapper {graph}")
    for entry in groups.values():
        entry["ranges"].sort(key=lambda item: item["start"]["line"])
    return {"origin": origin, "links": list(groups.values())}


def _origin(document, position: types.Position) -> dict:
    text = document.lines[position.line] if position.line < len(document.lines) else ""
    return {"start": {"line": position.line, "character": 0}, "end": {"line": position.line, "character": len(text)}}


def _linked_from_source(server, uri: str, position: types.Position, document, answer) -> dict:
    if answer is None or answer.empty:
        return {"origin": None, "links": []}
    provenance = server.provenance
    groups: dict[tuple[str, str], dict] = {}

    def add(stored: str | None, numbers: list[int], role: str, label: str) -> None:
        if not stored or not numbers:
            return
        target = provenance.uri_for(stored)
        entry = groups.setdefault((target, role), {"uri": target, "ranges": [], "role": role, "label": label})
        entry["ranges"] += [_range(location(provenance, stored, number)) for number in numbers]

    for graph in answer.graphs:
        files, title = graph.graph.files, graph.graph.title
        add(files.get("pre_grad"), graph.pre_lines, "pre_grad", f"pre-grad {title}")
        add(files.get("post_grad"), graph.post_lines, "post_grad", f"post-grad {title}")
        for hit in graph.kernels:
            add(hit.kernel.file, hit.lines, "kernel", hit.kernel.name)
        add(files.get("wrapper"), sorted({*graph.wrapper_lines, *(n for hit in graph.kernels for n in hit.calls)}),
            "wrapper", f"wrapper {title}")
    return {"origin": _origin(document, position), "links": list(groups.values())}


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
                              "uri": loc["uri"] if loc else None, "range": _range(loc)})
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
                            "graph": f"{chain.graph.compile_id} {chain.graph.kind}",
                            "uri": loc["uri"] if loc else None, "range": _range(loc)})
    return {"kernels": kernels}


def source_for_line(server, uri: str, position: types.Position) -> dict:
    document, result = query_at(server, uri, position, "up")
    if result is None:
        return {"sources": []}
    provenance = server.provenance
    sources, seen = [], set()
    for chain in result.graphs:
        for source in chain.sources:
            if (source.file, source.line) in seen:
                continue
            seen.add((source.file, source.line))
            source_uri = provenance.uri_for(source.file)
            line_map = provenance.line_map(source.file, document.run_id, server.text_of(source_uri))
            loc = location(provenance, source.file, source.line, line_map=line_map)
            if loc is None:
                continue
            code = f" {source.code.strip()}" if source.code else ""
            sources.append({"uri": loc["uri"], "range": _range(loc),
                            "label": f"{os.path.basename(source.file)}:{source.line}{code}"})
    return {"sources": sources}


def run_overview(server, run_id: int | None) -> dict:
    from kernelscope.render import fusion  # loaded on first use, as the store side is

    store = server.provenance.store()
    if run_id is None:
        run_id = server.provenance.shown_run_id()
    if store is None or run_id is None:
        raise JsonRpcInvalidParams("the store has no runs yet: run kernelscope.compile first")
    summary = server.provenance.run_summary(run_id)
    if summary is None:
        raise JsonRpcInvalidParams(f"there is no run {run_id} in {server.store_dir}")
    run = server.provenance.run(run_id)
    details = run.details()
    provenance = server.provenance
    workspace = details.workspace

    def uri(stored: str | None) -> str | None:
        return provenance.uri_for(stored, workspace) if stored else None

    graphs = [{"key": graph.key, "compileId": graph.compile_id, "kind": graph.kind,
               "preNodes": graph.pre_nodes, "postNodes": graph.post_nodes, "kernels": graph.kernels,
               "uris": {kind: uri(path) for kind, path in graph.files.items()}}
              for graph in details.graphs]
    kernel_sources = run.all_kernel_sources()
    line_counts = {kernel.file: kernel.line_count for kernel in details.kernels if kernel.file}
    kernels = [{"id": f"k{kernel_id}", "name": kernel.name, "kind": kernel.kind, "graph": kernel.graph_key,
                "uri": uri(kernel.file), "lines": line_counts.get(kernel.file),
                "sourceLines": [{"uri": uri(file), "line": line - 1}
                                for file, line in kernel_sources.get(kernel_id, [])]}
               for kernel_id, kernel in run.kernels().items()]
    return {
        "run": {"id": summary.id, "target": summary.target, "device": summary.device, "mode": summary.mode,
                "torch": summary.torch_version, "triton": summary.triton_version, "created": summary.created,
                "coverage": summary.coverage},
        "graphs": graphs,
        "kernels": kernels,
        "graphBreaks": [{"reason": brk.reason, "uri": uri(brk.file),
                         "line": brk.line - 1 if brk.line else None} for brk in details.graph_breaks],
        "recompiles": [{"compileId": rec.compile_id, "reason": rec.reason} for rec in details.recompiles],
        # The fusion picture, laid out and drawn by kernelscope.render.fusion (Jupyter draws the same);
        # its nodes carry data-uri/data-line, which the overview turns into clicks that open them.
        "fusionSvg": fusion.svg(fusion.fusion_of_run(run, uri)),
        "modules": [_module_group(group) for group in run.module_groups()],
    }


def _module_group(group) -> dict:
    """An InstanceGroup of the run (alike sibling instances folded) as the overview shows it."""
    from kernelscope.store.folding import group_title  # the store side: loaded after `initialize`

    return {"label": group.label, "title": group_title(group), "moduleClass": group.module_class,
            "members": group.members, "folded": group.folded, "postNodes": group.post_nodes,
            "tritonKernels": len(group.triton_kernels), "externCalls": group.extern_calls,
            "children": [_module_group(child) for child in group.children]}

