"""The C++ kernels of two runs (Inductor's CPU backend) and how Inductor vectorized them,
and the `vectorization-lost` gate.

A C++ kernel's loops come with its dump (schema 9.0 `kernel.cpp_loops`, read from its code
by kernelscope/asm/x86.py `cpp_loops`): each `for(` with its step and whether its body
computes with `at::vec::Vectorized` (then the step is the vector's lanes: 16 floats under
AVX-512, 8 under AVX2). A loop nest is a loop not inside another one, with the loops
inside it: it is vectorized when one of its loops is, `lanes` wide (its widest such
loop), else left scalar. Kernels are paired as the rest of the diff pairs them (by what
they compute), and the nests of a pair by their order in the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.asm.model import CppLoop


@dataclass(frozen=True)
class Nest:
    line: int  # its outermost `for(` line in the kernel's .cpp file
    lanes: int  # the widest vectorized loop's step inside it; 0: left scalar

    @property
    def text(self) -> str:
        return f"line {self.line}: " + (f"vectorized, {self.lanes} lanes" if self.lanes else "scalar")


@dataclass
class CppKernelChange:
    graph: str
    status: str  # appeared | vanished | changed (its code, see `kernel_changes`) | vectorization
    before: str | None  # kernel name in A
    after: str | None
    nests_before: list[Nest]
    nests_after: list[Nest]
    kernel_changes: list[str]  # the diff's own phrases for the pair (renamed, ops, size, graph)
    lost: list[str]  # a nest vectorized in A and scalar in B, or vectorized narrower
    gained: list[str]
    source_lines: list[str]  # `file:line` of the kernel (B's where it has one)

    @property
    def name(self) -> str:
        if self.before is None or self.before == self.after:
            return str(self.after)
        if self.after is None:
            return self.before
        return f"{self.before} -> {self.after}"


@dataclass
class VectorizationDiff:
    isa_before: dict | None  # run.config.cpu_vec_isa: {"name", "bits"}
    isa_after: dict | None
    kernels_before: int  # C++ kernels of A
    kernels_after: int
    unknown_before: int  # C++ kernels of A whose loops the dump does not have (older than 9.0)
    unknown_after: int
    unchanged: int  # paired C++ kernels whose code and vectorization are the same
    changes: list[CppKernelChange] = field(default_factory=list)

    @property
    def isa_changed(self) -> bool:
        return (self.isa_before or {}) != (self.isa_after or {}) and bool(self.isa_before and self.isa_after)

    @property
    def differs(self) -> bool:
        return bool(self.changes) or self.isa_changed


def nests(loops: tuple[CppLoop, ...]) -> list[Nest]:
    """The kernel's loop nests in source order, each vectorized (with its lanes) or scalar."""
    found: list[tuple[CppLoop, int]] = []
    for loop in sorted(loops, key=lambda loop: loop.line):
        lanes = loop.step if loop.kind == "vectorized" else 0
        outer = next((index for index, (nest, _) in enumerate(found) if nest.line < loop.line <= nest.end_line), None)
        if outer is None:
            found.append((loop, lanes))
        else:
            found[outer] = (found[outer][0], max(found[outer][1], lanes))
    return [Nest(loop.line, lanes) for loop, lanes in found]


def _losses(before: list[Nest], after: list[Nest]) -> tuple[list[str], list[str]]:
    """What B lost and gained against A: nest by nest when both have as many, else for the
    kernel as a whole (how many nests are vectorized, the widest lanes)."""
    lost, gained = [], []
    if len(before) == len(after):
        for old, new in zip(before, after):
            nest = f"nest at line {old.line}" + (f" -> {new.line}" if new.line != old.line else "")
            if old.lanes and not new.lanes:
                lost.append(f"{nest}: vectorized ({old.lanes} lanes) -> scalar")
            elif old.lanes > new.lanes:
                lost.append(f"{nest}: {old.lanes} -> {new.lanes} lanes")
            elif new.lanes and not old.lanes:
                gained.append(f"{nest}: scalar -> vectorized ({new.lanes} lanes)")
            elif new.lanes > old.lanes:
                gained.append(f"{nest}: {old.lanes} -> {new.lanes} lanes")
        return lost, gained
    old_vectorized, new_vectorized = sum(1 for n in before if n.lanes), sum(1 for n in after if n.lanes)
    old_widest, new_widest = max((n.lanes for n in before), default=0), max((n.lanes for n in after), default=0)
    counts = f"{old_vectorized} of {len(before)} nests vectorized -> {new_vectorized} of {len(after)}"
    if new_vectorized < old_vectorized:
        lost.append(counts)
    elif new_vectorized > old_vectorized:
        gained.append(counts)
    if old_widest and new_widest and new_widest != old_widest:
        (lost if new_widest < old_widest else gained).append(f"widest {old_widest} -> {new_widest} lanes")
    return lost, gained


def compare_vectorization(pairs, isa_before: dict | None, isa_after: dict | None) -> VectorizationDiff | None:
    """`pairs`: the diff's KernelPair list. None when neither run has a C++ kernel."""
    def cpp(kernel):
        return kernel if kernel is not None and kernel.kind == "cpp" else None

    cpp_pairs = [(cpp(pair.before), cpp(pair.after), pair) for pair in pairs if cpp(pair.before) or cpp(pair.after)]
    if not cpp_pairs:
        return None
    result = VectorizationDiff(
        isa_before, isa_after,
        kernels_before=sum(1 for a, _, _ in cpp_pairs if a is not None),
        kernels_after=sum(1 for _, b, _ in cpp_pairs if b is not None),
        unknown_before=sum(1 for a, _, _ in cpp_pairs if a is not None and a.cpp_loops is None),
        unknown_after=sum(1 for _, b, _ in cpp_pairs if b is not None and b.cpp_loops is None),
        unchanged=0)
    for a, b, pair in cpp_pairs:
        old = nests(a.cpp_loops) if a is not None and a.cpp_loops is not None else []
        new = nests(b.cpp_loops) if b is not None and b.cpp_loops is not None else []
        lost, gained = _losses(old, new) if a is not None and b is not None else ([], [])
        kernel_changes = pair.changes if a is not None and b is not None else []
        if a is not None and b is not None and not (kernel_changes or lost or gained
                                                   or [n.lanes for n in old] != [n.lanes for n in new]):
            result.unchanged += 1
            continue
        status = "appeared" if a is None else "vanished" if b is None else "changed" if kernel_changes \
            else "vectorization"
        kernel = b or a
        result.changes.append(CppKernelChange(
            kernel.graph, status, a.name if a else None, b.name if b else None, old, new, kernel_changes,
            lost, gained, sorted(f"{file}:{line}" for file, line in kernel.sources)))
    result.changes.sort(key=lambda change: (change.graph, change.after or change.before or ""))
    return result


def _isa(isa: dict | None) -> str:
    if not isa:
        return "ISA not recorded"
    return f"{isa['name']} ({isa['bits']}-bit)" if isa["bits"] else "no vector ISA (every kernel scalar)"


def gate_reasons(diff: VectorizationDiff | None) -> list[str]:
    """Why `vectorization-lost` trips: a paired C++ kernel lost a vectorized nest or lanes,
    or a side has C++ kernels without their loops (the gate cannot pass on no evidence)."""
    if diff is None:
        return []
    if diff.unknown_before or diff.unknown_after:
        missing = " and ".join(side for side, count in (("A", diff.unknown_before), ("B", diff.unknown_after))
                               if count)
        return [f"vectorization-lost: {missing} has C++ kernels without their loops (a dump older than 9.0) — "
                "dump the run again with this kernelscope (`kernelscope dump RUN -o FILE`)"]
    reasons = []
    for change in diff.changes:
        where = f" at {', '.join(change.source_lines[:3])}" if change.source_lines else ""
        reasons += [f"{change.name} {change.graph}: {lost}{where}" for lost in change.lost]
    return reasons


def render_lines(diff: VectorizationDiff | None) -> list[str]:
    """The report's C++ kernels section (text and markdown alike)."""
    if diff is None or not diff.differs:
        return []
    isa = _isa(diff.isa_after) if not diff.isa_changed else f"{_isa(diff.isa_before)} -> {_isa(diff.isa_after)}"
    out = [f"C++ kernels: {diff.kernels_before} -> {diff.kernels_after} · vector ISA {isa} · "
           f"{diff.unchanged} unchanged"]
    for change in diff.changes:
        what = change.status if change.status != "changed" else f"changed ({', '.join(change.kernel_changes)})"
        out.append(f"  {change.name} {change.graph}: {what}")
        if change.status == "appeared":
            out.append(f"      nests: {_nest_list(change.nests_after)}")
        elif change.status == "vanished":
            out.append(f"      nests: {_nest_list(change.nests_before)}")
        else:
            out.append(f"      nests: {_nest_list(change.nests_before)}  ->  {_nest_list(change.nests_after)}")
        out += [f"      lost: {lost}" for lost in change.lost]
        out += [f"      gained: {gained}" for gained in change.gained]
    return out


def _nest_list(found: list[Nest]) -> str:
    return "; ".join(nest.text for nest in found) if found else "no loops"
