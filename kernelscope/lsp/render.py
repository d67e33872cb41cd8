"""Every answer the server shows as text: hovers, code lens titles, inlay hints.

One module, so that new fields of the store's answers (module instances, frame
stacks, pass lineage) change one place. Hovers stay short on big answers: one
block per graph, kernels grouped by module instance, lists capped with "… N more",
and links (`file://…#L<line>`) instead of quoted code.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from kernelscope.lsp.index import KernelInfo, SourceLineSummary
from kernelscope.store import GraphChain, KernelRef, QueryResult, RunSummary

MAX_KERNELS_PER_GROUP = 6
MAX_GROUPS_PER_GRAPH = 4
MAX_ITEMS = 5

Link = Callable[[str, int | None], str]  # (stored path, 1-based line) -> URI with #L fragment


@dataclass
class StaleNote:
    file: str
    run_id: int
    recorded_line: int
    current_line: int


def run_label(summary: RunSummary | None, run_id: int) -> str:
    if summary is None:
        return f"run {run_id}"
    return f"run {run_id} ({summary.device}, {summary.mode})"


def graph_title(chain: GraphChain) -> str:
    return f"{chain.graph.kind} [{chain.graph.compile_id}]"


def source_hover(result: QueryResult, summary: SourceLineSummary | None, run: RunSummary | None,
                 link: Link, stale: StaleNote | None) -> str:
    """What a model source line became, per graph and module instance."""
    path = result.location.path
    lines = [f"**kernelscope** · {run_label(run, result.location.run_id)} · `{_short(path)}:{result.line}`"]
    if stale is not None:
        lines.append(_stale_text(stale, result.text))
    if result.empty:
        lines.append("\nNo compiled node comes from this line in this run.")
        return "\n".join(lines)
    if any(getattr(node, "via", "") == "call" for chain in result.graphs for node in chain.post_nodes):
        lines.append("\nthis line calls into what is listed (an outer frame of the nodes' call stacks)")
    for chain in result.graphs:
        lines.append("")
        lines += _chain_down(chain, link)
    if summary is not None and summary.fused_with:
        shown = [f"[L{line}]({link(path, line)})" for line in summary.fused_with[:MAX_ITEMS * 2]]
        more = len(summary.fused_with) - len(shown)
        lines.append("")
        lines.append("fused with " + ", ".join(shown) + (f" … {more} more" if more > 0 else ""))
    return "\n".join(lines)


def _chain_down(chain: GraphChain, link: Link) -> list[str]:
    generated = [kernel for kernel in chain.kernels if kernel.kind != "extern"]
    externs = [kernel for kernel in chain.kernels if kernel.kind == "extern"]
    head = f"**{graph_title(chain)}** — {_count(len(generated), 'kernel')}"
    if externs:
        head += f", {_count(len(externs), 'extern call')}"
    head += f" · {_count(len(chain.post_nodes), 'post-grad node')}"
    out = [head]
    module_of, class_of = _module_groups(chain)
    groups: dict[str, list[KernelRef]] = {}
    for kernel in chain.kernels:
        modules = sorted({module_of.get(name, "") for name in kernel.nodes} - {""})
        groups.setdefault(modules[0] if modules else "", []).append(kernel)
    shown_groups = list(groups.items())[:MAX_GROUPS_PER_GRAPH]
    for module, kernels in shown_groups:
        indent = ""
        if module:
            module_class = f" ({class_of[module].rsplit('.', 1)[-1]})" if class_of.get(module) else ""
            out.append(f"- `{module}`{module_class}: {_kernels_and_calls(kernels)}")
            indent = "  "
        for kernel in kernels[:MAX_KERNELS_PER_GROUP]:
            out.append(indent + "- " + _kernel_item(kernel, link))
        if len(kernels) > MAX_KERNELS_PER_GROUP:
            out.append(indent + f"- … {len(kernels) - MAX_KERNELS_PER_GROUP} more")
    hidden = len(groups) - len(shown_groups)
    if hidden > 0:
        count = sum(len(kernels) for _, kernels in list(groups.items())[MAX_GROUPS_PER_GRAPH:])
        out.append(f"- … {hidden} more module instances ({_count(count, 'kernel')})")
    if not chain.kernels and chain.post_nodes:
        ops = sorted({node.target for node in chain.post_nodes})
        out.append("- no kernel: " + ", ".join(f"`{op}`" for op in ops[:MAX_ITEMS])
                   + (f" … {len(ops) - MAX_ITEMS} more" if len(ops) > MAX_ITEMS else ""))
    return out


def _module_groups(chain: GraphChain) -> tuple[dict[str, str], dict[str, str]]:
    """node name -> the module instance it is shown under, and instance -> its class.

    Instances are cut at the depth of the shallowest one in the answer, so an outer
    line (`x = block(x)`) lists `blocks.0`, `blocks.1`, … with their submodules inside."""
    paths = [getattr(node, "module", "") or "" for node in chain.post_nodes]
    depths = [len(path.split(".")) for path in paths if path]
    depth = min(depths) if depths else 0
    module_of, class_of = {}, {}
    for node, path in zip(chain.post_nodes, paths):
        group = ".".join(path.split(".")[:depth]) if path else ""
        module_of[node.name] = group
        if path == group and getattr(node, "module_class", ""):
            class_of[group] = node.module_class
    return module_of, class_of


def _kernels_and_calls(kernels: list[KernelRef]) -> str:
    calls = sum(1 for kernel in kernels if kernel.kind == "extern")
    parts = [_count(len(kernels) - calls, "kernel")] if len(kernels) > calls else []
    return ", ".join(parts + ([_count(calls, "extern call")] if calls else []))


def _kernel_item(kernel: KernelRef, link: Link) -> str:
    if kernel.kind == "extern":
        name = kernel.name.split("#", 1)[0]
        call = kernel.calls[0] if kernel.calls else None
        where = f" · [wrapper L{call.line}]({link(call.file, call.line)})" if call else ""
        return f"`{name}` extern{where}"
    line_numbers = sorted({line.line for line in kernel.lines})
    first = line_numbers[0] if line_numbers else None
    name = f"[`{kernel.name}`]({link(kernel.file, first)})" if kernel.file else f"`{kernel.name}`"
    text = f"{name} {kernel.kind}"
    if line_numbers:
        text += f" · {_count(len(line_numbers), 'line')} ({_ranges(line_numbers)})"
    return text


def generated_hover(result: QueryResult, run: RunSummary | None, link: Link) -> str:
    """Where a line of a kernel, wrapper or graph file came from."""
    location = result.location
    where = f"`{os.path.basename(location.path)}:{result.line}`"
    graph = f" · {location.graph.kind} [{location.graph.compile_id}]" if location.graph else ""
    kernel = f" · kernel `{location.kernel}`" if location.kernel else ""
    lines = [f"**kernelscope** · {run_label(run, location.run_id)}{graph}{kernel} · {where}"]
    reasons = sorted({origin.reason for origin in result.origins})
    if reasons:
        lines.append("")
        lines.append("line: " + "; ".join(reasons[:MAX_ITEMS]) + (" …" if len(reasons) > MAX_ITEMS else ""))
    for chain in result.graphs:
        posts = chain.post_nodes
        if posts:
            lines.append("")
            for node in posts[:MAX_ITEMS]:
                lineage = getattr(node, "lineage", None) or []
                text = f"- post-grad `{node.name}` = `{node.target}`"
                if node.graph_file:
                    text = f"- post-grad [`{node.name}`]({link(node.graph_file, node.graph_line)}) = `{node.target}`"
                if lineage:
                    text += " · " + "; ".join(lineage[:2])
                elif node.source is not None and "pass" in (node.source.reason or ""):
                    text += f" · {node.source.reason}"
                lines.append(text)
            if len(posts) > MAX_ITEMS:
                lines.append(f"- … {len(posts) - MAX_ITEMS} more post-grad nodes")
        pres = chain.pre_nodes
        if pres:
            shown = ", ".join(f"`{node.name}` = `{node.target}`" for node in pres[:3])
            lines.append(f"- from pre-grad {shown}" + (f" … {len(pres) - 3} more" if len(pres) > 3 else ""))
        if location.kind == "wrapper" and chain.kernels:
            for kernel in chain.kernels[:MAX_ITEMS]:
                target = f"[`{kernel.name}`]({link(kernel.file, None)})" if kernel.file else f"`{kernel.name}`"
                lines.append(f"- {kernel.reason}: {target} ({kernel.kind})")
        if chain.sources:
            lines.append("")
            for source in chain.sources[:MAX_ITEMS]:
                function = f" in `{source.function}`" if source.function else ""
                code = f" — `{source.code.strip()}`" if source.code else ""
                lines.append(f"model: [{_short(source.file)}:{source.line}]({link(source.file, source.line)})"
                             f"{function}{code}")
            if len(chain.sources) > MAX_ITEMS:
                lines.append(f"… {len(chain.sources) - MAX_ITEMS} more source lines")
    if len(lines) == 1:
        lines.append("\nNo recorded provenance for this line.")
    return "\n".join(lines)


def _stale_text(stale: StaleNote, code: str) -> str:
    moved = f" (now line {stale.current_line})" if stale.current_line != stale.recorded_line else ""
    snippet = f": `{code.strip()}`" if code.strip() else ""
    return (f"\n⚠ **stale**: `{_short(stale.file)}` changed since run {stale.run_id}; this is recorded line "
            f"{stale.recorded_line}{moved}{snippet}, matched by its content. Compile again to update.")


def lens_title(summary: SourceLineSummary) -> str:
    """`2 kernels fw · 1 bw · 1 extern · fused with L27`."""
    by_kind: dict[str, int] = {}
    externs = 0
    for kernel in summary.kernels:
        if kernel.kind == "extern":
            externs += 1
        else:
            by_kind[kernel.graph_kind] = by_kind.get(kernel.graph_kind, 0) + 1
    parts = []
    short = {"forward": "fw", "backward": "bw", "inference": ""}
    for index, kind in enumerate(("inference", "forward", "backward")):
        if kind in by_kind:
            count = by_kind[kind]
            label = short[kind]
            if not parts:
                parts.append(f"{_count(count, 'kernel')}{' ' + label if label else ''}")
            else:
                parts.append(f"{count}{' ' + label if label else ''}")
    if externs:
        parts.append(_count(externs, "extern call"))
    if summary.fused_with:
        shown = ", ".join(f"L{line}" for line in summary.fused_with[:3])
        more = len(summary.fused_with) - 3
        parts.append(f"fused with {shown}" + (f" +{more}" if more > 0 else ""))
    return " · ".join(parts)


def kernel_lens_title(sources: list[tuple[str, int]]) -> str:
    """`from model.py:27, 31` (lines grouped by file)."""
    if not sources:
        return "no source line recorded"
    by_file: dict[str, list[int]] = {}
    for file, line in sources:
        by_file.setdefault(file, []).append(line)
    parts = []
    for file, lines in list(by_file.items())[:3]:
        shown = ", ".join(str(line) for line in lines[:6]) + (" …" if len(lines) > 6 else "")
        parts.append(f"{os.path.basename(file)}:{shown}")
    more = len(by_file) - 3
    return "from " + "; ".join(parts) + (f" (+{more} files)" if more > 0 else "")


def inlay_label(summary: SourceLineSummary) -> str:
    names = [kernel.name.split("#", 1)[0] for kernel in summary.kernels if kernel.kind != "extern"]
    externs = [kernel.name.split("#", 1)[0].replace("extern_kernels.", "") for kernel in summary.kernels
               if kernel.kind == "extern"]
    unique = list(dict.fromkeys(names + externs))
    text = ", ".join(unique[:2]) + (f" +{len(unique) - 2}" if len(unique) > 2 else "")
    return f"→ {text}"


def kernel_detail(kernel: KernelInfo) -> str:
    return f"{kernel.kind} kernel · {kernel.graph_kind} [{kernel.compile_id}]"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _ranges(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> 'L3-5, L9' (capped)."""
    spans: list[tuple[int, int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], number)
        else:
            spans.append((number, number))
    texts = [f"L{a}" if a == b else f"L{a}-{b}" for a, b in spans[:4]]
    return ", ".join(texts) + (" …" if len(spans) > 4 else "")


def _short(path: str) -> str:
    return path if len(path) < 60 else "…" + path[-57:]
