"""Registers and spills of paired kernels (below the kernel), and the `registers-increase`
and `spills-increase` gates.

A side's kernels carry their facts when they were compiled below Triton before the dump
(`compile --asm`, `show --asm`, `query --asm`). Kernels are paired as the rest of the diff
pairs them (by what they compute), so a renamed fusion still compares.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ResourceChange:
    graph: str
    before: str  # kernel name in A
    after: str  # kernel name in B
    registers_before: int
    registers_after: int
    spill_bytes_before: int
    spill_bytes_after: int
    source_lines: list[str]  # `file:line` of B's kernel

    @property
    def name(self) -> str:
        return self.after if self.before == self.after else f"{self.before} -> {self.after}"


@dataclass
class ResourceDiff:
    compared: int  # pairs with facts on both sides
    built_before: int  # kernels of A with facts
    built_after: int
    changes: list[ResourceChange] = field(default_factory=list)  # pairs whose registers or spills differ

    def increases(self, what: str) -> list[ResourceChange]:
        if what == "registers":
            return [c for c in self.changes if c.registers_after > c.registers_before]
        return [c for c in self.changes if c.spill_bytes_after > c.spill_bytes_before]


def compare_resources(pairs) -> ResourceDiff:
    """`pairs`: the diff's KernelPair list."""
    before = sum(1 for pair in pairs if pair.before is not None and pair.before.registers is not None)
    after = sum(1 for pair in pairs if pair.after is not None and pair.after.registers is not None)
    result = ResourceDiff(0, before, after)
    for pair in pairs:
        a, b = pair.before, pair.after
        if a is None or b is None or a.registers is None or b.registers is None:
            continue
        result.compared += 1
        if (a.registers, a.spill_bytes) != (b.registers, b.spill_bytes):
            result.changes.append(ResourceChange(
                b.graph, a.name, b.name, a.registers, b.registers, a.spill_bytes, b.spill_bytes,
                sorted(f"{file}:{line}" for file, line in b.sources)))
    result.changes.sort(key=lambda c: (c.graph, c.after))
    return result


def gate_reasons(diff: ResourceDiff | None, what: str) -> list[str]:
    """Why `registers-increase` / `spills-increase` trips: a paired kernel uses more, or a
    side has no kernel compiled below Triton (the gate cannot pass on no evidence)."""
    if diff is None or not diff.built_before or not diff.built_after:
        missing = "A and B have" if diff is None or not (diff.built_before or diff.built_after) else \
            "A has" if not diff.built_before else "B has"
        return [f"{what}-increase: {missing} no kernel compiled below Triton — record with `--asm` "
                "(or run `kernelscope show RUN --asm`) before dumping"]
    reasons = []
    for change in diff.increases(what):
        where = f" at {', '.join(change.source_lines[:3])}" if change.source_lines else ""
        if what == "registers":
            reasons.append(f"{change.name} {change.graph}: {change.registers_before} -> {change.registers_after} "
                           f"registers per thread{where}")
        else:
            reasons.append(f"{change.name} {change.graph}: spills {change.spill_bytes_before} -> "
                           f"{change.spill_bytes_after} B per thread{where}")
    return reasons


def render_lines(diff: ResourceDiff | None) -> list[str]:
    """The report's below-the-kernel section (text and markdown alike)."""
    if diff is None or not (diff.built_before or diff.built_after):
        return []
    out = [f"below the kernel: {diff.compared} paired kernel(s) with registers on both sides "
           f"(A {diff.built_before}, B {diff.built_after} built)"]
    for change in diff.changes:
        out.append(f"  {change.name} {change.graph}: registers {change.registers_before} -> {change.registers_after}, "
                   f"spills {change.spill_bytes_before} -> {change.spill_bytes_after} B")
    return out
