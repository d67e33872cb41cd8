"""Folding module instances that have the same shape into one group.

A deep model repeats one block: the loop line `x = block(x)` of a 48-block GPT
reaches 48 instances, and Inductor reuses one kernel for identical layers, so
most of them reach exactly the same Triton kernels through links of the same
shape. Those fold into one group, `blocks.2–46 (45 × Block)`; instances that
differ (the first and last block often fuse with the embedding or the final
norm) stay groups of their own. Nothing is dropped: a group names its members,
and each member's own numbers stay in the answer's module list.

Two instances have the same shape when they share the parent, the class, how
the line reaches them (direct / via call), the number of post-grad nodes, the
Triton kernels (by name), the extern calls (by op, counted), the number of
generated lines and the source lines. Order does not matter (a backward graph
visits the layers in its own order).
"""
from __future__ import annotations

from collections.abc import Iterable

from kernelscope.store.results import InstanceGroup, ModuleGroup, ModuleSummary

DASH = "–"  # en dash, as in `blocks.2–46`
MAX_RANGES = 4  # spans in a label before "…"


def fold_modules(modules: Iterable[ModuleSummary]) -> list[ModuleGroup]:
    """`modules` (one graph's module summaries, in graph order) folded by shape; groups
    come in the graph order of their first member."""
    by_shape: dict[tuple, list[ModuleSummary]] = {}
    for summary in modules:
        by_shape.setdefault(_shape(summary), []).append(summary)
    groups = []
    for members in by_shape.values():
        first = members[0]
        names = sorted((member.module for member in members), key=natural_key)
        groups.append(ModuleGroup(
            label=instances_label(names), members=names, module_class=first.module_class, via=first.via,
            post_nodes=first.post_nodes, triton_kernels=list(first.triton_kernels),
            extern_ops=[extern_op(name) for name in first.extern_calls], extern_calls=list(first.extern_calls),
            generated_lines=first.generated_lines, source_lines=list(first.source_lines)))
    return groups


def extern_op(name: str) -> str:
    """`extern_kernels.mm#12` -> `extern_kernels.mm` (the store numbers every extern call)."""
    return name.split("#", 1)[0]


def _shape(summary: ModuleSummary) -> tuple:
    if not summary.module:
        return ("top level",)  # nodes outside any submodule: not an instance, never folded
    return (parent(summary.module), summary.module_class, summary.via, summary.post_nodes,
            tuple(sorted(summary.triton_kernels)), tuple(sorted(extern_op(name) for name in summary.extern_calls)),
            summary.generated_lines, tuple(sorted(summary.source_lines)))


def parent(path: str) -> str:
    return path.rpartition(".")[0]


def natural_key(path: str) -> tuple:
    """`blocks.10` after `blocks.9`: numeric parts compare as numbers."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.split("."))


def instances_label(members: list[str]) -> str:
    """`blocks.2–46` (siblings numbered without a gap), `blocks.1–43, 45–47` (with gaps);
    other groups: the first member and how many more."""
    if len(members) == 1:
        return members[0]
    parents = {parent(member) for member in members}
    last = [member.rpartition(".")[2] for member in members]
    if len(parents) != 1 or not all(part.isdigit() for part in last):
        return f"{members[0]} +{len(members) - 1}"
    numbers = sorted(int(part) for part in last)
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    texts = [str(a) if a == b else f"{a}{DASH}{b}" for a, b in spans[:MAX_RANGES]]
    prefix = f"{parents.pop()}." if members[0].count(".") else ""
    return prefix + ", ".join(texts) + (", …" if len(spans) > MAX_RANGES else "")


def short_class(module_class: str) -> str:
    """`nanogpt.Block` -> `Block`."""
    return module_class.rsplit(".", 1)[-1]


def group_title(group: ModuleGroup | InstanceGroup) -> str:
    """`blocks.2–46 (45 × Block)`, `blocks.0 (Block)`, `(top level: no submodule)`;
    `blocks.1–47 (47 instances)` when no node of the line is in the instances themselves."""
    name = group.label or "(top level: no submodule)"
    kind = short_class(group.module_class)
    if group.folded:
        return f"{name} ({len(group.members)} × {kind})" if kind else f"{name} ({len(group.members)} instances)"
    return f"{name} ({kind})" if kind else name


def fold_instances(instances: list[tuple[str, str, tuple]], children_of) -> list[InstanceGroup]:
    """Sibling instances `(path, class, shape)` folded by (class, shape), in natural order of
    their first member; `children_of(path)` gives an unfolded instance's own children."""
    by_shape: dict[tuple, list[tuple[str, str, tuple]]] = {}
    for instance in sorted(instances, key=lambda item: natural_key(item[0])):
        by_shape.setdefault((instance[1], instance[2]), []).append(instance)
    groups = []
    for (module_class, shape), members in by_shape.items():
        names = [member[0] for member in members]
        post_nodes, triton, externs = shape[:3]
        group = InstanceGroup(label=instances_label(names), members=names, module_class=module_class,
                              post_nodes=post_nodes, triton_kernels=list(triton), extern_calls=externs)
        if not group.folded:
            group.children = children_of(names[0])
        groups.append(group)
    return groups
