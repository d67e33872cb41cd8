"""Memory of two runs side by side (the dumps' `run.memory`, docs/memory.md), and the
`memory` gate: `--fail-on memory` (B's peak above A's by more than 10%) or `memory+N%`.

Compared: the peak (the highest graph peak, inputs included) and the activations saved for
the backward, as totals; per model line (file, line, module instance), the bytes saved for
the backward and live at the peak, largest changes first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.render.text import format_bytes

DEFAULT_TOLERANCE = 0.10  # `--fail-on memory`: trips above +10% peak


@dataclass
class LineMemoryChange:
    where: str  # `model.py:41 (blocks.0.attn)`
    saved_before: int
    saved_after: int
    live_before: int
    live_after: int


@dataclass
class MemoryDiff:
    before: dict | None  # {"peak_bytes", "saved_for_backward_bytes"}; None: the dump recorded no memory
    after: dict | None
    lines: list[LineMemoryChange] = field(default_factory=list)  # largest change first
    tolerance: float = DEFAULT_TOLERANCE


TOTAL_KEYS = ("peak_bytes", "saved_for_backward_bytes")


def compare_memory(before: dict | None, after: dict | None) -> MemoryDiff | None:
    """None when neither side recorded memory."""
    if before is None and after is None:
        return None
    result = MemoryDiff({key: before[key] for key in TOTAL_KEYS} if before else None,
                        {key: after[key] for key in TOTAL_KEYS} if after else None)
    if before and after:
        lines_a, lines_b = _by_line(before), _by_line(after)
        for key in sorted(set(lines_a) | set(lines_b)):
            a, b = lines_a.get(key, {}), lines_b.get(key, {})
            change = LineMemoryChange(f"{key[0]}:{key[1]}" + (f" ({key[2]})" if key[2] else ""),
                                      a.get("saved_for_backward_bytes", 0), b.get("saved_for_backward_bytes", 0),
                                      a.get("live_at_peak_bytes", 0), b.get("live_at_peak_bytes", 0))
            if (change.saved_before, change.live_before) != (change.saved_after, change.live_after):
                result.lines.append(change)
        result.lines.sort(key=lambda c: -max(abs(c.saved_after - c.saved_before), abs(c.live_after - c.live_before)))
    return result


def _by_line(memory: dict) -> dict[tuple[str, int, str], dict]:
    return {(line["file"], line["line"], line["module"]): line for line in memory["lines"]}


def parse_tolerance(text: str) -> float:
    """`10%` -> 0.10 (the part of `memory+10%` after the plus)."""
    number = text.strip().removesuffix("%")
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"{text!r} is not a percentage: write it as memory+10%")
    return value / 100


def gate_reasons(diff: MemoryDiff | None) -> list[str]:
    if diff is None or diff.before is None or diff.after is None:
        missing = "neither side" if diff is None else "A" if diff.before is None else "B"
        return [f"memory: {missing} recorded memory (record both with this kernelscope, or dump them again)"]
    before, after = diff.before["peak_bytes"], diff.after["peak_bytes"]
    if before and after > before * (1 + diff.tolerance):
        grown = ", ".join(f"{c.where} {_signed(c.live_after - c.live_before)} live at peak"
                          for c in diff.lines[:3] if c.live_after != c.live_before)
        return [f"peak memory {_size(before)} -> {_size(after)} (+{(after / before - 1) * 100:.1f}%, over "
                f"+{diff.tolerance * 100:g}%)" + (f": {grown}" if grown else "")]
    return []


def render_lines(diff: MemoryDiff | None) -> list[str]:
    if diff is None:
        return []
    if diff.before is None or diff.after is None:
        return [f"memory: only {'B' if diff.before is None else 'A'} recorded memory"]
    out = ["memory:"]
    for key, label in (("peak_bytes", "peak"), ("saved_for_backward_bytes", "saved for backward")):
        a, b = diff.before[key], diff.after[key]
        out.append(f"  {label}: {_size(a)} -> {_size(b)}" + (f" ({_signed(b - a)})" if a != b else ""))
    for change in diff.lines[:10]:
        parts = []
        if change.saved_after != change.saved_before:
            parts.append(f"saves {_signed(change.saved_after - change.saved_before)} for backward")
        if change.live_after != change.live_before:
            parts.append(f"{_signed(change.live_after - change.live_before)} live at peak")
        out.append(f"  {change.where}  {' · '.join(parts)}")
    return out


def _size(count: int) -> str:
    return format_bytes(count)


def _signed(delta: int) -> str:
    return ("+" if delta > 0 else "-") + _size(abs(delta))
