"""A foreach/combo kernel's sub-kernels as text: what `kernelscope query` prints and the
language server's hover shows about a compiled optimizer step's sub-kernel — its lines, the
parameters it updates (`param_groups[0]: 0.weight (64, 32)`), the optimizer's lines its
nodes came from and the user's line that called the step."""
from __future__ import annotations

from kernelscope.store.results import KernelPartRef

LISTED = 12  # sub-kernels listed under a source line; the rest are counted


def param_text(param: dict) -> str:
    """`0.weight (64, 32)`; without a name (an optimizer built from unnamed parameters),
    the parameter's place in its group: `params[1] (8, 64)`."""
    shape = "(" + ", ".join(str(size) for size in param.get("shape", [])) + ")"
    return f"{param['name'] or 'params[' + str(param['index']) + ']'} {shape}"


def params_text(part: KernelPartRef) -> str:
    """`param_groups[0]: 0.weight (64, 32)`, the parameters grouped by their group."""
    groups: dict[int, list[str]] = {}
    for param in part.params:
        groups.setdefault(param["group"], []).append(param_text(param))
    return "; ".join(f"param_groups[{group}]: {', '.join(names)}" for group, names in sorted(groups.items()))


def grouped_sources(sources: list[str]) -> list[str]:
    """`sgd.py:429 _multi_tensor_sgd`, `sgd.py:445 _multi_tensor_sgd` -> `sgd.py:429, 445 _multi_tensor_sgd`."""
    groups: dict[tuple[str, str], list[int]] = {}
    for source in sources:
        place, _, function = source.partition(" ")
        file, _, line = place.rpartition(":")
        groups.setdefault((file, function), []).append(int(line))
    return [f"{file}:{', '.join(map(str, sorted(lines)))} {function}".rstrip()
            for (file, function), lines in groups.items()]


def title(part: KernelPartRef) -> str:
    """`triton_for_fused_0 sub-kernel 1 (lines 35-50) in 1/1 inference`."""
    return f"{part.kernel} sub-kernel {part.part} (lines {part.first_line}-{part.last_line}) in {part.graph.title}"


def part_lines(part: KernelPartRef) -> list[str]:
    """What one sub-kernel is: the parameters it updates, its nodes, their lines, the caller."""
    lines = [f"updates {params_text(part)}"] if part.params else []
    lines.append(f"computes {', '.join(part.nodes) or '(no node seen)'}")
    lines += [f"from {where}" for where in grouped_sources(part.sources)]
    lines += [f"called from {caller}" for caller in part.called_from]
    return lines


def heading(parts: list[KernelPartRef], from_source: bool) -> str:
    if from_source:
        return f"optimizer parameters this line's foreach kernels update ({len(parts)} sub-kernels, down)"
    return "foreach sub-kernel of this line"


def run_section(parts: list[KernelPartRef]) -> list[str]:
    """`kernelscope show`'s section: each foreach kernel's sub-kernels, with the parameters
    each updates (a compiled optimizer step) or the nodes it computes."""
    params = {(param["group"], param["index"]) for part in parts for param in part.params}
    kernels = {(part.graph.key, part.kernel) for part in parts}
    lines = [f"foreach sub-kernels: {len(parts)} in {len(kernels)} kernel(s)"
             + (f", updating {len(params)} optimizer parameter(s)" if params else "")]
    current = None
    for part in parts:
        if (part.graph.key, part.kernel) != current:
            current = (part.graph.key, part.kernel)
            callers = sorted({caller for other in parts if (other.graph.key, other.kernel) == current
                              for caller in other.called_from})
            lines.append(f"  {part.kernel} in {part.graph.title}" + (f", called from {', '.join(callers)}"
                                                                     if callers else ""))
        what = params_text(part) if part.params else f"computes {', '.join(part.nodes)}"
        lines.append(f"    sub-kernel {part.part} (lines {part.first_line}-{part.last_line}): {what}")
    return lines
