"""Link a C++ wrapper's lines to post-grad nodes: AOTInductor's model (`run_impl`) and
`cpp_wrapper` mode's entry, as links.py links the Python wrapper.

The same probe serves both: every scheduler node opens a wrapper region (probes.py's
WrapperRegion, kept in the wrapper's line map), so a body line takes the nodes its region
computes — allocations, the sizes and strides they use, extern calls (`aoti_torch_cpu_mm_out`),
frees — with the same rule for what counts (coverage.py): lines inside a region are the
attributable ones; the body's set-up (unpacking inputs and constants) and AOTInductor's
fixed runtime code (its C interface, the model's constructor, constants' metadata) serve no
node and are left out of the count, as the Python wrapper's imports and header are.

One difference from the Python wrapper: Inductor's C++ scheduling buffers a fused CPU kernel
and writes its launch when it flushes, after the next scheduler node has opened its region.
Such a displaced launch (its kernel computes none of the region's nodes) takes its kernel's
nodes (Inductor's own kernel mapping by debug handle, else the probe's), with the comments
written just before it and the frees just after it.

The `cpp_wrapper` mode's wrapper is a Python module holding the C++ as a string: the C++ is
kept (what Inductor compiles), its lines numbered as the C++ file's.
"""
from __future__ import annotations

from kernelscope.compile_text import cpp_wrapper_code as cpp
from kernelscope.compile_text import wrapper_code
from kernelscope.engine import cpp_kernels
from kernelscope.engine.probes import GraphCapture
from kernelscope.run_record import SHARED_LINE_REASON_PREFIX, GraphRecord, Kernel, LineOrigin

SUBGRAPH_REASON = "in a subgraph it calls:"
CPP_KERNEL_REASON = (f"{SHARED_LINE_REASON_PREFIX} in this C++ kernel (kernel-level: its line-level links are "
                     "the C++ kernels' own)")


def link_cpp_wrapper(record: GraphRecord, capture: GraphCapture, inductor_by_handle: dict[tuple[str, int], list[str]],
                     kernel_lines) -> None:
    """Fill `record`'s wrapper text (the C++), wrapper lines, attributable count and kernels.
    `inductor_by_handle`: Inductor's kernel -> nodes mapping by (name, debug handle);
    `kernel_lines(source, probe, nodes)`: links.py's line linker for a Triton kernel."""
    text, offset = cpp.cpp_part(capture.wrapper_text)
    record.wrapper_text, record.wrapper_language = text, "cpp"
    lines = text.splitlines()
    names = _kernel_names(text, capture, inductor_by_handle)
    layout = cpp.read_layout(text, names)
    regions = sorted((start - offset, origins, computes) for start, origins, computes in capture.wrapper_regions)
    region_nodes = wrapper_code.region_of_each_line(regions, layout.body_end)
    calling = _subgraph_call_sites(regions, {start - offset for start in capture.inlined_regions}, layout.body_end)
    kernel_nodes = _nodes_of_kernels(names, capture, inductor_by_handle)
    for number, name in layout.launches.items():  # a kernel a subgraph launches: its call site's nodes
        if number in calling:
            kernel_nodes[name] = calling[number]
    # each launch its own nodes, by its debug handle (a kernel reused by every layer)
    launch_nodes = {number: (calling.get(number) or inductor_by_handle.get(layout.handles.get(number))
                             or kernel_nodes.get(name, []))
                    for number, name in layout.launches.items()}
    moved = _displaced_launches(lines, layout, regions, region_nodes, launch_nodes)

    attributable = 0
    for number in range(layout.body_start + 1, layout.body_end):
        line = lines[number - 1]
        nodes = moved.get(number, region_nodes.get(number))
        if not line.strip() or nodes is None:
            continue
        attributable += 1
        reason = cpp.line_reason(line, names)
        if number in calling:  # a subgraph's code inlined in the body: its call site's nodes
            nodes, reason = calling[number], f"{SUBGRAPH_REASON} {reason}"
        record.wrapper_lines.append(LineOrigin(number, line, list(nodes), reason))
    for number, name in sorted(layout.declarations.items()):
        if lines[number - 1].strip() and kernel_nodes.get(name):
            attributable += 1
            record.wrapper_lines.append(LineOrigin(number, lines[number - 1], list(kernel_nodes[name]),
                                                   f"declares or sets up kernel {name}"))
    for definition in layout.definitions:
        for number in range(definition.first_line, definition.last_line + 1):
            if lines[number - 1].strip() and kernel_nodes.get(definition.name):
                attributable += 1
                record.wrapper_lines.append(LineOrigin(number, lines[number - 1], list(kernel_nodes[definition.name]),
                                                       f"defines kernel {definition.name}: {CPP_KERNEL_REASON}"))
    record.kernels = _kernels(lines, layout, capture, names, kernel_nodes, region_nodes, inductor_by_handle,
                              kernel_lines)
    embedded = {block.name: block for block in layout.triton_sources}
    for kernel in record.kernels:  # a Triton kernel's module held in the wrapper: the same lines, linked
        block = embedded.get(kernel.name)
        if kernel.kind != "triton" or block is None:
            continue
        for row in kernel.lines:
            number = block.first_line + row.line - 1
            attributable += 1
            record.wrapper_lines.append(LineOrigin(number, lines[number - 1], list(row.nodes),
                                                   f"defines kernel {kernel.name}: {row.reason}"))
    record.wrapper_lines.sort(key=lambda origin: origin.line)
    record.wrapper_attributable = attributable
    for kernel in record.kernels:  # a displaced launch also names the node its scheduler node computes
        for number in kernel.wrapper_lines:
            if number not in calling:  # (a subgraph's launch: its call site's nodes already)
                kernel.nodes += [node for node in moved.get(number, ()) if node not in kernel.nodes]


def _kernel_names(text: str, capture: GraphCapture, inductor_by_handle: dict) -> set[str]:
    """The kernels Inductor generated for this graph: declared or defined in the wrapper or
    its kernel code, seen by the Triton probes, or named by a debug handle (not extern calls)."""
    names = cpp.declared_kernels(text) | cpp.declared_kernels(capture.kernel_code) | set(capture.kernels)
    names |= {name for name, _ in inductor_by_handle if not cpp.is_extern(name)}
    return names


def _nodes_of_kernels(names: set[str], capture: GraphCapture, inductor_by_handle: dict) -> dict[str, list[str]]:
    """Kernel name -> its post-grad nodes: Inductor's own mapping (every launch of it), else
    the probe's kernel-level set."""
    found: dict[str, list[str]] = {}
    for (name, _), nodes in inductor_by_handle.items():
        if name in names:
            known = found.setdefault(name, [])
            known += [node for node in nodes if node not in known]
    for name, probe in capture.kernels.items():
        if not found.get(name) and probe.nodes:
            found[name] = list(probe.nodes)
    return found


def _displaced_launches(lines: list[str], layout: cpp.CppWrapperLayout, regions: list[tuple[int, list, list]],
                        region_nodes: dict[int, list[str]], launch_nodes: dict[int, list[str]]) -> dict[int, list[str]]:
    """Lines of a launch written after the next node's region opened (see the module
    docstring) -> its kernel's nodes and the nodes its own scheduler node computes (the last
    earlier region whose origins share a node with the kernel's): the launch, the comments
    just before it, the frees just after it."""
    moved: dict[int, list[str]] = {}
    for number, kernel_nodes in launch_nodes.items():
        if not kernel_nodes or set(kernel_nodes) & set(region_nodes.get(number, ())):
            continue
        own = next((computes for start, origins, computes in reversed(regions)
                    if start < number and set(origins) & set(kernel_nodes)), [])
        nodes = list(dict.fromkeys([*kernel_nodes, *own]))
        moved[number] = nodes
        before = number - 1
        while before > layout.body_start and cpp.handle_comment(lines[before - 1]):
            moved[before] = list(nodes)
            before -= 1
        after = number + 1
        while after < layout.body_end and cpp.is_free(lines[after - 1]):
            moved[after] = list(nodes)
            after += 1
    return moved


def _kernels(lines: list[str], layout: cpp.CppWrapperLayout, capture: GraphCapture, names: set[str],
             kernel_nodes: dict, region_nodes: dict[int, list[str]], inductor_by_handle: dict,
             kernel_lines) -> list[Kernel]:
    """The graph's kernels, in launch order: each generated kernel with its launch lines (its
    source: its definition in the wrapper or the kernel code beside it, or for a Triton
    kernel the module the probe saw defined) and each extern call."""
    sources = {definition.name: definition.source for definition in layout.definitions + layout.triton_sources}
    kernel_code = cpp.read_layout(capture.kernel_code, names).definitions if capture.kernel_code else []
    sources.update({definition.name: definition.source for definition in kernel_code if definition.name not in sources})
    kernels: dict[str, Kernel] = {}
    extern_count: dict[str, int] = {}
    for number in range(layout.body_start + 1, layout.body_end):
        line = lines[number - 1]
        handle = layout.handles.get(number)
        inductor_nodes = inductor_by_handle.get(handle) if handle else None
        name = layout.launches.get(number)
        if name is not None:
            kernel = kernels.get(name)
            if kernel is None:
                kernel = kernels[name] = _generated_kernel(name, sources, capture, kernel_nodes, kernel_lines)
            kernel.wrapper_lines.append(number)
            if inductor_nodes:
                kernel.inductor_nodes = list(dict.fromkeys((kernel.inductor_nodes or []) + inductor_nodes))
            continue
        extern = cpp.extern_call(line)
        if extern:
            ordinal = extern_count.get(extern, 0)
            extern_count[extern] = ordinal + 1
            computes = region_nodes.get(number)
            kernels[f"{extern}#{ordinal}"] = Kernel(
                f"{extern}#{ordinal}", "extern", "", list(computes if computes is not None else inductor_nodes or []),
                inductor_nodes=inductor_nodes, wrapper_lines=[number])
    return list(kernels.values())


def _generated_kernel(name: str, sources: dict[str, str], capture: GraphCapture, kernel_nodes: dict,
                      kernel_lines) -> Kernel:
    nodes = list(kernel_nodes.get(name, []))
    probe = capture.kernels.get(name)
    source = sources.get(name, "")
    if probe is not None and (source or probe.source) and not name.startswith("cpp_"):
        # a Triton kernel, linked line by line as in a Python wrapper: its module as the wrapper
        # holds it (its lines are then the wrapper's too), else as Inductor defined it
        source = source or probe.source
        return Kernel(name, "triton", source, nodes, kernel_lines(source, probe, nodes))
    cpp_probe = capture.cpp_kernels.get(name)
    # a C++ kernel whose lines the probes saw written (cpp_kernels), unless its nodes are another
    # graph's (an inlined cond branch's kernel links, whole, to its parent's call site)
    if cpp_probe is not None and source and (not nodes or set(cpp_probe.nodes) <= set(nodes)):
        nodes = nodes or list(cpp_probe.nodes)
        rows = cpp_kernels.kernel_lines(source, cpp_probe, nodes)
        if rows:
            return Kernel(name, "cpp", source, nodes, rows)
    rows = [LineOrigin(number, line, list(nodes), CPP_KERNEL_REASON)
            for number, line in enumerate(source.splitlines(), 1) if line.strip()] if nodes else []
    return Kernel(name, "cpp", source, nodes, rows)


def _subgraph_call_sites(regions: list[tuple[int, list, list]], inlined: set[int], end: int) -> dict[int, list[str]]:
    """Lines of a region a subgraph opened (`inlined`: their first lines) -> the nodes of the last
    earlier region of this graph (the higher-order op that calls the subgraph). A C++ wrapper
    inlines a `cond` branch's code in the body (`if (buf2_scalar) { // subgraph: true_graph_0`),
    with regions of the subgraph's nodes, which no graph of the run holds."""
    calling: dict[int, list[str]] = {}
    caller: list[str] = []
    for index, (start, _origins, computes) in enumerate(regions):
        stop = regions[index + 1][0] if index + 1 < len(regions) else end
        if start not in inlined:
            caller = list(computes)
        elif caller:
            calling.update({number: caller for number in range(start, stop)})
    return calling
