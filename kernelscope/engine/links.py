"""Turn what the probes and the structured trace saw into GraphRecords with links.

Links, each with a reason:
  source line <- pre-grad node        (Dynamo's stack_trace)
  pre-grad node <- post-grad node     (FX `from_node` provenance; backward nodes
                                       through the forward node with the same seq_nr)
  post-grad node <- kernel line       (the kernel_lines probe; a C++ kernel's: engine/cpp_kernels.py)
  post-grad node <- wrapper line      (the wrapper_regions probe)
  post-grad node <- a program's own Triton kernel (the node whose wrapper region launches it)
  user kernel source line <- its generated copy's line (engine/user_kernels.py)
  collective node -> why it is there  (engine/collectives.py: ParallelStyle, DTensor call)
  higher-order op node <-> subgraph   (engine/subgraphs.py: a cond branch, a nested region)
  recomputed backward node -> forward node (engine/recompute.py: activation checkpointing)
"""
from __future__ import annotations

from collections.abc import Sequence

from kernelscope.compile_text import wrapper_code
from kernelscope.compile_text.printed_graph import node_lines
from kernelscope.engine import collectives, cpp_kernels, fx_nodes, kernel_parts, recompute, subgraphs, user_kernels
from kernelscope.engine.distributed_probes import DistributedProbes
from kernelscope.engine.probes import GraphCapture, KernelLineCapture, PreGradCapture
from kernelscope.run_record import (
    SHARED_LINE_REASON_PREFIX,
    TEMPLATE_REASON,
    FxNode,
    GraphRecord,
    Kernel,
    LineOrigin,
    in_subgraph,
)

SHARED_REASON = f"{SHARED_LINE_REASON_PREFIX} indexing and masks of the fused kernel"
KERNEL_LEVEL_REASON = f"{SHARED_LINE_REASON_PREFIX} in this kernel (line-level probes off: kernel-level only)"
CPP_KERNEL_LEVEL_REASON = f"{SHARED_LINE_REASON_PREFIX} in this C++ kernel (not recorded line by line: kernel-level)"
USER_KERNEL_REASON = (f"{SHARED_LINE_REASON_PREFIX} in the program's own Triton kernel (kernel-level: the node "
                      "that launches it)")


def graph_kind(capture: GraphCapture) -> str:
    if capture.is_backward:
        return "backward"
    return "inference" if capture.is_inference else "forward"


def build_graph(
    capture: GraphCapture,
    pre_grad: PreGradCapture | None,
    inductor_mapping: dict | None,
    forward_by_seq_nr: dict[int, FxNode],
    skip_prefixes: tuple[str, ...],
    distributed: DistributedProbes | None = None,
    children: Sequence[tuple[GraphCapture, GraphRecord]] = (),
) -> GraphRecord:
    """`children`: the subgraphs this graph's codegen generated, already built; each gains
    its Subgraph record (its `parent` key is set once the parent's key is final)."""
    frame, compile_index, attempt = capture.compile_id or (0, 0, 0)
    record = GraphRecord(frame, compile_index, attempt, graph_kind(capture))
    if pre_grad is not None:
        record.pre_grad_text = pre_grad.text
        record.pre_grad_nodes = _pre_grad_nodes(pre_grad, skip_prefixes)
    record.post_grad_text, record.post_grad_nodes = _post_grad_nodes(
        capture, pre_grad, forward_by_seq_nr, skip_prefixes
    )
    _pre_grad_from_inductor_mapping(record, inductor_mapping or {})
    record.wrapper_text = capture.wrapper_text
    record.inductor_mapping = inductor_mapping
    splices = _subgraphs(record, capture, children)
    if capture.wrapper_language == "cpp":  # AOTInductor's or cpp_wrapper mode's C++ wrapper
        from kernelscope.engine import cpp_wrapper_links

        cpp_wrapper_links.link_cpp_wrapper(record, capture, _capture_nodes_by_handle(capture, inductor_mapping or {}),
                                           _kernel_lines)
    else:
        _link_wrapper_and_kernels(record, capture, inductor_mapping or {}, splices)
    kernel_parts.add_parts(record, capture, pre_grad)
    if capture.parent is not None:
        _keep_own_nodes(record)
    _add_distributed(record, capture, pre_grad, distributed)
    return record


def _add_distributed(record: GraphRecord, capture: GraphCapture, pre_grad: PreGradCapture | None,
                     distributed: DistributedProbes | None) -> None:
    """Collectives (with the passes that moved them in their nodes' lineage) and, for a
    part of a graph DDP's optimizer split, which part (see engine/collectives.py)."""
    gm = capture.post_grad_gm
    group_sizes = distributed.group_sizes if distributed is not None else {}
    record.collectives = collectives.graph_collectives(gm, record.post_grad_nodes, pre_grad.gm if pre_grad else None,
                                                       group_sizes, backward=capture.is_backward)
    if record.collectives:
        collectives.add_moves(
            record.post_grad_nodes,
            distributed.moves_of(gm) if distributed is not None else {},
            collectives.scheduler_moves(gm, capture.wrapper_regions),
            distributed.scheduler_passes_of(gm) if distributed is not None else [],
        )
    if distributed is not None:
        record.split = distributed.split_of(gm)


def _subgraphs(record: GraphRecord, capture: GraphCapture,
               children: Sequence[tuple[GraphCapture, GraphRecord]]) -> list[tuple[subgraphs.Splice, list]]:
    """Describe each child subgraph and find its code spliced into this graph's wrapper."""
    if not children:
        return []
    sites = subgraphs.call_sites(capture.post_grad_gm, capture.name)
    by_name = {node.name: node for node in record.post_grad_nodes}
    found = []
    for child_capture, child in children:
        name = child_capture.name or ""
        child.subgraph = subgraphs.describe(name, record, sites.get(name, []), child)
        call_site = by_name.get(sites[name][0].node) if sites.get(name) else None
        if subgraphs.lowered_from(call_site):  # a scan's or map's ops, retraced without their lines
            _lowered_sources(capture.post_grad_gm, child, call_site)
        spliced = subgraphs.splice(capture.wrapper_text, child)
        if spliced is not None:
            found.append((spliced, sites.get(name, [])))
    return found


def _lowered_sources(parent_gm, child: GraphRecord, call_site: FxNode) -> None:
    """The lines of a while_loop subgraph Inductor made from a `scan` or `map`: its ops'
    own (from the subgraph the op was given); the loop's scaffolding (the step index, its
    bounds checks, the slices in and out) takes the `scan(...)`/`map(...)` line."""
    subgraphs.restore_lowered_sources(parent_gm, child, call_site, fx_nodes.skip_prefixes())
    if call_site.source is None:
        return
    loop = f"the {subgraphs.lowered_from(call_site)}'s loop (Inductor rewrote it as a while_loop)"
    for node in child.post_grad_nodes:
        if node.op == "call_function" and (node.source is None or node.source_via.startswith("gradient of")):
            _borrow_source(node, call_site, loop)


# -- FX nodes -------------------------------------------------------------------


def _pre_grad_nodes(pre_grad: PreGradCapture, skip_prefixes) -> list[FxNode]:
    lines = node_lines(pre_grad.text)
    nodes = [
        fx_nodes.to_fx_node(n["name"], n["op"], n["target"], n["stack_trace"], lines, skip_prefixes,
                            n.get("nn_module_stack"))
        for n in pre_grad.gm
    ]
    for node in nodes:
        fx_nodes.add_callers(node, pre_grad.callers, skip_prefixes)
    return nodes


def _pre_grad_from_inductor_mapping(record: GraphRecord, mapping: dict) -> None:
    """Post-grad nodes whose FX provenance does not reach the pre-grad graph (e.g. a
    weight transposed for the backward while AOTAutograd partitions the joint graph)
    take the pre-grad nodes Inductor's own mapping names (`postToPre`), else those of
    the same source line in the same module instance (as the TORCH_TRACE importer does)."""
    post_to_pre = mapping.get("postToPre") if isinstance(mapping.get("postToPre"), dict) else {}
    pre_names = {node.name for node in record.pre_grad_nodes}
    by_line: dict[tuple, list[str]] = {}
    for pre in record.pre_grad_nodes:
        if pre.source is not None and pre.op not in ("placeholder", "output"):
            by_line.setdefault((pre.source.file, pre.source.line, pre.module_path), []).append(pre.name)
    for node in record.post_grad_nodes:
        if node.op != "call_function" or node.from_pre_grad:
            continue
        named = {str(name) for name in post_to_pre.get(node.name) or () if str(name) in pre_names}
        if not named and node.source is not None:
            named = set(by_line.get((node.source.file, node.source.line, node.module_path), ()))
        node.from_pre_grad = sorted(named)


def pre_grad_ancestors(node, pre_grad_graph_id: int) -> list[str]:
    """Names of the pre-grad nodes a post-grad node was derived from (FX from_node)."""
    found: list[str] = []
    pending = list(node.meta.get("from_node") or ())
    seen = set()
    while pending:
        source = pending.pop()
        key = (source.name, source.graph_id)
        if key in seen:
            continue
        seen.add(key)
        if source.graph_id == pre_grad_graph_id and source.name:
            if source.name not in found:
                found.append(source.name)
            continue
        pending.extend(source.from_node or ())
    return sorted(found)


def _post_grad_nodes(capture, pre_grad, forward_by_seq_nr, skip_prefixes):
    gm = capture.post_grad_gm
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    lines = node_lines(text)
    nodes: list[FxNode] = []
    for node in gm.graph.nodes:
        record = fx_nodes.to_fx_node(
            node.name, node.op, fx_nodes.target_name(node.target),
            node.meta.get("stack_trace"), lines, skip_prefixes,
            # AOTAutograd copies a backward op's forward module stack under its own key.
            node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack"),
        )
        record.lineage = fx_nodes.pass_lineage(node.meta.get("from_node"))
        record.recompute = recompute.reason(node, capture.is_backward)
        if pre_grad is not None:
            fx_nodes.add_callers(record, pre_grad.callers, skip_prefixes)
        if pre_grad is not None:
            record.from_pre_grad = pre_grad_ancestors(node, pre_grad.graph_id)
        seq_nr = node.meta.get("seq_nr")
        forward = forward_by_seq_nr.get(seq_nr) if capture.is_backward else None
        if forward is not None and not record.from_pre_grad:
            record.from_pre_grad = list(forward.from_pre_grad)
        if record.source is None and forward is not None and forward.source is not None:
            _borrow_source(record, forward, f"gradient of forward node {forward.name}")
        elif forward is not None and not record.module_path:
            record.module_path, record.module_class = forward.module_path, forward.module_class
        if not capture.is_backward and seq_nr is not None and record.op == "call_function":
            forward_by_seq_nr.setdefault(seq_nr, record)
        nodes.append(record)
    _borrow_sources_from_neighbours(gm, nodes)
    if pre_grad is not None:
        _modules_from_pre_grad(nodes, pre_grad)
    return text, nodes


def _modules_from_pre_grad(nodes: list[FxNode], pre_grad: PreGradCapture) -> None:
    """A post-grad node whose own metadata names no module instance (made by a pass,
    or a backward op without a forward twin) takes the one of the pre-grad node it
    came from, when the source line agrees."""
    pre_nodes = {node["name"]: node for node in pre_grad.gm}
    for record in nodes:
        if record.module_path or record.op != "call_function":
            continue
        for name in record.from_pre_grad:
            pre = pre_nodes.get(name)
            path, module_class = fx_nodes.module_instance(pre.get("nn_module_stack") if pre else None)
            if path:
                record.module_path, record.module_class = path, module_class
                break


def _borrow_sources_from_neighbours(gm, nodes: list[FxNode]) -> None:
    """A node made by a pass (e.g. softmax's online prologue, a scale computed from
    symbolic sizes) may lack a stack trace; the ops it was made for (its users), or
    else the ops it was made from (its inputs), still have one. Users are asked first
    and until nothing changes, so a chain of such nodes takes the line of the op that
    consumes it; only nodes no user leads to borrow from their inputs."""
    by_name = {node.name: node for node in nodes}

    def borrow(neighbours_of) -> None:
        changed = True
        while changed:
            changed = False
            for fx_node in gm.graph.nodes:
                record = by_name[fx_node.name]
                if record.source is not None or record.op != "call_function":
                    continue
                for neighbour in neighbours_of(fx_node):
                    other = by_name.get(neighbour.name)
                    if other is not None and other.source is not None and other.op == "call_function":
                        _borrow_source(record, other, f"made by a pass from {other.name}")
                        if not record.from_pre_grad:
                            record.from_pre_grad = list(other.from_pre_grad)
                        changed = True
                        break

    borrow(lambda fx_node: fx_node.users)
    borrow(lambda fx_node: fx_node.all_input_nodes)


def _borrow_source(record: FxNode, other: FxNode, via: str) -> None:
    """Give `record` the source line, call stack and module instance of `other`."""
    record.source, record.source_via = other.source, via
    record.stack = list(other.stack) or ([other.source] if other.source else [])
    if not record.module_path:
        record.module_path, record.module_class = other.module_path, other.module_class


# -- kernels and wrapper lines ----------------------------------------------------


def _kernel_lines(source: str, capture: KernelLineCapture, nodes: list[str],
                  user_defined: bool = False) -> list[LineOrigin]:
    """Each body line with the node the probe saw produce it, else the kernel's whole set
    (in a foreach/combo kernel: the set of the sub-kernel whose block holds the line)."""
    shared_reason = USER_KERNEL_REASON if user_defined else SHARED_REASON if capture.nodes else KERNEL_LEVEL_REASON
    rows: list[LineOrigin] = []
    body_start = wrapper_code.kernel_body_start(source)
    if not body_start:
        return rows
    part: int | None = None  # the combo kernel's sub-kernel block the line is in
    # a template's own code computes its template node (one per reuse of the kernel)
    template_nodes = dict.fromkeys(each.template_node for each in [capture, *capture.reuses] if each.template_node)
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if number < body_start or not stripped:
            continue
        if capture.parts:
            part = wrapper_code.combo_block(stripped, part)
        target = wrapper_code.assignment_target(stripped)
        origins = [origin for origin in capture.origins(stripped) or
                   (capture.origins("=" + target) if target else []) if origin[0]]
        if origins:
            producers = list(dict.fromkeys(origin[0] for origin in origins))  # one per reuse of the kernel
            rows.append(LineOrigin(number, line, producers, _kernel_reason(stripped, origins[0][1])))
        elif template_nodes:
            rows.append(LineOrigin(number, line, list(template_nodes), TEMPLATE_REASON))
        else:
            in_part = capture.parts[part] if part is not None and part < len(capture.parts) else []
            rows.append(LineOrigin(number, line, list(in_part or nodes), shared_reason))
    return rows


def _kernel_reason(stripped: str, probe_reason: str) -> str:
    if "tl.load(" in stripped:
        return "loads input of"
    if stripped.startswith("tl.store("):
        return "stores result of"
    return probe_reason


def _inductor_nodes_by_handle(mapping: dict) -> dict[tuple[str, int], list[str]]:
    result = {}
    for key, nodes in (mapping.get("cppCodeToPost") or {}).items():
        name, _, handle = key.rpartition(":")
        if handle.isdigit():
            result[(name, int(handle))] = list(nodes)
    return result


def _capture_nodes_by_handle(capture: GraphCapture, mapping: dict) -> dict[tuple[str, int], list[str]]:
    """Inductor's kernel -> nodes records of this graph, from the trace and from its codegen."""
    return _inductor_nodes_by_handle(
        {"cppCodeToPost": {**(mapping.get("cppCodeToPost") or {}), **capture.inductor_kernel_nodes}})


def _link_wrapper_and_kernels(record: GraphRecord, capture: GraphCapture, mapping: dict,
                              splices: list[tuple[subgraphs.Splice, list]]) -> None:
    """Kernels and wrapper lines. A subgraph's code spliced into this wrapper is the
    subgraph's: its kernels are listed under it, and this copy of its lines links to the
    higher-order op nodes that call it."""
    layout = wrapper_code.read_layout(capture.wrapper_text, capture.name or "call")
    wrapper_lines = capture.wrapper_text.splitlines()
    inductor_by_handle = _capture_nodes_by_handle(capture, mapping)
    kernels: dict[str, Kernel] = {}

    # Triton kernels: their own lines, and the same lines inside the wrapper.
    attributable = 0
    # Inductor's kernel-level sets stand in where the probes saw nothing (probes off).
    inductor_by_kernel = {
        name: inductor_by_handle[(name, handle)]
        for name, handle in layout.handles.values() if (name, handle) in inductor_by_handle
    }
    # The call body: each scheduler node opened a region of lines (wrapper_regions probe).
    call_end = layout.call_end or len(wrapper_lines)
    region_nodes = wrapper_code.region_of_each_line(sorted(capture.wrapper_regions), call_end)
    launched_by = _launching_nodes(wrapper_lines, layout.call_start, call_end, region_nodes)
    by_variable: dict[str, Kernel] = {}
    # a subgraph's C++ kernel is defined among this wrapper's kernels, outside its code's splice
    child_cpp = {kernel.name: (spliced, sites) for spliced, sites in splices
                 for kernel in spliced.child.kernels if kernel.kind == "cpp"}
    for block in layout.kernel_blocks:
        if any(spliced.holds(block.first_line) for spliced, _ in splices):
            continue
        if block.language == "cpp" and block.name in child_cpp and block.name not in capture.cpp_kernels:
            spliced, sites = child_cpp[block.name]
            attributable += _add_subgraph_kernel_lines(record, block, spliced, sites, wrapper_lines)
            continue
        if block.language == "cpp":
            kernels[block.name] = by_variable[block.name] = _cpp_kernel(block, capture, inductor_by_kernel)
            attributable += _add_definition_lines(record, block, kernels[block.name].lines, wrapper_lines)
            continue
        probe = capture.kernels.get(block.name, KernelLineCapture())
        nodes = list(probe.nodes) or list(inductor_by_kernel.get(block.launched_as or block.name, []))
        if block.user_defined and not nodes:  # a program's own kernel: the node that launches it
            nodes = launched_by.get(block.launched_as, [])
        lines = _kernel_lines(block.source, probe, nodes, block.user_defined)
        # a FlexAttention template also computes the nodes of the score_mod/mask_mod it inlines
        nodes = list(dict.fromkeys(nodes + [name for row in lines for name in row.nodes if in_subgraph(name)]))
        kind = "template" if block.name.startswith("triton_tem_") else "triton"  # max-autotune GEMM templates
        # a program's kernel compiled twice (two specializations) is listed by each variable after the first
        name = block.launched_as if block.user_defined and block.name in kernels else block.name
        kernels[name] = by_variable[block.launched_as or block.name] = Kernel(name, kind, block.source, nodes, lines)
        if block.user_defined:  # its lines linked to the user's kernel source, its configs
            kernels[name].user = user_kernels.describe(block.source, nodes, capture.post_grad_gm,
                                                         capture.triton_kernels)
        attributable += _add_definition_lines(record, block, lines, wrapper_lines)
    for spliced, sites in splices:
        rows, count = subgraphs.spliced_lines(spliced, sites)
        record.wrapper_lines += rows
        attributable += count

    extern_count: dict[str, int] = {}
    for number in range(layout.call_start + 1, call_end + 1):
        line = wrapper_lines[number - 1]
        if not line.strip():
            continue
        # `computes` is what the scheduler node makes: for an extern call its one
        # node, not every node Inductor folded into its origins (e.g. a fused input).
        computes = region_nodes.get(number)
        launched = by_variable.get(wrapper_code.kernel_launch(line) or "")
        named = launched or by_variable.get(wrapper_code.provenance_handle(line) or "")
        if named is not None and named.kind == "cpp":
            # a C++ kernel is called (after its provenance comment) once its group of scheduler
            # nodes is flushed, in the last node's region: the call computes every node of the kernel
            computes = named.nodes
        if computes is not None:
            attributable += 1
            record.wrapper_lines.append(LineOrigin(number, line, list(computes), wrapper_code.line_reason(line)))
        handle = layout.handles.get(number)
        inductor_nodes = inductor_by_handle.get(handle) if handle else None
        if launched is not None:
            launched.wrapper_lines.append(number)
            if launched.inductor_nodes is None:
                launched.inductor_nodes = inductor_nodes
            elif inductor_nodes:  # a kernel reused by another layer: each launch has its own nodes
                known = launched.inductor_nodes
                known += [node for node in inductor_nodes if node not in known]
        extern = wrapper_code.extern_call(line)
        if extern:
            ordinal = extern_count.get(extern, 0)
            extern_count[extern] = ordinal + 1
            name = f"{extern}#{ordinal}"
            kernels[name] = Kernel(
                name, "extern", "", list(computes if computes is not None else inductor_nodes or []),
                inductor_nodes=inductor_nodes, wrapper_lines=[number],
            )
    record.wrapper_attributable = attributable
    record.kernels = list(kernels.values())


def _cpp_kernel(block: wrapper_code.KernelBlock, capture: GraphCapture,
                inductor_by_kernel: dict[str, list[str]]) -> Kernel:
    """A C++ kernel of Inductor's CPU backend, its lines linked (engine/cpp_kernels.py)."""
    probe = capture.cpp_kernels.get(block.name)
    nodes = list(probe.nodes) if probe else list(inductor_by_kernel.get(block.name, []))
    if probe is None:  # probes off, or a C++ template (max-autotune's GEMM): every line links to the whole set
        lines = _body_lines(block.source, nodes, CPP_KERNEL_LEVEL_REASON)
    else:
        lines = cpp_kernels.kernel_lines(block.source, probe, nodes)
    return Kernel(block.name, "cpp", block.source, nodes, lines)


def _add_subgraph_kernel_lines(record: GraphRecord, block: wrapper_code.KernelBlock, spliced: subgraphs.Splice,
                               sites: list, wrapper_lines: list[str]) -> int:
    """A subgraph's C++ kernel defined in this wrapper: listed under the subgraph, its lines
    here linked to the higher-order op nodes that call the subgraph; returns how many."""
    name = spliced.child.subgraph.name if spliced.child.subgraph else ""
    rows = _body_lines(block.source, [site.node for site in sites], f"subgraph {name}")
    return _add_definition_lines(record, block, rows, wrapper_lines)


def _body_lines(source: str, nodes: list[str], reason: str) -> list[LineOrigin]:
    """Every non-blank line of a kernel's body (after its signature), each linked to `nodes`."""
    body_start = wrapper_code.kernel_body_start(source)
    return [LineOrigin(number, line, list(nodes), reason) for number, line in enumerate(source.splitlines(), 1)
            if number >= body_start and line.strip()]


def _add_definition_lines(record: GraphRecord, block: wrapper_code.KernelBlock, lines: list[LineOrigin],
                          wrapper_lines: list[str]) -> int:
    """The kernel's lines as the wrapper holds them (its definition); returns how many."""
    for row in lines:
        wrapper_line = block.first_line + row.line - 1
        record.wrapper_lines.append(
            LineOrigin(wrapper_line, wrapper_lines[wrapper_line - 1], row.nodes,
                       f"defines kernel {block.name}: {row.reason}")
        )
    return len(lines)


def _launching_nodes(wrapper_lines: list[str], call_start: int, call_end: int,
                     region_nodes: dict[int, list[str]]) -> dict[str, list[str]]:
    """Kernel variable -> the nodes of the scheduler nodes whose regions launch it."""
    launched_by: dict[str, list[str]] = {}
    for number in range(call_start + 1, call_end + 1):
        launched = wrapper_code.kernel_launch(wrapper_lines[number - 1])
        if launched and number in region_nodes:
            known = launched_by.setdefault(launched, [])
            known += [node for node in region_nodes[number] if node not in known]
    return launched_by


def _keep_own_nodes(record: GraphRecord) -> None:
    """A subgraph's kernels carry, among their origins, the parent's higher-order op node
    and its operands (`cond`, `gt`): names of another graph, dropped where the line or
    kernel keeps nodes of its own."""
    own = {node.name for node in record.post_grad_nodes}

    def kept(names: list[str]) -> list[str]:
        mine = [name for name in names if name in own]
        return mine or names

    for kernel in record.kernels:
        kernel.nodes = kept(kernel.nodes)
        if kernel.inductor_nodes is not None:
            kernel.inductor_nodes = kept(kernel.inductor_nodes)
        for origin in kernel.lines:
            origin.nodes = kept(origin.nodes)
    for origin in record.wrapper_lines:
        origin.nodes = kept(origin.nodes)
