"""Module summaries of an answer: what each module instance (or each instance one
level below what the nodes share) contributes, counted. Shared by the store's
query (`StoreBackend.query(..., rollup=True)`) and the line overviews built with the
source index, so both count the same way."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace

from kernelscope.store.results import GraphChain, ModuleSummary


class KeyParts(tuple):
    """A node's generated lines as a few shared sets (its own lines; each of its kernels'
    launch lines, shared by every node of the kernel): a deep model's reused kernel is
    launched once per layer, so sharing the sets keeps an outer line's count linear."""


def module_summaries(chain: GraphChain | SimpleNamespace, line_keys: Mapping[str, set | KeyParts],
                     group_of: Callable[[str], str] | None = None) -> list[ModuleSummary]:
    """Per module instance of the chain's nodes (a GraphChain, or the source index's
    namespace of the same shape) (or per group, `group_of(instance path)`,
    e.g. `blocks.0.attn.qkv` -> `blocks.0`): its post-grad nodes, Triton and extern
    kernels, distinct generated lines (`line_keys`: per post-grad node, a set of line
    keys or KeyParts) and direct source lines, in graph order."""
    group_of = group_of or (lambda path: path)
    group_of_node = {node.name: group_of(node.module) for node in chain.post_nodes}
    summaries: dict[str, ModuleSummary] = {}
    lines_of: dict[str, set] = {}
    parts_seen: dict[str, set[int]] = {}
    for node in chain.post_nodes or chain.pre_nodes:
        group = group_of(node.module)
        summary = summaries.get(group)
        if summary is None:
            summary = summaries[group] = ModuleSummary(
                module=group, module_class="", via=node.via, post_nodes=0, triton_kernels=[], extern_calls=[],
                generated_lines=0, source_lines=[])
            lines_of[group], parts_seen[group] = set(), set()
        elif node.via and node.via not in summary.via.split("+"):
            summary.via = "+".join(sorted(filter(None, [*summary.via.split("+"), node.via])))
        if node.module == group and not summary.module_class:
            summary.module_class = node.module_class
        if node.stage == "post":
            summary.post_nodes += 1
            keys = line_keys.get(node.name)
            if keys:
                for part in keys if isinstance(keys, KeyParts) else (keys,):
                    if id(part) not in parts_seen[group]:
                        parts_seen[group].add(id(part))
                        lines_of[group] |= part
        if node.source is not None:
            _add_unique(summary.source_lines, f"{node.source.file}:{node.source.line}")
    for kernel in chain.kernels:
        for group in dict.fromkeys(group_of_node.get(name, "") for name in kernel.nodes):
            if group in summaries:
                _add_unique(summaries[group].extern_calls if kernel.kind == "extern"
                            else summaries[group].triton_kernels, kernel.name)
    for group, summary in summaries.items():
        summary.generated_lines = len(lines_of[group])
    return list(summaries.values())


def rollup_to_instances(paths: Iterable[str]) -> Callable[[str], str]:
    """A `group_of` for module_summaries: one group per instance one level below what
    all the paths share (`blocks.0`, `blocks.1` for a loop over blocks; `blocks.0.attn`,
    `blocks.0.mlp`, ... when every path is inside `blocks.0`)."""
    split = [path.split(".") for path in paths if path]
    if not split:
        return lambda path: path
    common = 0
    while all(len(parts) > common and parts[common] == split[0][common] for parts in split):
        common += 1
    depth = common + 1
    return lambda path: ".".join(path.split(".")[:depth]) if path else path



def _add_unique(items: list, item) -> None:
    if item not in items:
        items.append(item)


def count_keys(line_keys: dict[str, set | KeyParts]) -> int:
    """Distinct generated lines over every node of `line_keys`."""
    found: set = set()
    seen: set[int] = set()
    for keys in line_keys.values():
        for part in keys if isinstance(keys, KeyParts) else (keys,):
            if id(part) not in seen:
                seen.add(id(part))
                found |= part
    return len(found)
