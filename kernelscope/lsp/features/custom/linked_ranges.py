"""`kernelscope/linkedRanges`: every line linked to the line at a position, grouped by file
and role, for the client to highlight (the VS Code extension's linked highlighting).

Answer: `{origin: range | None, links: [{uri, ranges, role, label}]}`, one entry per
(file, role); roles `source`, `pre_grad`, `post_grad`, `kernel`, `wrapper` and `asm` (PTX
and SASS lines, labelled `SASS of <kernel>`, once the kernel is built). Never a range in
the document asked about. 0-based lines.
"""
from __future__ import annotations

import os

from lsprotocol import types

from kernelscope.lsp.editor import checked_line, location, range_of, text_position
from kernelscope.lsp.lookup import ASM, answer_at, model_location, query_at

METHOD = "kernelscope/linkedRanges"


def setup(server) -> None:
    @server.guarded_feature(METHOD)
    def linked_ranges_request(server, params) -> dict:
        return linked_ranges(server, *text_position(params))


def linked_ranges(server, uri: str, position: types.Position) -> dict:
    document, answer = answer_at(server, uri, position)
    if document is not None and document.is_source:
        return _linked_from_source(server, position, document, answer)
    if document is not None and document.location.kind == ASM:
        return _linked_from_stage_file(server, uri, position, document)
    document, result = query_at(server, uri, position, "both")
    if result is None:
        return {"origin": None, "links": []}
    origin = _origin(document, position)
    groups: dict[tuple[str, str], dict] = {}
    add = _adder(groups, uri)
    _add_chains(server, add, [result], document.run_id)
    if document.location.kind == "kernel":  # down: the PTX and SASS lines of this kernel line, once built
        from kernelscope.lsp.below import SHOWN_STAGES

        view = server.provenance.run(document.run_id)
        _add_below(server, add, view.asm_below(document.location.path, [result.line], SHOWN_STAGES))
    return {"origin": origin, "links": _sorted_links(groups)}


def _linked_from_source(server, position: types.Position, document, answer) -> dict:
    """A model line: the graph, kernel and wrapper lines of its answer, and the PTX and SASS
    lines of its kernel lines for the kernels built."""
    if answer is None or answer.empty:
        return {"origin": None, "links": []}
    provenance = server.provenance
    groups: dict[tuple[str, str], dict] = {}

    def add(stored: str | None, numbers: list[int], role: str, label: str) -> None:
        if not stored or not numbers:
            return
        target = provenance.uri_for(stored)
        entry = groups.setdefault((target, role), {"uri": target, "ranges": [], "role": role, "label": label})
        entry["ranges"] += [range_of(location(provenance, stored, number)) for number in numbers]

    for graph in answer.graphs:
        files, title = graph.graph.files, graph.graph.title
        add(files.get("pre_grad"), graph.pre_lines, "pre_grad", f"pre-grad {title}")
        add(files.get("post_grad"), graph.post_lines, "post_grad", f"post-grad {title}")
        for hit in graph.kernels:
            add(hit.kernel.file, hit.lines, "kernel", hit.kernel.name)
        add(files.get("wrapper"), sorted({*graph.wrapper_lines, *(n for hit in graph.kernels for n in hit.calls)}),
            "wrapper", f"wrapper {title}")
    # below the kernel: the PTX and SASS lines of the line's kernel lines, for the kernels built
    from kernelscope.lsp.below import MAX_KERNELS, SHOWN_STAGES, STAGE_NAMES, kernel_hits

    view = provenance.run(document.run_id)
    hits = kernel_hits(answer)[:MAX_KERNELS * 4]
    built = view.asm_builds([hit.kernel.id for hit in hits]) if hits else {}
    for hit in hits:
        info = built.get(hit.kernel.id)
        if info is not None and info.built:
            below = view.asm_below(hit.kernel.file, hit.lines, SHOWN_STAGES)
            for stage in SHOWN_STAGES:
                add(info.files.get(stage), sorted({line.line for line in below.stage_lines(stage)}), "asm",
                    f"{STAGE_NAMES[stage]} of {hit.kernel.name}")
    return {"origin": _origin(document, position), "links": list(groups.values())}


def _linked_from_stage_file(server, uri: str, position: types.Position, document) -> dict:
    """A PTX or SASS line: its kernel line(s), the other stage's lines of them, and their chains."""
    from kernelscope.lsp.below import SHOWN_STAGES

    view = server.provenance.run(document.run_id)
    answer = view.asm_line(document.location, checked_line(document, position), "both")
    groups: dict[tuple[str, str], dict] = {}
    add = _adder(groups, uri)
    ref = answer.file
    for line in answer.kernel_lines:
        add(location(server.provenance, ref.kernel_file, line), "kernel", ref.kernel_name)
    if answer.kernel_lines:
        _add_below(server, add, view.asm_below(ref.kernel_file, answer.kernel_lines, SHOWN_STAGES))
    _add_chains(server, add, answer.chains, document.run_id)
    return {"origin": _origin(document, position), "links": _sorted_links(groups)}


def _adder(groups: dict, uri: str):
    """add(location, role, label): one entry per (file, role), its ranges once each; none in `uri`."""
    def add(loc: dict | None, role: str, label: str) -> None:
        if loc is None or loc["uri"] == uri:
            return
        entry = groups.setdefault((loc["uri"], role), {"uri": loc["uri"], "ranges": [], "role": role, "label": label})
        key = range_of(loc)
        if key not in entry["ranges"]:
            entry["ranges"].append(key)

    return add


def _sorted_links(groups: dict) -> list[dict]:
    """The entries of `_adder`'s groups, each one's ranges in line order."""
    for entry in groups.values():
        entry["ranges"].sort(key=lambda item: item["start"]["line"])
    return list(groups.values())


def _add_below(server, add, below) -> None:
    """The PTX and SASS lines (a C++ kernel's x86-64 lines) of a KernelBelow (role `asm`,
    labelled `SASS of <kernel>`)."""
    from kernelscope.lsp.below import SHOWN_STAGES, STAGE_NAMES

    if below.info is None or not below.info.built:
        return
    for stage in SHOWN_STAGES:
        path = below.info.files.get(stage)
        if path:
            for line in below.stage_lines(stage):
                add(location(server.provenance, path, line.line), "asm", f"{STAGE_NAMES[stage]} of {below.kernel}")


def _add_chains(server, add, results: list, run_id: int) -> None:
    """Every linked line of query answers: model lines, graph nodes, kernel and wrapper lines."""
    provenance = server.provenance
    line_maps: dict[str, object] = {}
    for chain in (chain for result in results for chain in result.graphs):
        graph = chain.graph.label or f"{chain.graph.kind} [{chain.graph.compile_id}]"
        for source in chain.sources:
            add(model_location(server, source.file, source.line, run_id, line_maps), "source",
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


def _origin(document, position: types.Position) -> dict:
    """The whole line asked about, as a range."""
    text = document.lines[position.line] if position.line < len(document.lines) else ""
    return {"start": {"line": position.line, "character": 0}, "end": {"line": position.line, "character": len(text)}}
