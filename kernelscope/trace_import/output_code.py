"""Kernels and wrapper-line links from logged output code (`inductor_output_code`).

Where each kernel's post-grad nodes come from, best first:
1. Inductor's own mapping (`cppCodeToPost`, keyed `kernel:debug_handle`), matched
   through the `# [Provenance debug handles] name:N` comment above each launch;
2. for a Triton kernel, the `# Source node to ATen node mapping:` comment above
   its definition (`h_1 => add, erf, mul`): the same node set, and present in
   backward graphs, whose Inductor mapping is empty;
3. for an extern call, the post-grad node calling that op which the
   `# Topologically Sorted Source Nodes: [...]` comment names or feeds.
Lines inside kernels carry no provenance in a log; only the wrapper's launch and
extern-call lines (and the comments above them) are linked, to the kernel's nodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernelscope.compile_text import wrapper_code
from kernelscope.run_record import FxNode, Kernel, LineOrigin

_ATEN_MAPPING_HEADER = "# Source node to ATen node mapping:"
_ATEN_MAPPING_LINE = re.compile(r"^#\s+(\w*)\s*=>\s*(.*)$")
_SORTED_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[([^\]]*)\]")
_AOT_ID = re.compile(r"^# AOT ID: \['\d+_(forward|backward|inference)'\]")
_DEVICE_STR = re.compile(r"device_str='(\w+)'")
_EMPTY_STRIDED = re.compile(r"\bempty_strided_(cuda|xpu|mtia|cpu)\(")


@dataclass
class OutputCode:
    kernels: list[Kernel] = field(default_factory=list)
    wrapper_lines: list[LineOrigin] = field(default_factory=list)
    wrapper_attributable: int = 0
    pre_grad_of_post: dict[str, list[str]] = field(default_factory=dict)  # from the ATen-mapping comments
    unmatched_kernels: list[str] = field(default_factory=list)  # kernels with no node set at all


def graph_kind(wrapper_text: str) -> str | None:
    """`forward`, `backward` or `inference` from the wrapper's first line, None if absent."""
    match = _AOT_ID.match(wrapper_text)
    return match.group(1) if match else None


def device_of(wrapper_text: str) -> str | None:
    match = _DEVICE_STR.search(wrapper_text) or _EMPTY_STRIDED.search(wrapper_text)
    return match.group(1) if match else None


def read_output_code(text: str, mapping: dict | None, post_nodes: list[FxNode],
                     inputs: dict[str, list[str]]) -> OutputCode:
    layout = wrapper_code.read_layout(text)
    lines = text.splitlines()
    by_handle = _nodes_by_handle(mapping or {})
    post_names = {node.name for node in post_nodes}
    targets = {node.name: node.target for node in post_nodes}
    result = OutputCode()

    kernels: dict[str, Kernel] = {}
    comment_nodes: dict[str, list[str]] = {}
    for block in layout.kernel_blocks:
        nodes, pre_of_post = _aten_mapping_above(lines, block.first_line - 2, post_names)
        comment_nodes[block.name] = nodes
        for post, pre in pre_of_post.items():
            result.pre_grad_of_post.setdefault(post, [])
            for name in pre:
                if name not in result.pre_grad_of_post[post]:
                    result.pre_grad_of_post[post].append(name)
        kernels[block.name] = Kernel(block.name, "triton", block.source, list(nodes))

    call_end = layout.call_end or len(lines)
    extern_count: dict[str, int] = {}
    for number in range(layout.call_start + 1, call_end + 1) if layout.call_start else ():
        line = lines[number - 1]
        if not line.strip():
            continue
        result.wrapper_attributable += 1
        handle = layout.handles.get(number)
        launched = wrapper_code.kernel_launch(line)
        extern = wrapper_code.extern_call(line)
        if launched in kernels:
            kernel = kernels[launched]
            kernel.wrapper_lines.append(number)
            inductor = by_handle.get(handle) if handle else None
            if inductor is not None and kernel.inductor_nodes is None:
                kernel.inductor_nodes = inductor
                kernel.nodes = list(inductor)
        elif extern:
            ordinal = extern_count.get(extern, 0)
            extern_count[extern] = ordinal + 1
            inductor = by_handle.get(handle) if handle else None
            nodes = list(inductor) if inductor is not None else _extern_nodes(
                extern, _sorted_nodes_above(lines, number), targets, inputs)
            kernel = Kernel(f"{extern}#{ordinal}", "extern", "", nodes,
                            inductor_nodes=inductor, wrapper_lines=[number])
            kernels[kernel.name] = kernel
        else:
            continue
        result.wrapper_lines.extend(_call_site_lines(lines, number, kernel.nodes))

    result.kernels = list(kernels.values())
    result.unmatched_kernels = [k.name for k in result.kernels if not k.nodes]
    result.wrapper_lines.sort(key=lambda origin: origin.line)
    return result


def _nodes_by_handle(mapping: dict) -> dict[tuple[str, int], list[str]]:
    found = {}
    table = mapping.get("cppCodeToPost")
    for key, nodes in (table.items() if isinstance(table, dict) else ()):
        name, _, handle = str(key).rpartition(":")
        if handle.isdigit() and isinstance(nodes, list):
            found[(name, int(handle))] = [str(node) for node in nodes]
    return found


def _aten_mapping_above(lines: list[str], def_index: int, post_names: set[str]):
    """Post-grad nodes listed by the comment block above a kernel definition
    (`def_index` is the 0-based index of `name = async_compile.triton(...)`)."""
    index = def_index - 1
    while index >= 0 and lines[index].startswith("#"):
        index -= 1
    block = lines[index + 1: def_index]
    nodes: list[str] = []
    pre_of_post: dict[str, list[str]] = {}
    inside = False
    for line in block:
        if line.startswith(_ATEN_MAPPING_HEADER):
            inside = True
            continue
        match = _ATEN_MAPPING_LINE.match(line) if inside else None
        if not match:
            inside = inside and line.startswith("#   ")
            continue
        source, targets = match.group(1), [name.strip() for name in match.group(2).split(",")]
        for name in targets:
            if name and name not in nodes:
                nodes.append(name)
            if source and source not in post_names and name:
                pre_of_post.setdefault(name, []).append(source)
    return nodes, pre_of_post


def _sorted_nodes_above(lines: list[str], number: int) -> list[str]:
    index = number - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        match = _SORTED_NODES.search(lines[index])
        if match:
            return [name.strip() for name in match.group(1).split(",") if name.strip()]
        index -= 1
    return []


def _extern_nodes(extern: str, listed: list[str], targets: dict[str, str],
                  inputs: dict[str, list[str]]) -> list[str]:
    """The post-grad node an extern call computes, when Inductor's mapping has none."""
    parts = extern.split(".")
    parts = parts[2:] if parts[:2] == ["torch", "ops"] else parts
    op = parts[1] if len(parts) > 1 else parts[0]  # extern_kernels.mm, aten.mm[.default]
    calls_op = [name for name, target in targets.items() if target.split(".")[1:2] == [op]]
    named = [name for name in calls_op if name in listed]
    if named:
        return named
    fed = [name for name in calls_op if any(source in listed for source in inputs.get(name, ()))]
    return fed if len(fed) == 1 else []


def _call_site_lines(lines: list[str], number: int, nodes: list[str]) -> list[LineOrigin]:
    """The call line and the comments right above it that describe it."""
    if not nodes:
        return []
    found = [LineOrigin(number, lines[number - 1], list(nodes), wrapper_code.line_reason(lines[number - 1]))]
    index = number - 2
    while index >= 0:
        stripped = lines[index].strip()
        if stripped.startswith("# Topologically Sorted Source Nodes") or stripped.startswith(
                "# [Provenance debug handles]"):
            found.append(LineOrigin(index + 1, lines[index], list(nodes), wrapper_code.line_reason(lines[index])))
        elif not stripped.startswith("raw_stream") and not stripped.startswith("#"):
            break
        index -= 1
    return found
