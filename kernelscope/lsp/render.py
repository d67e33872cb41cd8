"""Every answer the server shows as text: hovers, code lens titles, inlay hints.

One module, so that new fields of the store's answers (module instances, frame
stacks, pass lineage) change one place. Hovers stay short on big answers: one
block per graph, kernels grouped by module instance with alike instances folded
into one group (the store's GraphOverview.groups: `blocks.2–46`, listed once, with
how to open one of them), lists capped with "… N more", and links
(`file://…#L<line>`) instead of quoted code.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from kernelscope.store import GraphOverview, ModuleGroup, QueryResult, RunSummary
from kernelscope.store.reading.folding import short_class
from kernelscope.store.reading.graphs_and_kernels import KernelInfo
from kernelscope.store.reading.source_index import GraphHit, KernelHit, LineAnswer, SourceLineSummary

MAX_GRAPHS = 4
# (module instances per graph, kernels per instance): fewer when more graphs are shown
CAPS_FEW_GRAPHS, CAPS_MANY_GRAPHS = (3, 4), (2, 3)
MAX_ITEMS = 5

Link = Callable[[str, int | None], str]  # (stored path, 1-based line) -> URI with #L fragment


@dataclass
class StaleNote:
    file: str
    run_id: int
    recorded_line: int
    current_line: int


def run_label(summary: RunSummary | None, run_id: int, rank: str = "") -> str:
    """`run 3 (virtual-cuda, train)`; `rank`: the run's rank in its job (`rank 1/2`)."""
    if summary is None:
        return f"run {run_id}" + (f" ({rank})" if rank else "")
    return f"run {run_id} ({summary.device}, {summary.mode}" + (f", {rank}" if rank else "") + ")"


def collectives_text(collectives: list, link: Link) -> str:
    """The collectives a line issues, waits on or needed, worded as `kernelscope query`
    words them (kernelscope.render.distributed), each with a link to its model line."""
    from kernelscope.render.distributed import collective_answer

    out = ["**collectives**"]
    for collective in collectives[:MAX_ITEMS]:
        out.append("```text\n" + "\n".join(collective_answer(collective)) + "\n```")
        model = collective.model_line
        if model is not None:
            out.append(f"model line: [{_short(model.file)}:{model.line}]({link(model.file, model.line)})"
                       + (f" · layer `{collective.module}`" if collective.module else ""))
    if len(collectives) > MAX_ITEMS:
        out.append(f"… {len(collectives) - MAX_ITEMS} more collectives")
    return "\n".join(out)


def recompute_text(recomputes: list, link: Link) -> str:
    """The backward nodes of a line that recompute a forward op (activation checkpointing):
    how many, the backward kernels that do it, and a few nodes with the forward line they
    recompute (a link)."""
    whys = ", ".join(sorted({ref.why for ref in recomputes}))
    kernels = list(dict.fromkeys(kernel for ref in recomputes for kernel in ref.kernels))
    graphs = ", ".join(dict.fromkeys(ref.graph for ref in recomputes))
    out = [f"**recomputed in the backward** ({whys}): {_count(len(recomputes), 'node')} in graph {graphs}"
           + (f" · kernels {', '.join(f'`{name}`' for name in kernels[:MAX_ITEMS])}" if kernels else "")
           + (f" … {len(kernels) - MAX_ITEMS} more" if len(kernels) > MAX_ITEMS else "")]
    for ref in recomputes[:MAX_ITEMS]:
        file, _, line = ref.forward_source.rpartition(":")
        where = f"[{_short(file)}:{line}]({link(file, int(line))})" if file else "the forward"
        twin = f"forward node `{ref.forward_node}`, " if ref.forward_node else ""
        out.append(f"- `{ref.node}` recomputed from {where} ({twin}{ref.why})")
    if len(recomputes) > MAX_ITEMS:
        out.append(f"- … {len(recomputes) - MAX_ITEMS} more (`kernelscope query --json` lists them)")
    return "\n".join(out)


def source_hover(answer: LineAnswer, text: str, summary: SourceLineSummary | None, run: RunSummary | None,
                 link: Link, stale: StaleNote | None, overviews: list[GraphOverview] | None = None,
                 open_one: str = "", rank: str = "") -> str:
    """What a model source line became, per graph and module instance; `overviews` (the
    line's counts per graph) fold alike instances into one group, `open_one` is the
    command that opens one of them (`kernelscope query FILE:LINE --module`)."""
    path = answer.path
    lines = [f"**kernelscope** · {run_label(run, answer.run_id, rank)} · `{_short(path)}:{answer.line}`"]
    if stale is not None:
        lines.append(_stale_text(stale, text))
    if answer.empty:
        lines.append("\nNo compiled node comes from this line in this run.")
        return "\n".join(lines)
    if any(graph.called for graph in answer.graphs):
        lines.append("\nthis line calls into what is listed (an outer frame of the nodes' call stacks)")
    caps = CAPS_FEW_GRAPHS if len(answer.graphs) <= 2 else CAPS_MANY_GRAPHS
    groups_of = {overview.graph.id: overview.groups for overview in overviews or []}
    for graph in answer.graphs[:MAX_GRAPHS]:
        lines.append("")
        groups = groups_of.get(graph.graph.id)
        lines += _graph_groups(graph, groups, link, open_one, *caps) if groups else _graph_down(graph, link, *caps)
    if len(answer.graphs) > MAX_GRAPHS:
        rest = answer.graphs[MAX_GRAPHS:]
        kernels = sum(len(graph.kernels) for graph in rest)
        lines.append(f"\n… {len(rest)} more graphs ({_count(kernels, 'kernel')}): "
                     + ", ".join(f"[{graph.graph.compile_id}]" for graph in rest[:8]) + (" …" if len(rest) > 8 else ""))
    if summary is not None and summary.fused_with:
        shown = [f"[L{line}]({link(path, line)})" for line in summary.fused_with[:MAX_ITEMS * 2]]
        more = len(summary.fused_with) - len(shown)
        lines.append("")
        lines.append("fused with " + ", ".join(shown) + (f" … {more} more" if more > 0 else ""))
    return "\n".join(lines)


def _graph_down(graph: GraphHit, link: Link, max_groups: int, max_kernels: int) -> list[str]:
    out = [_graph_head(graph)]
    depth = _group_depth(graph)
    groups: dict[str, list[KernelHit]] = {}
    for hit in graph.kernels:
        modules = sorted({".".join(module.split(".")[:depth]) for module in hit.modules if module})
        groups.setdefault(modules[0] if modules else "", []).append(hit)
    shown_groups = list(groups.items())[:max_groups]
    for module, hits in shown_groups:
        indent = ""
        if module:
            module_class = graph.module_class.get(module, "")
            module_class = f" ({module_class.rsplit('.', 1)[-1]})" if module_class else ""
            out.append(f"- `{module}`{module_class}: {_kernels_and_calls(hits)}")
            indent = "  "
        for hit in hits[:max_kernels]:
            out.append(indent + "- " + _kernel_item(hit, graph, link))
        if len(hits) > max_kernels:
            out.append(indent + f"- … {len(hits) - max_kernels} more")
    hidden = len(groups) - len(shown_groups)
    if hidden > 0:
        count = sum(len(hits) for _, hits in list(groups.items())[max_groups:])
        out.append(f"- … {hidden} more module instances ({_count(count, 'kernel')})")
    if not graph.kernels and graph.post_nodes:
        out.append("- no kernel (the nodes are views, constants or folded away)")
    return out


def _graph_groups(graph: GraphHit, groups: list[ModuleGroup], link: Link, open_one: str, max_groups: int,
                  max_kernels: int) -> list[str]:
    """A graph's kernels per module group; a folded group lists the kernels of its first
    member once and says how many more instances are alike, and how to open one."""
    out = [_graph_head(graph)]
    shown = groups[:max_groups]
    for group in shown:
        first = group.members[0]
        hits = [hit for hit in graph.kernels if any(_in_instance(module, first) for module in hit.modules)]
        indent = ""
        if group.label or group.folded:
            if group.folded:
                title = f"`{group.label}` ({len(group.members)} × {short_class(group.module_class) or 'instance'}, " \
                        "same kernels)"
            else:
                kind = short_class(group.module_class)
                title = f"`{group.label}`" + (f" ({kind})" if kind else "")
            each = " each" if group.folded else ""
            out.append(f"- {title}: {_kernels_and_calls(hits) if hits else 'no kernel'}{each}")
            indent = "  "
        for hit in hits[:max_kernels]:
            out.append(indent + "- " + _kernel_item(hit, graph, link))
        if len(hits) > max_kernels:
            out.append(indent + f"- … {len(hits) - max_kernels} more")
        if group.folded:
            others = len(group.members) - 1
            example = group.members[min(1, others)]
            how = f" — open one: `{open_one} {example}`" if open_one else ""
            out.append(indent + f"- these for `{first}`; {others} more alike{how}")
    hidden = groups[len(shown):]
    if hidden:
        count = sum(len(group.members) for group in hidden)
        out.append(f"- … {len(hidden)} more {'group' if len(hidden) == 1 else 'groups'} "
                   f"({_count(count, 'module instance')}): "
                   + ", ".join(f"`{group.label}`" if group.label else "top level" for group in hidden[:4])
                   + (" …" if len(hidden) > 4 else ""))
    if not graph.kernels and graph.post_nodes:
        out.append("- no kernel (the nodes are views, constants or folded away)")
    return out


def _in_instance(path: str, instance: str) -> bool:
    return path == instance or bool(instance) and path.startswith(instance + ".")


def _graph_head(graph: GraphHit) -> str:
    generated = [hit for hit in graph.kernels if hit.kernel.kind != "extern"]
    externs = len(graph.kernels) - len(generated)
    head = f"**{graph.graph.title}** — {_count(len(generated), 'kernel')}"
    if externs:
        head += f", {_count(externs, 'extern call')}"
    return head + f" · {_count(graph.post_nodes, 'post-grad node')}"


def _group_depth(graph: GraphHit) -> int:
    """Module instances are cut at the depth of the shallowest one in the answer, so an
    outer line (`x = block(x)`) lists `blocks.0`, `blocks.1`, … with their submodules inside."""
    depths = [len(module.split(".")) for hit in graph.kernels for module in hit.modules if module]
    return min(depths) if depths else 0


def _kernels_and_calls(hits: list[KernelHit]) -> str:
    calls = sum(1 for hit in hits if hit.kernel.kind == "extern")
    parts = [_count(len(hits) - calls, "kernel")] if len(hits) > calls else []
    return ", ".join(parts + ([_count(calls, "extern call")] if calls else []))


def _kernel_item(hit: KernelHit, graph: GraphHit, link: Link) -> str:
    kernel = hit.kernel
    wrapper = graph.graph.files.get("wrapper")
    if kernel.kind == "extern":
        name = kernel.name.split("#", 1)[0]
        where = f" · [wrapper L{hit.calls[0]}]({link(wrapper, hit.calls[0])})" if hit.calls and wrapper else ""
        return f"`{name}` extern{where}"
    first = hit.first_value or hit.first_own or (hit.lines[0] if hit.lines else None)
    name = f"[`{kernel.name}`]({link(kernel.file, first)})" if kernel.file else f"`{kernel.name}`"
    text = f"{name} {kernel.kind}"
    if hit.lines:
        text += f" · {_count(len(hit.lines), 'line')} ({_ranges(hit.lines)})"
    return text


def generated_hover(result: QueryResult, run: RunSummary | None, link: Link, rank: str = "") -> str:
    """Where a line of a kernel, wrapper or graph file came from."""
    location = result.location
    where = f"`{os.path.basename(location.path)}:{result.line}`"
    graph = (f" · {location.graph.label or f'{location.graph.kind} [{location.graph.compile_id}]'}"
             if location.graph else "")  # a subgraph by its label: `cond: true branch of ...`
    kernel = f" · kernel `{location.kernel}`" if location.kernel else ""
    lines = [f"**kernelscope** · {run_label(run, location.run_id, rank)}{graph}{kernel} · {where}"]
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
            for launched in chain.kernels[:MAX_ITEMS]:
                target = f"[`{launched.name}`]({link(launched.file, None)})" if launched.file else f"`{launched.name}`"
                lines.append(f"- {launched.reason}: {target} ({launched.kind})")
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
    parts: list[str] = []
    short = {"forward": "fw", "backward": "bw", "inference": ""}
    for kind in ("inference", "forward", "backward"):
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


def fold_note(overviews: list[GraphOverview]) -> str:
    """`48 × Block: blocks.2–46 alike` for a line that reaches alike instances (the first
    graph with a folded group); "" for other lines."""
    for overview in overviews:
        folded = [group for group in overview.groups if group.folded]
        if folded:
            largest = max(folded, key=lambda group: len(group.members))
            named = [group for group in overview.groups if group.label]
            instances = sum(len(group.members) for group in named)
            kinds = {short_class(group.module_class) for group in named}
            kind = kinds.pop() if len(kinds) == 1 else ""
            return f"{instances} × {kind}: {largest.label} alike" if kind else \
                f"{instances} instances: {largest.label} alike"
    return ""


def device_time_suffix(times, line: int) -> str:
    """` · 0.42 ms · 31% of step` (`shared` when the kernels also serve other lines), from
    `RunView.file_line_times`; empty when the run has no profile or the line no time."""
    if times is None or line not in times[0]:
        return ""
    from kernelscope.profile.report import time_label

    us, shared = times[0][line]
    label = time_label(us, us / times[1] if times[1] else None)
    return f" · {label}" + (" (shared)" if shared else "")


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


def spans(numbers: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive numbers, in the order given: [3, 4, 5, 9] -> [(3, 5), (9, 9)]."""
    found: list[tuple[int, int]] = []
    for number in numbers:
        if found and number == found[-1][1] + 1:
            found[-1] = (found[-1][0], number)
        else:
            found.append((number, number))
    return found


def _ranges(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> 'L3-5, L9' (capped)."""
    runs = spans(numbers)
    texts = [f"L{a}" if a == b else f"L{a}-{b}" for a, b in runs[:4]]
    return ", ".join(texts) + (" …" if len(runs) > 4 else "")


def _short(path: str) -> str:
    return path if len(path) < 60 else "…" + path[-57:]


def user_kernel_text(copies: list, from_source: bool, link: Link) -> str:
    """A user Triton kernel's section: from the user's line, its generated copies (each linked);
    from a line of a copy, the user's line it was copied from; with each copy's autotune
    configs and the one the run launched."""
    from kernelscope.render.user_kernels import title, tuning_lines

    out = ["**user Triton kernel** · " + ("generated copies of this line" if from_source else "copied from")]
    for copy in copies:
        kernel = copy.kernel
        out.append(f"- [{title(kernel)}]({link(kernel.file, None)})")
        for row in copy.lines:
            if from_source:
                out.append(f"  - [{_short(kernel.file)}:{row.line}]({link(kernel.file, row.line)}) {row.reason} "
                           f"`{row.text.strip()}`")
            else:
                out.append(f"  - [{row.source_file}:{row.source_line}]({link(row.source_file, row.source_line)}) "
                           f"{row.reason} `{row.source_code}`")
        out += [f"  - {text.strip()}" for text in tuning_lines(kernel)]
    return "\n".join(out)


def kernel_parts_text(parts: list, from_source: bool, link: Link) -> str:
    """Foreach sub-kernels (a compiled optimizer step): from a source line, those its ops (or
    its `opt.step()` call) became; from a kernel line, the sub-kernel whose block holds it. Each
    with its lines (a link), the parameters it updates by group, the optimizer's lines and the
    user's line that called the step."""
    from kernelscope.render.kernel_parts import heading, params_text, title

    out = [f"**{heading(parts, from_source)}**"]
    for part in parts[:MAX_ITEMS]:
        out.append(f"- [{title(part)}]({link(part.file, part.first_line)})")
        if part.params:
            out.append(f"  - updates {params_text(part)}")
        for source in part.sources:
            file, _, rest = source.partition(" ")
            path, _, line = file.rpartition(":")
            out.append(f"  - from [{_short(file)}]({link(path, int(line))}) {rest}".rstrip())
        out += [f"  - called from `{caller}`" for caller in part.called_from]
    if len(parts) > MAX_ITEMS:
        out.append(f"- … {len(parts) - MAX_ITEMS} more (`kernelscope query --json` lists them)")
    return "\n".join(out)
