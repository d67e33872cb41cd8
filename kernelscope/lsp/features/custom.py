"""Custom requests of the VS Code extension (see the LSP contract):
kernelscope/linkedRanges, kernelscope/kernelsForLine, kernelscope/sourceForLine,
kernelscope/asmForLine, kernelscope/runOverview. Plain JSON objects in and out; 0-based lines. The run
overview's fusion picture comes as SVG, drawn by kernelscope.render.fusion."""
from __future__ import annotations

import os

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from kernelscope.lsp.editor import checked_line, location, param, text_position
from kernelscope.lsp.features.navigation import (
    ASM,
    answer_at,
    asm_chains,
    first_kernel_line,
    kernel_def_line,
    query_at,
)

LINKED_RANGES, KERNELS_FOR_LINE, SOURCE_FOR_LINE, RUN_OVERVIEW, ASM_FOR_LINE = (
    "kernelscope/linkedRanges", "kernelscope/kernelsForLine", "kernelscope/sourceForLine",
    "kernelscope/runOverview", "kernelscope/asmForLine")


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

    @server.guarded_feature(ASM_FOR_LINE)
    def asm_for_line_request(server, params) -> dict:
        return asm_for_line(server, *text_position(params))

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
    for entry in groups.values():
        entry["ranges"].sort(key=lambda item: item["start"]["line"])
    return {"origin": origin, "links": list(groups.values())}


def _adder(groups: dict, uri: str):
    """add(location, role, label): one entry per (file, role), its ranges once each; none in `uri`."""
    def add(loc: dict | None, role: str, label: str) -> None:
        if loc is None or loc["uri"] == uri:
            return
        entry = groups.setdefault((loc["uri"], role), {"uri": loc["uri"], "ranges": [], "role": role, "label": label})
        key = _range(loc)
        if key not in entry["ranges"]:
            entry["ranges"].append(key)

    return add


def _add_below(server, add, below) -> None:
    """The PTX and SASS lines of a KernelBelow (role `asm`, labelled `SASS of <kernel>`)."""
    from kernelscope.lsp.below import SHOWN_STAGES, STAGE_NAMES

    if below.info is None or below.info.facts is None:
        return
    for stage in SHOWN_STAGES:
        path = below.info.files.get(stage)
        if path:
            for line in below.stage_lines(stage):
                add(location(server.provenance, path, line.line), "asm", f"{STAGE_NAMES[stage]} of {below.kernel}")


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
    for entry in groups.values():
        entry["ranges"].sort(key=lambda item: item["start"]["line"])
    return {"origin": _origin(document, position), "links": list(groups.values())}


def _add_chains(server, add, results: list, run_id: int) -> None:
    """Every linked line of query answers: model lines, graph nodes, kernel and wrapper lines."""
    provenance = server.provenance
    source_maps: dict[str, object] = {}
    for chain in (chain for result in results for chain in result.graphs):
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
    # below the kernel: the PTX and SASS lines of the line's kernel lines, for the kernels built
    from kernelscope.lsp.below import MAX_KERNELS, SHOWN_STAGES, STAGE_NAMES, kernel_hits

    view = provenance.run(document.run_id)
    hits = kernel_hits(answer)[:MAX_KERNELS * 4]
    built = view.asm_builds([hit.kernel.id for hit in hits]) if hits else {}
    for hit in hits:
        info = built.get(hit.kernel.id)
        if info is not None and info.facts is not None:
            below = view.asm_below(hit.kernel.file, hit.lines, SHOWN_STAGES)
            for stage in SHOWN_STAGES:
                add(info.files.get(stage), sorted({line.line for line in below.stage_lines(stage)}), "asm",
                    f"{STAGE_NAMES[stage]} of {hit.kernel.name}")
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
    results = [result] if result is not None else []
    if document is not None and document.location.kind == ASM:
        results = asm_chains(server, document, position, "up")
    if not results:
        return {"sources": []}
    provenance = server.provenance
    sources, seen = [], set()
    for chain in (chain for result in results for chain in result.graphs):
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


def asm_for_line(server, uri: str, position: types.Position) -> dict:
    """The Triton kernels of a model line, kernel line or PTX/SASS line, each with its build
    below Triton: `{kernels: [{name, kernelUri, status: built | not built | failed, facts,
    error, stages: {ptx: {uri, focus, ranges}, sass: {uri, focus, ranges}}}], how}` where
    `ranges` are the lines of this line in that file, `focus` the one to open it at, and
    `how` says how to build what is not built. Nothing is built here."""
    from kernelscope.asm.text import facts_line, most_notable
    from kernelscope.lsp.below import SHOWN_STAGES, buildable, how_to_build, kernel_hits

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
        if kernel is not None and kernel.kind in ("triton", "template"):
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
        if info is not None and info.facts is None:
            entry.update(status="failed", error=info.error)
        elif info is not None:
            below = view.asm_below(kernel_file, kernel_lines, SHOWN_STAGES)
            entry.update(status="built", facts=facts_line(info.facts))
            for stage in SHOWN_STAGES:
                stage_lines = below.stage_lines(stage)
                numbers = sorted({asm_line.line for asm_line in stage_lines})
                if info.files.get(stage):
                    # where to open it: the most notable instruction (MUFU.EX2 before FFMA), PTX's first line
                    focus = (most_notable(stage_lines) if stage == "sass" else stage_lines[0]).line if numbers else 1
                    entry["stages"][stage] = {
                        "uri": server.provenance.uri_for(info.files[stage]), "focus": focus - 1,
                        "ranges": [_range(location(server.provenance, info.files[stage], n)) for n in numbers]}
        kernels.append(entry)
    how = ""
    if any(entry["status"] == "not built" for entry in kernels) and buildable(view):
        how = how_to_build(document.location.path, line).replace("*", "")
    return {"kernels": kernels, "how": how}


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
    builds = run.asm_builds()
    kernels = [{"id": f"k{kernel_id}", "name": kernel.name, "kind": kernel.kind, "graph": kernel.graph_key,
                "uri": uri(kernel.file), "lines": line_counts.get(kernel.file),
                "sourceLines": [{"uri": uri(file), "line": line - 1}
                                for file, line in kernel_sources.get(kernel_id, [])],
                "asm": _kernel_asm(builds.get(kernel_id), uri)}
               for kernel_id, kernel in run.kernels().items()]
    rank = run.rank()
    return {
        "run": {"id": summary.id, "target": summary.target, "device": summary.device, "mode": summary.mode,
                "torch": summary.torch_version, "triton": summary.triton_version, "created": summary.created,
                "coverage": summary.coverage,
                "rank": None if rank is None else {"rank": rank.rank, "worldSize": rank.world_size}},
        "graphs": graphs,
        "kernels": kernels,
        "graphBreaks": [{"reason": brk.reason, "uri": uri(brk.file),
                         "line": brk.line - 1 if brk.line else None} for brk in details.graph_breaks],
        "recompiles": [{"compileId": rec.compile_id, "reason": rec.reason} for rec in details.recompiles],
        # The fusion picture, laid out and drawn by kernelscope.render.fusion (Jupyter draws the same);
        # its nodes carry data-uri/data-line, which the overview turns into clicks that open them.
        "fusionSvg": fusion.svg(fusion.fusion_of_run(run, uri)),
        "modules": [_module_group(group) for group in run.module_groups()],
        "asm": _asm_status(run),
        "distributed": _distributed(run, uri),
    }


def _kernel_asm(info, uri) -> dict | None:
    """A kernel's build below Triton as the overview's kernels table shows it (None: not built)."""
    if info is None:
        return None
    if info.facts is None:
        return {"error": info.error}
    facts = info.facts
    return {"arch": facts.arch, "registers": facts.registers, "spillBytes": facts.spill_bytes,
            "localBytes": facts.local_bytes, "sharedBytes": facts.shared_bytes,
            "occupancy": round(facts.occupancy.share, 4), "limitedBy": facts.occupancy.limited_by,
            "instructions": facts.instructions, "config": facts.config.label,
            "sassUri": uri(info.files.get("sass")), "ptxUri": uri(info.files.get("ptx"))}


def _asm_status(run) -> dict:
    status = run.asm_status()
    return {"buildable": status.buildable, "built": status.built, "failed": status.failed}


def _distributed(run, uri) -> dict | None:
    """The run's rank, its job's ranks, which of them compiled identical code, and per graph
    the compute/communication order and its collectives (kernelscope.render.distributed's words)."""
    from kernelscope.render import distributed as text

    view = run.distributed()
    if not text.has_content(view):
        return None
    rank = view.rank
    return {
        "rank": None if rank is None else {"rank": rank.rank, "worldSize": rank.world_size, "backend": rank.backend,
                                           "job": rank.job, "label": text.rank_text(rank.rank, rank.world_size,
                                                                                    rank.backend)},
        "ranks": [{"rank": other.rank, "runId": other.run_id} for other in view.job_ranks],
        "code": text.code_lines(view),
        "graphs": [{"graph": graph.graph, "split": graph.split.label if graph.split else None,
                    "wrapperUri": uri(graph.wrapper_file or None), "order": text.order_text(graph.order),
                    "steps": [{"line": step.line - 1, "kind": step.kind, "name": step.name} for step in graph.order],
                    "collectives": [{"text": text.collective_line(collective), "op": collective.op,
                                     "role": collective.role, "module": collective.module,
                                     "modelUri": uri(collective.model_line.file) if collective.model_line else None,
                                     "modelLine": collective.model_line.line - 1 if collective.model_line else None,
                                     "wrapperLines": [line - 1 for line in collective.wrapper_lines]}
                                    for collective in graph.collectives if collective.role != "wait"]}
                   for graph in view.graphs if graph.collectives or graph.split],
    }


def _module_group(group) -> dict:
    """An InstanceGroup of the run (alike sibling instances folded) as the overview shows it."""
    from kernelscope.store.folding import group_title  # the store side: loaded after `initialize`

    return {"label": group.label, "title": group_title(group), "moduleClass": group.module_class,
            "members": group.members, "folded": group.folded, "postNodes": group.post_nodes,
            "tritonKernels": len(group.triton_kernels), "externCalls": group.extern_calls,
            "children": [_module_group(child) for child in group.children]}

