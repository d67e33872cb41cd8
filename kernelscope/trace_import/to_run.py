"""One rank's log (a `RankLog`) as a `RunRecord`, the same shape a recording has.

Links, each from what the log holds:
  source line <- pre-grad / post-grad node   the graphs' `# File:` comments
  pre-grad node <- post-grad node            Inductor's postToPre mapping; in
                                             backward graphs (empty mapping) the
                                             kernels' ATen-mapping comments, then
                                             pre-grad nodes of the same source line
  post-grad nodes <- kernel                  see output_code
  post-grad nodes <- wrapper launch line     see output_code
A run imported from a log is kernel-level (`provenance="kernel"`): the log has no
record of which node produced which line inside a kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernelscope.compile_text.graph_breaks import parse_graph_break
from kernelscope.compile_text.guards import GuardReader, attach_failures, torch_dirs
from kernelscope.compile_text.stack_traces import user_frames
from kernelscope.run_record import GraphBreak, GraphRecord, Guard, Recompile, RunRecord, SourceLocation
from kernelscope.trace_import import graph_text, output_code
from kernelscope.trace_import.collect import RankLog

KERNEL_LEVEL_WARNING = (
    "imported from a TORCH_TRACE log: kernel-level provenance only (kernel <-> post-grad "
    "nodes, and the wrapper lines that launch each kernel); lines inside kernels are not linked"
)
@dataclass
class RunOptions:
    target: str
    workspace: str
    created: float
    rank: int | None
    log_path: str
    path_map: list[tuple[str, str]] = field(default_factory=list)  # (prefix in log, local prefix)


def build_run(log: RankLog, options: RunOptions) -> RunRecord:
    warnings = [KERNEL_LEVEL_WARNING]
    graphs: list[GraphRecord] = []
    seen_keys: set[str] = set()
    devices: list[str] = []
    without_mapping = 0
    for compile_ in log.compiles:
        if not compile_.wrapper_text:
            warnings.append(f"compile [{_display_id(compile_.key)}] at line {compile_.first_line} has a "
                            "post-grad graph but no output code (did Inductor fail?): skipped")
            continue
        graph = _build_graph(log, compile_)
        if graph.key in seen_keys:
            warnings.append(f"a second {graph.kind} graph for compile [{graph.compile_id}] "
                            f"(line {compile_.first_line}) was skipped: kernelscope keys graphs by compile id and kind")
            continue
        seen_keys.add(graph.key)
        graphs.append(graph)
        devices.append(output_code.device_of(compile_.wrapper_text) or "")
        if not compile_.node_mappings or not compile_.node_mappings.get("cppCodeToPost"):
            without_mapping += 1
    if without_mapping:
        warnings.append(
            f"{without_mapping} graph(s) have no Inductor kernel->node mapping (backward graphs never do; "
            "for others, log with INDUCTOR_PROVENANCE=1): their kernels' nodes come from the "
            "output code's comments")
    unmatched = sum(1 for g in graphs for k in g.kernels if not k.nodes)
    if unmatched:
        warnings.append(f"{unmatched} kernel(s) could not be tied to any post-grad node")
    warnings += log.failures + log.bad_json
    if log.unknown_kinds:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(log.unknown_kinds.items()))
        warnings.append(f"unknown record kinds skipped: {kinds}")
    _map_paths(graphs, options.path_map)
    device = next((d for d in devices if d), "unknown")
    guards, recompiles = _why(log, options.path_map)
    return RunRecord(
        target=options.target,
        device=device,
        mode="train" if any(g.kind == "backward" for g in graphs) else "inference",
        dynamic=False,
        torch_version=log.torch_version or "unknown",
        triton_version="unknown",
        provenance="kernel",
        created=options.created,
        workspace=options.workspace,
        graphs=graphs,
        graph_breaks=[_map_break(parse_graph_break(entry.text, entry.compile_id), options.path_map)
                      for entry in log.graph_breaks],
        recompiles=recompiles,
        guards=guards,
        warnings=warnings,
        config={"imported_from": options.log_path, "rank": options.rank, "source": "TORCH_TRACE"},
    )


def _why(log: RankLog, path_map) -> tuple[list[Guard], list[Recompile]]:
    """The log's guards and each recompile's failed guards, read as a live recording reads
    them (compile_text/guards.py; docs/why.md), without the failing values (a log has none)."""
    reader = GuardReader({}, torch_dirs(log.why_entries))
    guards = reader.read(log.why_entries)
    recompiles = attach_failures([Recompile(compile_id, reason) for compile_id, reason in log.recompiles],
                                 log.why_entries, {}, reader.user_files, guards)
    for guard in guards:
        guard.source = _remap(guard.source, path_map)
        guard.stack = [_remap_frame(frame, path_map) for frame in guard.stack]
    for recompile in recompiles:
        for failure in recompile.failures:
            failure.lines = [_remap_frame(line, path_map) for line in failure.lines]
    return guards, recompiles


def _display_id(key) -> str:
    frame, frame_compile, attempt, _ = key
    return f"{frame}/{frame_compile}" + (f"_{attempt}" if attempt else "")


def _build_graph(log: RankLog, compile_) -> GraphRecord:
    frame, frame_compile, attempt, _autograd = compile_.key
    kind = output_code.graph_kind(compile_.wrapper_text) or _guess_kind(log, compile_)
    graph = GraphRecord(frame, frame_compile, attempt, kind)
    pre_text = log.pre_grad.get(compile_.key, (0, ""))[1]
    pre = graph_text.parse_graph(pre_text) if pre_text else graph_text.ParsedGraph()
    post = graph_text.parse_graph(compile_.post_grad_text)
    mapping = compile_.node_mappings or {}
    code = output_code.read_output_code(compile_.wrapper_text, mapping, post.nodes, post.inputs)

    graph.pre_grad_text, graph.pre_grad_nodes = pre_text, pre.nodes
    graph.post_grad_text, graph.post_grad_nodes = compile_.post_grad_text, post.nodes
    graph.wrapper_text = compile_.wrapper_text
    graph.inductor_mapping = compile_.node_mappings
    graph.kernels = code.kernels
    graph.wrapper_lines = code.wrapper_lines
    graph.wrapper_attributable = code.wrapper_attributable

    _link_pre_grad(graph, mapping, code.pre_grad_of_post)
    _borrow_sources(graph, post.inputs)
    _sources_from_kernel_stack_traces(graph, compile_.kernel_stack_traces or {})
    return graph


def _guess_kind(log: RankLog, compile_) -> str:
    if compile_.key not in log.aot_backward:
        return "inference"
    same = [c for c in log.compiles if c.key == compile_.key]
    return "forward" if same and same[0] is compile_ else "backward"


def _link_pre_grad(graph: GraphRecord, mapping: dict, from_comments: dict[str, list[str]]) -> None:
    post_to_pre = mapping.get("postToPre")
    if not isinstance(post_to_pre, dict):
        post_to_pre = {}
    pre_names = {node.name for node in graph.pre_grad_nodes}
    by_source: dict[tuple[str, int], list[str]] = {}
    for node in graph.pre_grad_nodes:
        if node.source is not None and node.op not in ("placeholder", "output"):
            by_source.setdefault((node.source.file, node.source.line), []).append(node.name)
    for node in graph.post_grad_nodes:
        if node.op in ("placeholder", "output"):
            continue
        names = post_to_pre.get(node.name) or from_comments.get(node.name) or []
        node.from_pre_grad = sorted({str(name) for name in names if str(name) in pre_names} or
                                    {str(name) for name in names})
        if not node.from_pre_grad and node.source is not None:
            node.from_pre_grad = sorted(by_source.get((node.source.file, node.source.line), []))


def _borrow_sources(graph: GraphRecord, inputs: dict[str, list[str]]) -> None:
    """A node made by a pass (softmax's online prologue) may have no `# File:`
    comment; its users or inputs still do (as a recording does it)."""
    by_name = {node.name: node for node in graph.post_grad_nodes}
    users: dict[str, list[str]] = {}
    for name, sources in inputs.items():
        for source in sources:
            users.setdefault(source, []).append(name)
    for node in graph.post_grad_nodes:
        if node.source is not None or node.op != "call_function":
            continue
        for neighbour in [*users.get(node.name, []), *inputs.get(node.name, [])]:
            other = by_name.get(neighbour)
            if other is not None and other.source is not None and other.op == "call_function":
                node.source, node.source_via = other.source, f"made by a pass from {other.name}"
                if not node.from_pre_grad:
                    node.from_pre_grad = list(other.from_pre_grad)
                break


def _sources_from_kernel_stack_traces(graph: GraphRecord, traces: dict) -> None:
    """Inductor logs, per kernel, the full stack traces of the nodes it computes. They
    give every node its whole user call stack (the graph text names only the innermost
    frame), and nodes still without a source line the innermost frame."""
    stacks_by_kernel: dict[str, dict[tuple[str, int], list[SourceLocation]]] = {}
    for key, frames in traces.items():
        if not isinstance(frames, list):
            continue
        stacks = stacks_by_kernel.setdefault(str(key).rpartition(":")[0], {})
        for trace in frames:
            stack = user_frames(trace, skip_prefixes=()) if isinstance(trace, str) else []
            stack = [frame for frame in stack if not _TORCH_FILE.search(frame.file)] or stack[-1:]
            if stack:
                stacks.setdefault((stack[-1].file, stack[-1].line), stack)
    every_stack = {line: stack for stacks in stacks_by_kernel.values() for line, stack in stacks.items()}
    by_name = {node.name: node for node in graph.post_grad_nodes}
    for kernel in graph.kernels:
        kernel_stacks = stacks_by_kernel.get(kernel.name.split("#")[0] if kernel.kind == "extern" else kernel.name)
        if not kernel_stacks:
            continue
        for name in kernel.nodes:
            node = by_name.get(name)
            if node is not None and node.source is None and node.op == "call_function":
                stack = next(iter(kernel_stacks.values()))
                node.source, node.source_via = stack[-1], f"kernel stack trace of {kernel.name}"
                node.stack = list(stack)
            elif node is not None and node.source is not None:
                node.stack = list(kernel_stacks.get((node.source.file, node.source.line), node.stack))
    for node in [*graph.pre_grad_nodes, *graph.post_grad_nodes]:
        if node.source is not None and not node.stack:
            node.stack = list(every_stack.get((node.source.file, node.source.line), [node.source]))


_TORCH_FILE = re.compile(r"[/\\](?:site|dist)-packages[/\\]torch[/\\]")


# -- paths from another machine ------------------------------------------------------


def _remap(location: SourceLocation | None, path_map) -> SourceLocation | None:
    return None if location is None else _remap_frame(location, path_map)


def _remap_frame(location: SourceLocation, path_map) -> SourceLocation:
    if not path_map:
        return location
    for old, new in path_map:
        if location.file == old or location.file.startswith(old.rstrip("/") + "/"):
            return SourceLocation(new.rstrip("/") + location.file[len(old.rstrip("/")):],
                                  location.line, location.function, location.code)
    return location


def _map_paths(graphs: list[GraphRecord], path_map) -> None:
    if not path_map:
        return
    for graph in graphs:
        for node in [*graph.pre_grad_nodes, *graph.post_grad_nodes]:
            node.source = _remap(node.source, path_map)
            node.stack = [_remap_frame(frame, path_map) for frame in node.stack]


def _map_break(brk: GraphBreak, path_map) -> GraphBreak:
    brk.source = _remap(brk.source, path_map)
    brk.stack = [_remap_frame(frame, path_map) for frame in brk.stack]
    return brk
