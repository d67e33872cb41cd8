"""Timing decisions in a diff (dumps of schema 5.0): the same decision (kind and
Inductor's key) made differently on the two sides — a GPU that padded where another
did not, a virtual-cuda run that guessed where the GPU timed — and the decisions only
one side made (docs/decisions.md)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kernelscope.render.decisions import KIND_LABELS


@dataclass(frozen=True)
class DecisionView:
    kind: str
    key: str
    summary: str
    choice: str
    origin: str  # timed | heuristic | replayed | guessed
    rule: str


@dataclass
class DecisionChange:
    kind: str
    key: str
    summary: str
    choice_before: str
    choice_after: str
    origin_before: str
    origin_after: str
    rule_before: str
    rule_after: str


@dataclass
class DecisionDiff:
    changed: list[DecisionChange] = field(default_factory=list)  # same decision, another choice
    same: int = 0  # same decision, same choice
    only_before: dict[str, int] = field(default_factory=dict)  # kind -> decisions only A made
    only_after: dict[str, int] = field(default_factory=dict)
    guessed_before: int = 0
    guessed_after: int = 0


def decision_views(run: dict) -> list[DecisionView]:
    """The decisions of a dumped run (none before schema 5.0)."""
    return [DecisionView(d["kind"], d["key"], d.get("summary", ""), d["choice"], d["origin"], d.get("rule", ""))
            for d in run.get("decisions") or []]


def compare_decisions(before: list[DecisionView], after: list[DecisionView]) -> DecisionDiff | None:
    """None when neither side made a timing decision."""
    if not before and not after:
        return None
    old = {(d.kind, d.key): d for d in reversed(before)}
    new = {(d.kind, d.key): d for d in reversed(after)}
    result = DecisionDiff(guessed_before=sum(d.origin == "guessed" for d in before),
                          guessed_after=sum(d.origin == "guessed" for d in after))
    for key in sorted(set(old) & set(new)):
        a, b = old[key], new[key]
        if a.choice == b.choice:
            result.same += 1
        else:
            result.changed.append(DecisionChange(a.kind, a.key, b.summary or a.summary, a.choice, b.choice,
                                                 a.origin, b.origin, a.rule, b.rule))
    result.only_before = dict(sorted(Counter(kind for kind, _ in set(old) - set(new)).items()))
    result.only_after = dict(sorted(Counter(kind for kind, _ in set(new) - set(old)).items()))
    return result


def render_lines(diff: DecisionDiff | None) -> list[str]:
    """The report's timing-decisions section (text and markdown alike)."""
    if diff is None:
        return []
    out = [f"timing decisions: {diff.same} made alike, {len(diff.changed)} made differently"
           f" (guessed: A {diff.guessed_before}, B {diff.guessed_after})"]
    for change in diff.changed:
        label = KIND_LABELS.get(change.kind, change.kind)
        out.append(f"  ~ {label} {change.summary or change.key[:80]}: {change.choice_before} ({change.origin_before}) "
                   f"-> {change.choice_after} ({change.origin_after})")
        if change.origin_after in ("guessed", "replayed"):
            out.append(f"      B: {change.rule_after}")
    for side, counts in (("A", diff.only_before), ("B", diff.only_after)):
        if counts:
            listed = ", ".join(f"{count} {KIND_LABELS.get(kind, kind)}" for kind, count in counts.items())
            out.append(f"  only {side} made: {listed}")
    return out
