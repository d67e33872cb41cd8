"""What a recording saw, assembled into a RunRecord.

`build_run` turns the probes' captures and the structured trace into graphs with links
(links.py), adds the graph breaks and recompiles the trace reports, the launch configs and
timing decisions (engine/decision_hooks/), and every warning the run must carry (probes off or
failed, the device target's, upstream fixes, distributed probes, decisions replayed or
guessed); `finish` adds the timings per phase and the peak memory.
"""
from __future__ import annotations

import resource
import time
from typing import TYPE_CHECKING

from kernelscope.engine import rank_info
from kernelscope.engine.record_options import RecordOptions
from kernelscope.run_record import GraphRecord, GraphSplit, Recompile, RunRecord

if TYPE_CHECKING:
    from kernelscope.engine.recording import Recording


def _recompiles(trace) -> list[Recompile]:
    found = []
    for record in trace.of_kind("compilation_metrics"):
        metrics = record.metadata.get("compilation_metrics") or {}
        reason = metrics.get("recompile_reason")
        if reason and record.compile_id:
            cid = record.compile_id
            found.append(Recompile(f"{cid[0]}/{cid[1]}", str(reason)))
    return found


def build_run(recording: Recording, target: str, options: RecordOptions, device: str) -> RunRecord:
    import torch
    import triton

    from kernelscope.compile_text.graph_breaks import parse_graph_break
    from kernelscope.engine import fx_nodes, links, recompute, subgraphs, template_mods, user_kernels, why_assembly

    probes, trace = recording.probes, recording.trace
    skip = fx_nodes.skip_prefixes()
    mappings = [
        (index, record) for index, record in enumerate(trace.records)
        if record.kind == "artifact:inductor_provenance_tracking_node_mappings"
    ]
    forward_by_seq_nr: dict[tuple, dict] = {}
    graphs = []
    built: dict[int, GraphRecord] = {}  # id(capture) -> its graph; a subgraph's comes before its parent's
    mods: list[tuple[GraphRecord, GraphRecord]] = []  # (parent, a score_mod/mask_mod subgraph it inlined)
    for capture in probes.graphs:
        pre = compile_pre = next((p for p in reversed(probes.pre_grad) if p.compile_id == capture.compile_id), None)
        if capture.parent is not None and pre is not None:  # a subgraph: Dynamo's subgraph it came from
            pre = subgraphs.pick_pre_grad(capture.post_grad_gm, pre.submodules, links.pre_grad_ancestors)
        mapping = next(
            (r for i, r in mappings if i >= capture.trace_position and r.compile_id == capture.compile_id),
            None,
        )
        mapping_json = _json_or_none(mapping.payload) if mapping else None
        per_compile = forward_by_seq_nr.setdefault(capture.compile_id, {})
        children = [(child, built[id(child)]) for child in probes.graphs
                    if child.parent is capture and id(child) in built]
        graph = links.build_graph(capture, pre, mapping_json, per_compile, skip, recording.distributed, children)
        graph.not_fused = why_assembly.not_fused(capture, graph, recording.why)  # empty when why is off
        built[id(capture)] = graph
        graphs.append(graph)
        for child in template_mods.mod_graphs(capture, graph, compile_pre, skip):
            mods.append((graph, child))
            graphs.append(child)
    memory_problems = _add_memory(probes.graphs, built)

    from kernelscope.engine.decision_hooks import session

    decisions = recording.decisions
    if recording.autotuners is not None:  # the configs the GPU launched (below the kernel)
        from kernelscope.engine import asm_launches

        session.launch_decisions(graphs, asm_launches.attach(graphs, recording.autotuners), decisions)
        recording.autotuners = None
        user_kernels.add_gpu_choices(graphs)  # a user kernel's config: the one its user_autotune kept
    elif device == "virtual-cuda":
        session.replay_launches(graphs, decisions)
    gpu = session.gpu_of(device)
    warnings = list(probes.disabled and [
        f"line-level provenance unavailable on torch {torch.__version__}: kernel-level only "
        f"({'; '.join(probes.disabled)})"
    ])
    warnings += recording.device_warnings
    if device == "cuda":  # graphs a GPU did not compile: CPU inputs, a backward never run
        from kernelscope.engine import cuda_target_notes

        warnings += cuda_target_notes.notes(probes.graphs, built)
    warnings += recording.fixes.warnings(torch.__version__)
    warnings += [f"a probe failed and was skipped: {error.splitlines()[0]}" for error in probes.errors[:5]]
    warnings += _distributed_warnings(recording.distributed, graphs)
    warnings += memory_problems
    warnings += _unrecorded_backend_warnings(graphs)
    for capture in probes.graphs:  # a subgraph names its parent by the parent's final key
        child = built[id(capture)]
        if capture.parent is not None and child.subgraph is not None and id(capture.parent) in built:
            child.subgraph.parent = built[id(capture.parent)].key
    for parent, child in mods:
        child.subgraph.parent = parent.key
    graphs = _parents_first(graphs)
    recompute.link_to_forward(graphs)
    recording.graph_keys = {key: graph.key for key, graph in built.items()}  # numerics/analysis.py
    warnings += list(dict.fromkeys(decisions.problems))
    if recording.why is not None:
        warnings += recording.why.warnings()
    # why (docs/why.md); off only to measure its cost (bench/why_cost.py)
    guards, user_files = why_assembly.guards(trace, skip) if recording.why is not None else ([], set())
    graph_breaks = [parse_graph_break(record.payload, record.compile_id)
                    for record in trace.of_kind("artifact:dynamo_graph_break_reason")]
    if recording.why is not None:  # ops kept apart by a break (why_assembly.graph_break_pairs)
        why_assembly.graph_break_pairs(graphs, graph_breaks)
    warnings += session.replay_warnings(decisions, gpu, torch.__version__, getattr(triton, "__version__", "unknown"))
    return RunRecord(
        target=target,
        device=device,
        mode="train" if options.train or any(g.kind == "backward" for g in graphs) else "inference",
        dynamic=options.dynamic,
        torch_version=torch.__version__,
        triton_version=getattr(triton, "__version__", "unknown"),
        provenance="line" if probes.line_level else "kernel",
        created=time.time(),
        workspace=str(options.workspace.resolve()),
        graphs=graphs,
        graph_breaks=graph_breaks,
        recompiles=(why_assembly.with_failures(_recompiles(trace), trace, recording.why, user_files, guards)
                    if recording.why is not None else _recompiles(trace)),
        guards=guards,
        warnings=warnings,
        config={"execute": options.execute, **_wrapper_config(options), **_cpu_vec_isa(graphs)},
        rank=recording.distributed.rank or rank_info.current(options.job),
        gpu=gpu,
        decisions=list(decisions.decisions),
        replay=decisions.replay_record(),
    )


def _cpu_vec_isa(graphs: list[GraphRecord]) -> dict:
    """The vector ISA Inductor gave the run's C++ kernels (`cpu_vec_isa`: name and width in bits),
    named in the run's config only when it has C++ kernels; `kernelscope diff` compares it."""
    if not any(kernel.kind == "cpp" for graph in graphs for kernel in graph.kernels):
        return {}
    from kernelscope.engine.cpp_kernels import picked_vec_isa

    return {"cpu_vec_isa": picked_vec_isa()}


def _wrapper_config(options) -> dict:
    """`--aot` and `--cpp-wrapper`, named in the run's config only when asked (docs/aot.md)."""
    return {**({"aot": True} if options.aot else {}), **({"cpp_wrapper": True} if options.cpp_wrapper else {})}


def _add_memory(captures, built: dict[int, GraphRecord]) -> list[str]:
    """Each graph's allocation timeline, then what each forward saves for its backward (the
    backward of the same compile id). A graph whose memory cannot be read keeps none, and the
    run says why: it never stops a recording."""
    from kernelscope.engine import memory

    problems = []
    forwards = {}
    for capture in captures:
        graph = built.get(id(capture))
        if graph is None or capture.memory is None:
            continue
        try:
            graph.memory = memory.graph_memory(capture.memory, capture.wrapper_text)
            graph.memory.wrapper_file = capture.wrapper_file
        except Exception as error:  # noqa: BLE001 - reported as a warning of the run
            problems.append(f"memory of graph {graph.key} unavailable: {type(error).__name__}: {error}")
            continue
        if graph.kind == "forward" and capture.parent is None:
            forwards[capture.compile_id] = (graph, capture.memory)
    for capture in captures:
        graph = built.get(id(capture))
        if graph is None or graph.memory is None or graph.kind != "backward" or capture.compile_id not in forwards:
            continue
        forward, forward_found = forwards[capture.compile_id]
        try:
            memory.mark_saved(forward, forward_found, graph, capture.memory)
        except Exception as error:  # noqa: BLE001
            problems.append(f"saved-for-backward of graph {forward.key} unavailable: {type(error).__name__}: {error}")
    return problems


def _parents_first(graphs: list[GraphRecord]) -> list[GraphRecord]:
    """Each subgraph right after the graph that calls it (a subgraph is generated, and
    captured, before its parent's codegen ends)."""
    children: dict[str, list[GraphRecord]] = {}
    for graph in graphs:
        if graph.subgraph is not None:
            children.setdefault(graph.subgraph.parent, []).append(graph)
    ordered: list[GraphRecord] = []

    def add(graph: GraphRecord) -> None:
        ordered.append(graph)
        for child in children.pop(graph.key, []):
            add(child)

    for graph in graphs:
        if graph.subgraph is None or graph.subgraph.parent not in {g.key for g in graphs}:
            add(graph)
    return ordered + [graph for orphans in children.values() for graph in orphans if graph not in ordered]


def _unrecorded_backend_warnings(graphs: list[GraphRecord]) -> list[str]:
    """A graph whose wrapper defines kernels of a backend kernelscope does not record (not
    Triton, not Inductor's C++): said, so a run never shows "0 kernels" silently."""
    from kernelscope.compile_text import wrapper_code

    out = []
    for graph in graphs:
        found = wrapper_code.unrecorded_kernels(graph.wrapper_text)
        if found:
            backends = ", ".join(sorted({backend for _, backend in found}))
            out.append(f"graph {graph.key}: {len(found)} kernel(s) of a backend kernelscope does not record "
                       f"(async_compile.{backends}: {', '.join(name for name, _ in found[:3])}"
                       f"{', ...' if len(found) > 3 else ''}): their lines are not linked, only the wrapper lines "
                       "that call them")
    return out


def _distributed_warnings(distributed, graphs) -> list[str]:
    """Probes of distributed programs that were off or failed, where the run needed them;
    graphs that share a compile id and kind (a split no probe named) are told apart."""
    found = [f"a distributed probe failed and was skipped: {error.splitlines()[0]}"
             for error in distributed.errors[:5]]
    keys: dict[str, list] = {}
    for graph in graphs:
        keys.setdefault(graph.key, []).append(graph)
    repeated = [same for same in keys.values() if len(same) > 1]
    for same in repeated:
        for part, graph in enumerate(same):
            graph.split = GraphSplit(part=part, parts=len(same), splitter="")
    if repeated:
        found.append(f"{len(repeated)} compile(s) made several graphs of one kind (a split no probe named): "
                     "numbered as parts")
    if distributed.disabled and (repeated or any(graph.collectives for graph in graphs)):
        found.append(f"distributed probes off on torch {_torch_version()}: {'; '.join(distributed.disabled)}")
    return found


def _torch_version() -> str:
    import torch

    return torch.__version__


def _json_or_none(payload: str | None):
    import json

    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return None


def finish(run: RunRecord, probes, import_seconds: float, total_seconds: float) -> RunRecord:
    lower, codegen = probes.seconds["lower"], probes.seconds["codegen"]
    run.timings = {
        "import": round(import_seconds, 4),
        "capture": round(max(total_seconds - lower - codegen, 0.0), 4),
        "lower": round(lower, 4),
        "codegen": round(codegen, 4),
    }
    run.peak_memory_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return run
