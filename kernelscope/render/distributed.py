"""Text for distributed runs, the same in every front end (`show`, `query`, the Python
API's `Run` and answers, the language server's hovers and lenses, the terminal UI, the
VS Code run overview): a run's rank and which ranks compiled identical code, DDP's
graph splits, each graph's collectives and its compute/communication order, and one
collective with its model line and layer."""
from __future__ import annotations

from kernelscope.store.parts.distributed import CollectiveRef, DistributedRun, GraphComm, OrderStep, RankRef


def has_content(view: DistributedRun) -> bool:
    return view.rank is not None or any(graph.collectives or graph.split for graph in view.graphs)


def overview(view: DistributedRun) -> dict:
    """The part of a recording's summary (`compile`, `run`; `--json` too) about its rank,
    DDP's parts and each graph's compute/communication order."""
    rank = view.rank
    return {
        "rank": None if rank is None else {"rank": rank.rank, "world_size": rank.world_size,
                                           "backend": rank.backend, "job": rank.job},
        "graphs": [{"graph": graph.graph, "split": graph.split.label if graph.split else None,
                    "collectives": sum(1 for c in graph.collectives if c.role != "wait"),
                    "order": order_text(graph.order) if graph.collectives else None} for graph in view.graphs],
    }


def rank_text(rank: int, world_size: int, backend: str = "") -> str:
    """`rank 1 of 2 (gloo)`."""
    return f"rank {rank} of {world_size}" + (f" ({backend})" if backend else "")


def rank_label(rank: RankRef | None) -> str:
    """`rank 1/2` for a run's label (status lines, run lists); "" for a run of one process."""
    return "" if rank is None else f"rank {rank.rank}/{rank.world_size}"


def render_overview(data: dict) -> list[str]:
    out = []
    if data["rank"] is not None:
        rank = data["rank"]
        out.append(rank_text(rank["rank"], rank["world_size"], rank["backend"]) + f" · job {rank['job']}")
    for graph in data["graphs"]:
        if graph["collectives"]:
            out.append(f"[{graph['graph']}] {graph['collectives']} collective(s): {graph['order']}")
    parts = [graph for graph in data["graphs"] if graph["split"]]
    if parts:
        out.append(f"{len(parts)} graph(s) are parts of graphs DDP's optimizer split (kernelscope show: their buckets)")
    return out


def render_run(view: DistributedRun) -> list[str]:
    """The `show` section: rank and job, code across ranks, splits, collectives, order."""
    out = ["distributed"]
    if view.rank is not None:
        rank = view.rank
        out.append(f"  {rank_text(rank.rank, rank.world_size, rank.backend)} · job {rank.job}")
        recorded = ", ".join(f"{other.rank} (run {other.run_id})" for other in view.job_ranks)
        missing = rank.world_size - len(view.job_ranks)
        out.append(f"  ranks recorded in this store: {recorded}"
                   + (f" · {missing} not here (merge their stores, or record them)" if missing > 0 else ""))
        out += [f"  {line}" for line in code_lines(view)]
    splits = [(graph, graph.split) for graph in view.graphs if graph.split is not None]
    if splits:
        out.append("  graphs split by DDP's optimizer (one part per gradient bucket):")
        for graph, split in splits:
            more = f" (+{len(split.params) - 4} more)" if len(split.params) > 4 else ""
            params = ", ".join(split.params[:4]) + more
            bucket = f"bucket {_size(split.bucket_bytes)} (cap {_size(split.cap_bytes)}): " if split.cap_bytes else ""
            out.append(f"    [{graph.graph}] {split.label}: {bucket}{params or 'no parameters'}")
    for graph in view.graphs:
        if graph.collectives:
            out += [f"  {line}" for line in graph_lines(graph)]
    if len(out) == 1:
        out.append("  (no rank, collective or split in this run)")
    return out


def code_lines(view: DistributedRun) -> list[str]:
    """Which ranks of the job compiled identical code."""
    groups = view.code_groups
    if not groups:
        return []
    if len(groups) == 1:
        return [f"identical code on ranks {_ranks(groups[0].ranks)} (every graph's wrapper and kernels)"]
    lines = [f"code differs across ranks: {len(groups)} groups"]
    first = groups[0]
    lines.append(f"  ranks {_ranks(first.ranks)}: identical")
    for group in groups[1:]:
        lines.append(f"  ranks {_ranks(group.ranks)}: differ in {', '.join(group.differs)} "
                     f"(kernelscope diff {first.runs[0]} {group.runs[0]})")
        for difference in group.first_differences:
            lines.append(f"    {difference.graph_key} first differs at wrapper line {difference.line}: "
                         f"rank {first.ranks[0]} {_shown(difference.reference_text)} · "
                         f"rank {group.ranks[0]} {_shown(difference.text)}")
    return lines


def _shown(code: str, width: int = 100) -> str:
    code = code.strip()
    if not code:
        return "(no line)"
    return f"`{code[:width]}{'…' if len(code) > width else ''}`"


def graph_lines(graph: GraphComm) -> list[str]:
    """One graph's collectives (issues with their waits) and its compute/communication order."""
    issued = [collective for collective in graph.collectives if collective.role != "wait"]
    counts: dict[str, int] = {}
    for collective in issued:
        counts[collective.op] = counts.get(collective.op, 0) + 1
    split = f", {graph.split.label}" if graph.split else ""
    lines = [f"collectives of [{graph.graph}{split}]: "
             + ", ".join(f"{count} {op}" for op, count in counts.items())]
    lines.append(f"  order in {graph.wrapper_file}: {order_text(graph.order)}")
    for collective in issued:
        overlap = graph.overlap.get(collective.node)
        hidden = f" · {overlap} compute op(s) between issue and wait" if overlap is not None else ""
        lines.append(f"  {collective_line(collective)}{hidden}")
    return lines


def order_text(order: list[OrderStep]) -> str:
    """`2 compute -> all_gather_into_tensor -> wait -> 4 compute -> ...`."""
    parts: list[str] = []
    computes = 0
    for step in order:
        if step.kind == "compute":
            computes += 1
            continue
        if computes:
            parts.append(f"{computes} compute")
            computes = 0
        parts.append("wait" if step.kind == "wait" else f"{step.name}" + (" (fused)" if step.kind == "fused" else ""))
    if computes:
        parts.append(f"{computes} compute")
    return " -> ".join(parts) or "(nothing launched)"


def collective_line(collective: CollectiveRef) -> str:
    """`all_gather_into_tensor over 8 ranks, 128 KiB · attention (Attention) · PrepareModuleInput input
    S(1) -> R · model llama_tp.py:66 · wrapper lines 120, 124`."""
    parts = [f"{collective.op}" + (f" ({collective.reduce_op})" if collective.reduce_op else "")
             + (f" over {collective.group_size} ranks" if collective.group_size else "")
             + (f", {_size(collective.bytes)}" if collective.bytes else "")]
    if collective.module:
        parts.append(f"layer {collective.module}" + (f" ({_class(collective.module_class)})"
                                                     if collective.module_class else ""))
    if collective.issued_by:
        parts.append(collective.issued_by + (f" {collective.redistribute}" if collective.redistribute else ""))
    if collective.model_line is not None:
        parts.append(f"model line {collective.model_line.file}:{collective.model_line.line}")
    if collective.wrapper_lines:
        parts.append(f"wrapper line{'s' if len(collective.wrapper_lines) > 1 else ''} "
                     f"{', '.join(map(str, collective.wrapper_lines))}")
    return " · ".join(parts)


def collectives_brief(collectives: list[CollectiveRef]) -> str:
    """`all_gather_into_tensor over 8 ranks (attention · PrepareModuleInput input S(1) -> R)`,
    one entry per collective a line issues (its waits when it issues none): a code lens,
    the TUI's chain line."""
    shown = [c for c in collectives if c.role != "wait"] or collectives
    parts = []
    for collective in shown:
        why = [collective.module] if collective.module else []
        if collective.issued_by:
            why.append(collective.issued_by + (f" {collective.redistribute}" if collective.redistribute else ""))
        size = f" over {collective.group_size} ranks" if collective.group_size else ""
        waits = f" on {', '.join(collective.peers)}" if collective.role == "wait" and collective.peers else ""
        parts.append(f"{collective.op}{waits}{size}" + (f" ({' · '.join(why)})" if why else ""))
    return "; ".join(dict.fromkeys(parts))


def collective_answer(collective: CollectiveRef) -> list[str]:
    """What `query` says about one collective: what, which model line and layer, why, passes."""
    size = f", {_size(collective.bytes)}" if collective.bytes else ""
    lines = [f"{collective.what} in [{collective.graph}]{size}"]
    model = collective.model_line
    if model is not None:
        lines.append(f"model line: {model.file}:{model.line} in {model.function}  | {model.code.strip()}")
    stack = collective.stack
    outer = stack[:stack.index(model)] if model in stack else stack[:-1]  # the frames that called it
    if outer:
        lines.append("called from: " + " > ".join(f"{frame.file}:{frame.line} {frame.code.strip()}" for frame in outer))
    if collective.module:
        lines.append(f"layer: {collective.module}" + (f" ({_class(collective.module_class)})"
                                                     if collective.module_class else ""))
    if collective.issued_by:
        where = f" at {collective.frame.file}:{collective.frame.line} in {collective.frame.function}" \
            if collective.frame else ""
        lines.append(f"issued by: {collective.issued_by}{where}")
    if collective.redistribute:
        lines.append(f"placements: {collective.redistribute}")
    for name in collective.peers:
        peer_lines = collective.peer_lines.get(name)
        where = f" at {collective.wrapper_file}:{', '.join(map(str, peer_lines))}" if peer_lines else ""
        lines.append(("waited on by" if collective.role != "wait" else "waits on") + f": {name}{where}")
    if collective.lineage:
        lines.append(f"passes: {'; '.join(collective.lineage)}")
    return lines


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def _class(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _size(count: int | None) -> str:
    if not count:
        return "0 B"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{count} B"
