"""Pair the kernels of two runs by what they compute, not by name.

Inductor names a kernel after the ops it fused and numbers it by position, so a
GELU -> ReLU edit renames the fused kernel and an extra kernel renumbers the
rest. A kernel is described by its phase (forward or backward), whether it is
generated code or an extern call, the user lines its post-grad nodes came from
(in after-side coordinates, see `align`) and its node targets. Pairing, most
certain first:
1. same name stem, same lines, same targets: the same kernel;
2. otherwise the pair with the highest similarity (shared lines, then shared
   targets, then the same stem), as long as they share a line, or, for kernels
   with no user line, a target (candidates come from an index by line and by
   target, so this is not quadratic in the kernel count). Ties break by name,
   so a diff is deterministic.
What is left is a kernel that appeared (after side) or vanished (before side).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from kernelscope.diff.align import LineAlignment
from kernelscope.diff.model import KernelView, SourceKey

GONE = "<gone>"  # file marker of a before-side line with no after-side pair


@dataclass(frozen=True)
class KernelPair:
    before: KernelView | None
    after: KernelView | None

    @property
    def status(self) -> str:
        if self.before is None:
            return "appeared"
        if self.after is None:
            return "vanished"
        return "changed" if self.changes else "unchanged"

    @property
    def kernel(self) -> KernelView:
        """B's kernel, or A's where it vanished (a pair holds one at least)."""
        kernel = self.after or self.before
        if kernel is None:
            raise ValueError("a kernel pair of no kernels")
        return kernel

    @property
    def changes(self) -> list[str]:
        """What differs between the two kernels of a pair, one phrase each."""
        before, after = self.before, self.after
        if before is None or after is None:
            return []
        out = []
        if before.stem != after.stem:
            out.append("renamed")
        if Counter(before.targets) != Counter(after.targets):
            out.append("ops")
        if before.line_count != after.line_count:
            out.append("size")
        if before.graph != after.graph:
            out.append("graph")
        return out


def match_kernels(before: list[KernelView], after: list[KernelView], alignment: LineAlignment) -> list[KernelPair]:
    before_lines = {id(kernel): _after_coordinates(kernel.sources, alignment) for kernel in before}
    left = sorted(before, key=_order)
    right = sorted(after, key=_order)
    pairs: list[KernelPair] = []

    exact: dict[tuple, list[KernelView]] = {}
    for kernel in right:
        exact.setdefault(_signature(kernel, kernel.sources), []).append(kernel)
    unmatched_left = []
    for kernel in left:
        same = exact.get(_signature(kernel, before_lines[id(kernel)]))
        if same:
            pairs.append(KernelPair(kernel, same.pop(0)))
        else:
            unmatched_left.append(kernel)
    matched_right = {id(pair.after) for pair in pairs}
    unmatched_right = [kernel for kernel in right if id(kernel) not in matched_right]

    by_line: dict[SourceKey, list[int]] = defaultdict(list)
    by_target: dict[str, list[int]] = defaultdict(list)  # kernels without user lines
    for j, new in enumerate(unmatched_right):
        for key in new.sources:
            by_line[key].append(j)
        if not new.sources:
            for target in set(new.targets):
                by_target[target].append(j)
    scored = []
    for i, old in enumerate(unmatched_left):
        old_lines = before_lines[id(old)]
        if old_lines:
            candidates = {j for key in old_lines for j in by_line.get(key, ())}
        else:
            candidates = {j for target in set(old.targets) for j in by_target.get(target, ())}
        for j in candidates:
            score = _similarity(old, old_lines, unmatched_right[j])
            if score is not None:
                scored.append((-score[0], -score[1], -score[2], i, j))
    scored.sort()
    taken_left, taken_right = set(), set()
    for *_, i, j in scored:
        if i in taken_left or j in taken_right:
            continue
        taken_left.add(i)
        taken_right.add(j)
        pairs.append(KernelPair(unmatched_left[i], unmatched_right[j]))
    pairs += [KernelPair(kernel, None) for i, kernel in enumerate(unmatched_left) if i not in taken_left]
    pairs += [KernelPair(None, kernel) for j, kernel in enumerate(unmatched_right) if j not in taken_right]
    return sorted(pairs, key=_pair_order)


def _after_coordinates(sources: frozenset[SourceKey], alignment: LineAlignment) -> frozenset[SourceKey]:
    return frozenset(alignment.paired(key) or (f"{GONE}{key[0]}", key[1]) for key in sources)


def _signature(kernel: KernelView, lines: frozenset[SourceKey]) -> tuple:
    return (kernel.phase, kernel.is_generated, kernel.stem, lines, kernel.targets)


def _similarity(old: KernelView, old_lines: frozenset[SourceKey], new: KernelView) -> tuple | None:
    if old.phase != new.phase or old.is_generated != new.is_generated:
        return None
    shared_lines = len(old_lines & new.sources)
    old_targets, new_targets = Counter(old.targets), Counter(new.targets)
    shared_targets = sum((old_targets & new_targets).values())
    comparable = shared_lines or (not old_lines and not new.sources and shared_targets)
    if not comparable:
        return None
    line_score = shared_lines / max(1, len(old_lines | new.sources))
    target_score = shared_targets / max(1, sum((old_targets | new_targets).values()))
    return (line_score, target_score, int(old.stem == new.stem))


def _order(kernel: KernelView) -> tuple:
    return (kernel.phase, kernel.graph, kernel.name)


def _pair_order(pair: KernelPair) -> tuple:
    kernel = pair.kernel
    return (kernel.phase, min(kernel.sources, default=("", 0)), kernel.name,
            pair.before.name if pair.before else "")
