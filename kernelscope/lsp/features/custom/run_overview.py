"""`kernelscope/runOverview`: one run as a whole, for the VS Code extension's overview page.

`{runId?}` (else the shown run) -> `{run, graphs, kernels, graphBreaks, recompiles,
fusionSvg, memorySvg, modules, asm, distributed}`: the run's summary (with its `rank` in a
distributed job), its graphs and kernels with their files and model lines (each kernel
with its PTX/SASS facts once built), graph breaks and recompiles, the fusion picture as
SVG (kernelscope.render.fusion, which Jupyter draws too), its module instances (alike
ones folded), how many kernels are built below Triton, and the distributed section
(`overview_distributed`). 0-based lines.
"""
from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams

from kernelscope.lsp.editor import checked_run_id, param
from kernelscope.lsp.features.custom.overview_distributed import distributed_section

METHOD = "kernelscope/runOverview"


def setup(server) -> None:
    @server.guarded_feature(METHOD)
    def run_overview_request(server, params) -> dict:
        return run_overview(server, checked_run_id(param(params, "runId")))


def run_overview(server, run_id: int | None) -> dict:
    from kernelscope.render import fusion, memory_svg  # loaded on first use, as the store side is

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

    graphs = [{"key": graph.key, "compileId": graph.compile_id, "kind": graph.kind, "label": graph.label,
               "parent": graph.subgraph.parent if graph.subgraph is not None else None,
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
        # The memory picture (kernelscope.render.memory_svg): each graph's timeline, its peak clickable.
        "memorySvg": memory_svg.svg(run.memory(), uri),
        "modules": [_module_group(group) for group in run.module_groups()],
        "asm": _asm_status(run),
        "distributed": distributed_section(run, uri),
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
    """How many of the run's kernels can be built below Triton, are built, failed."""
    status = run.asm_status()
    return {"buildable": status.buildable, "built": status.built, "failed": status.failed}


def _module_group(group) -> dict:
    """An InstanceGroup of the run (alike sibling instances folded) as the overview shows it."""
    from kernelscope.store.reading.folding import group_title  # the store side: loaded after `initialize`

    return {"label": group.label, "title": group_title(group), "moduleClass": group.module_class,
            "members": group.members, "folded": group.folded, "postNodes": group.post_nodes,
            "tritonKernels": len(group.triton_kernels), "externCalls": group.extern_calls,
            "children": [_module_group(child) for child in group.children]}
