"""A run as text: `kernelscope show` (the Python API's `str(run)`), the table of
`kernelscope runs` (the API's `store.runs`), and the resources table of kernels
compiled below Triton."""
from __future__ import annotations

from kernelscope.render import distributed as distributed_text
from kernelscope.render.query_tree import compact
from kernelscope.render.text import format_share, format_table, format_time, graph_break_details
from kernelscope.run_record import NumericsReport
from kernelscope.store.parts.decisions import RunDecisions
from kernelscope.store.parts.distributed import DistributedRun, RankRef
from kernelscope.store.parts.memory import RunMemory
from kernelscope.store.parts.profiles import RunProfile
from kernelscope.store.results import RunDetails, RunSummary

COVERAGE_LABELS = {
    "kernel_lines": "kernel lines with nodes",
    "kernel_lines_specific": "kernel lines tied to one node",
    "wrapper_lines": "wrapper lines attributed",
    "forward_nodes_with_source": "forward nodes with source",
    "backward_nodes_with_source": "backward nodes with source",
    "kernel_agreement": "kernels agreeing with Inductor",
}

NO_RUNS = "no runs yet — record one with `kernelscope compile FILE.py:FACTORY`"


def run_report(details: RunDetails, asm: dict | None = None, distributed: DistributedRun | None = None,
               profile: RunProfile | None = None, decisions: RunDecisions | None = None,
               failures: list | None = None, guards: list | None = None,
               memory: RunMemory | None = None, numerics: NumericsReport | None = None,
               not_fused: list | None = None) -> str:
    """What `kernelscope show` prints: the run, its graphs, kernels (and their resources below
    Triton when built), graph breaks, recompiles, coverage, warnings and timings; then the
    memory, the timing decisions, the distributed section and the profile when the run has them."""
    parts = [_details_text(details, asm)]
    if failures or guards:
        from kernelscope.render.why import run_why_lines

        parts.append("\n" + "\n".join(run_why_lines(failures or [], guards or [])))
    if not_fused:
        from kernelscope.render.why import run_not_fused_lines

        parts.append("\n" + "\n".join(run_not_fused_lines(not_fused)))
    if memory is not None:
        from kernelscope.render import memory as memory_text

        parts.append("\n" + "\n".join(["memory (docs/memory.md; kernelscope memory RUN for the timeline)",
                                         *memory_text.section_lines(memory, top=5)]))
    if decisions is not None and (decisions.decisions or decisions.replay is not None or decisions.gpu):
        from kernelscope.render.decisions import section_lines

        parts.append("\n" + "\n".join(["timing decisions (docs/decisions.md)",
                                         *section_lines(decisions.gpu, decisions.decisions, decisions.replay)]))
    if distributed is not None and distributed_text.has_content(distributed):
        parts.append("\n" + "\n".join(distributed_text.render_run(distributed)))
    if profile is not None:
        from kernelscope.profile.report import profile_data, render_profile

        parts.append("\n" + "\n".join(render_profile(profile_data(profile))))
    if numerics is not None:
        from kernelscope.render.numerics import report_lines

        parts.append("\n" + "\n".join(report_lines(numerics, kernels=False)))
    return "\n".join(parts)


def _details_text(details: RunDetails, asm: dict | None) -> str:
    summary = details.summary
    out = [
        f"run {summary.id}  {summary.target}",
        f"  created {format_time(summary.created)} · device {summary.device} · mode {summary.mode}"
        f"{' · dynamic' if summary.dynamic else ''} · provenance {summary.provenance}",
        f"  torch {summary.torch_version} · triton {summary.triton_version} · workspace {details.workspace}",
        "",
        "graphs",
    ]
    graph_rows = [[graph.compile_id, graph.kind, str(graph.pre_nodes), str(graph.post_nodes), str(graph.kernels),
                   graph.files.get("wrapper", "")] for graph in details.graphs]
    out.append(_indent(format_table(["compile id", "kind", "pre-grad nodes", "post-grad nodes", "kernels", "wrapper"],
                                    graph_rows)))
    out += _subgraph_lines(details.graphs)
    out += _recompute_lines(details.graphs)
    out += _aot_package_lines(summary.id, details.config)
    out += ["", "kernels"]
    kernel_rows = [[kernel.graph, kernel.name, kernel.kind, str(len(kernel.nodes)), kernel.file or "-"]
                   for kernel in details.kernels]
    out.append(_indent(format_table(["graph", "name", "kind", "nodes", "file"], kernel_rows)) if kernel_rows
               else "  (none)")
    if asm:
        out += ["", "below the kernel (registers and spills per thread, shared memory per block)"]
        out.append(_indent(resources_table(list(asm.values()))))
    out += ["", "graph breaks"]
    if not details.graph_breaks:
        out.append("  (none)")
    for brk in details.graph_breaks:
        where = f"{brk.file}:{brk.line}" if brk.file else "unknown location"
        out.append(f"  [{brk.compile_id}] {where}: {brk.reason}")
        if brk.code:
            out.append(f"      {brk.code}")
        out += graph_break_details(brk.explanation, brk.hints, brk.url, indent="      ")
    out += ["", "recompiles"]
    out += [f"  [{rec.compile_id}] {rec.reason}" for rec in details.recompiles] or ["  (none)"]
    out += ["", "coverage"]
    for key, label in COVERAGE_LABELS.items():
        ratio = summary.coverage[key]
        extra = f", {ratio['excluded']} without Inductor mapping" if "excluded" in ratio else ""
        out.append(f"  {label + ':':<32} {format_share(ratio)}{extra}")
    out += ["", "warnings"]
    out += [f"  {warning}" for warning in details.warnings] or ["  (none)"]
    out += ["", "timings"]
    out += [f"  {name + ':':<20} {seconds:.3f} s" for name, seconds in sorted(details.timings.items())] or ["  (none)"]
    out.append(f"  peak memory: {details.peak_memory_mb:.1f} MB")
    if details.execute_max_error is not None:
        out.append(f"  max error vs eager: {details.execute_max_error:.3g}")
    return "\n".join(out)


def _aot_package_lines(run_id: int, config: dict) -> list[str]:
    """`--aot`: the AOTInductor package kept in the run's folder, and what it holds (docs/aot.md)."""
    package = config.get("aot_package")
    if not package:
        return []
    out = ["", f"AOTInductor package  runs/{run_id}/{package['file']}  ({package['bytes']:,} bytes, "
               f"{len(package['files'])} files)"]
    return out + [f"  {name}" for name in package["files"]]


def _recompute_lines(graphs: list) -> list[str]:
    """What each backward graph computes again of the forward (activation checkpointing)."""
    recomputing = [graph for graph in graphs if graph.recomputed is not None]
    if not recomputing:
        return []
    out = ["", "recomputed in the backward (activation checkpointing; `kernelscope query` on a forward line names "
                "them)"]
    for graph in recomputing:
        counts = ", ".join(f"{count} by {why}" for why, count in sorted(graph.recomputed.nodes.items()))
        out.append(f"  [{graph.key}] {graph.compile_id} {graph.kind}: {sum(graph.recomputed.nodes.values())} "
                   f"nodes ({counts}) in {len(graph.recomputed.kernels)} kernels")
        out.append(f"    from forward lines {_compact_lines(graph.recomputed.forward_lines)}")
    return out


def _compact_lines(lines: list[str]) -> str:
    """['a.py:28', 'a.py:29', 'b.py:3'] -> 'a.py:28-29, b.py:3'."""
    by_file: dict[str, list[int]] = {}
    for text in lines:
        file, _, line = text.rpartition(":")
        by_file.setdefault(file, []).append(int(line))
    return ", ".join(f"{file}:{compact(sorted(set(numbers)))}" for file, numbers in by_file.items()) or "none"


def _subgraph_lines(graphs: list) -> list[str]:
    """The subgraphs of higher-order ops, each under the graph whose op calls it."""
    children: dict[str, list] = {}
    for graph in graphs:
        if graph.subgraph is not None:
            children.setdefault(graph.subgraph.parent, []).append(graph)
    if not children:
        return []
    out = ["", "subgraphs (of higher-order ops: cond, while_loop, nested compile regions, ...)"]

    def lines(key: str, depth: int) -> None:
        for child in children.get(key, []):
            sites = ", ".join(child.subgraph.call_sites)
            out.append(f"{'  ' * depth}{child.subgraph.label}  [{child.key}]  called by {sites or '-'}")
            lines(child.key, depth + 1)

    by_key = {graph.key: graph for graph in graphs}
    for key in children:
        parent = by_key.get(key)
        if parent is not None and parent.subgraph is None:
            out.append(f"  [{key}] {parent.compile_id} {parent.kind}")
            lines(key, 2)
    return out


def runs_table(runs: list[RunSummary], ranks: dict[int, RankRef]) -> str:
    """What `kernelscope runs` prints: one row per run, newest first (a rank column for the
    runs of a distributed job)."""
    if not runs:
        return NO_RUNS
    return format_table(*runs_rows(runs, ranks))


def runs_rows(runs: list[RunSummary], ranks: dict[int, RankRef]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the runs table (text and HTML alike)."""
    header = ["id", "created", "target", "device", "mode", "graphs", "kernels", "kernel lines", "wrapper lines"]
    rows = [
        [str(summary.id), format_time(summary.created), summary.target, summary.device, summary.mode,
         str(summary.graph_count), str(summary.kernel_count),
         format_share(summary.coverage["kernel_lines"]), format_share(summary.coverage["wrapper_lines"])]
        for summary in runs
    ]
    if ranks:
        header.insert(3, "rank")
        for summary, row in zip(runs, rows):
            rank = ranks.get(summary.id)
            row.insert(3, f"{rank.rank}/{rank.world_size}" if rank else "-")
    return header, rows


def resources_table(infos) -> str:
    """One row per kernel built below the kernel: what `show --asm` lists (a C++ kernel: its
    instruction count, and its ISA and widest vectors in the config column)."""
    from kernelscope.asm import text as asm_text

    rows = []
    for info in infos:
        facts = info.facts
        if info.cpu is not None:
            rows.append([info.graph_key, info.name, "-", "-", "-", "-", "-", str(info.cpu.instructions),
                         f"x86-64 {info.cpu.isa} · {asm_text.vector_text(info.cpu.vector_bits)}"])
            continue
        if facts is None:
            rows.append([info.graph_key, info.name, "-", "-", "-", "-", "-", "-", f"not built: {info.error[:60]}"])
            continue
        rows.append([info.graph_key, info.name, str(facts.registers), str(facts.spill_bytes), str(facts.local_bytes),
                     asm_text.size_text(facts.shared_bytes),
                     f"{facts.occupancy.share:.0%} ({facts.occupancy.limited_by})",
                     str(facts.instructions), facts.config.label])
    return format_table(["graph", "kernel", "regs", "spill B", "local B", "shared", "occupancy", "instructions",
                         "config"], rows)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
