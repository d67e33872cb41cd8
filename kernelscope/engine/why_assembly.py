"""A recording's guards, recompile failures and fusion refusals, assembled for the RunRecord
(docs/why.md): the trace's records read by compile_text/guards.py, the hooks' findings
(why_probes.py) attached."""
from __future__ import annotations

from kernelscope.compile_text.guards import GuardReader, TraceEntry, failures, resolve_lines, sources_in
from kernelscope.run_record import GraphRecord, Guard, GuardFailure, NotFused, Recompile


def _entries(trace) -> list[TraceEntry]:
    entries = []
    for record in trace.records:
        cid = record.compile_id
        compile_id = f"{cid[0]}/{cid[1]}" + (f"_{cid[2]}" if cid[2] else "") if cid else ""
        entries.append(TraceEntry(record.kind, record.metadata, record.payload, compile_id))
    return entries


def interned_strings() -> dict[int, str]:
    """torch's table of interned file names (index -> text): frames in trace records name
    files by index, and a string interned before this recording is not sent again."""
    from torch._logging import structured

    return {index: text for text, index in getattr(structured, "INTERN_TABLE", {}).items()}


def guards(trace, skip: tuple[str, ...]) -> tuple[list[Guard], set[str]]:
    """Every guard the recording's compiles installed, and the user files the trace names."""
    reader = GuardReader(interned_strings(), skip)
    found = reader.read(_entries(trace))
    return found, reader.user_files


def with_failures(recompiles: list[Recompile], trace, why, user_files: set[str],
                  guards: list[Guard]) -> list[Recompile]:
    """Each recompile with the guards that failed (torch's `recompile_reasons`), the values
    the failing call had (why_probes) and the user lines Dynamo names for them (a tensor
    check Dynamo names no line for: the line of the failed compile's guard on that tensor)."""
    values = why.failure_values if why is not None else {}
    by_id = {recompile.compile_id: recompile for recompile in recompiles}
    for entry in _entries(trace):
        if entry.kind != "artifact:recompile_reasons":
            continue
        compile_id = entry.compile_id.split("_", 1)[0]
        recompile = by_id.get(compile_id)
        if recompile is None:  # torch wrote the reasons but no metrics: a recompile all the same
            recompile = by_id[compile_id] = Recompile(compile_id, "")
            recompiles.append(recompile)
        found = failures(entry.payload, values)
        resolve_lines(found, user_files)
        for failure in found:
            if not failure.lines:
                failure.lines = _tensor_guard_lines(failure, guards)
        recompile.failures = found
        if not recompile.reason:
            recompile.reason = "; ".join(f"{f.failed_compile_id}: {f.guard}" for f in found)
    return recompiles


def _tensor_guard_lines(failure: GuardFailure, guards: list[Guard]) -> list:
    names = {name for name, _, _ in sources_in(failure.guard)}
    return list(dict.fromkeys(
        guard.source for guard in guards
        if guard.compile_id == failure.failed_compile_id and guard.kind == "TENSOR_MATCH"
        and guard.source is not None and any(guard.expression.startswith(f"check_tensor({n},") for n in names)))


def not_fused(refusals: dict, graph: GraphRecord) -> list[NotFused]:
    """The refusals whose two sides still ended in different kernels (a pair refused in one
    round may be fused in a later one, through a node between them)."""
    kernel_of: dict[str, set[str]] = {}
    for kernel in graph.kernels:
        for node in kernel.nodes:
            kernel_of.setdefault(node, set()).add(kernel.name)
    kept = []
    for (name1, name2, reason), (nodes1, nodes2) in refusals.items():
        kernels1 = {k for node in nodes1 for k in kernel_of.get(node, ())}
        kernels2 = {k for node in nodes2 for k in kernel_of.get(node, ())}
        if kernels1 & kernels2:
            continue
        kept.append(NotFused(name1, name2, list(nodes1), list(nodes2), reason))
    return kept
