"""Lines of a source file as recorded in a run, against the file as it is now.

A run remembers the code of every source line its nodes point at. When the file
changed since (an edit not yet recompiled), a recorded line is found again by its
content: a line with the same text, the nearest to where the other matches say
it moved. A line that cannot be found is *unmapped*: the features then say the
run is stale instead of answering for a different line. 1-based line numbers.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class LineMap:
    stale: bool = False  # the recorded lines do not all sit where they were
    to_current: dict[int, int] = field(default_factory=dict)  # recorded -> current (stale only)
    to_recorded: dict[int, int] = field(default_factory=dict)  # current -> recorded (stale only)
    lost: list[int] = field(default_factory=list)  # recorded lines not found in the current text
    anchors: list[tuple[int, int]] = field(default_factory=list)  # (recorded, current) of unique matches
    known: frozenset[int] = frozenset()  # recorded lines whose code the run kept

    def current_line(self, recorded: int) -> int | None:
        """Where a recorded line is now; None when it is gone."""
        if not self.stale:
            return recorded
        if recorded in self.known:
            return self.to_current.get(recorded)
        return recorded + _shift_near(recorded, self.anchors, [r for r, _ in self.anchors]) if self.anchors else None

    def recorded_line(self, current: int) -> int | None:
        """Which recorded line a current line is; None when the line is new or changed."""
        if not self.stale:
            return current
        if current in self.to_recorded:
            return self.to_recorded[current]
        if not self.anchors:
            return None
        # A line the run kept no code for (a graph break's line): follow the nearest anchor.
        backwards = [(now, then) for then, now in self.anchors]
        backwards.sort()
        recorded = current + _shift_near(current, backwards, [now for now, _ in backwards])
        return None if recorded in self.known else recorded


IDENTITY = LineMap()


def build_line_map(recorded: dict[int, str], current_lines: list[str]) -> LineMap:
    """`recorded`: line -> its code when recorded ("" when the run did not keep it)."""
    known = {line: code.strip() for line, code in recorded.items() if code and code.strip()}
    if all(0 < line <= len(current_lines) and current_lines[line - 1].strip() == code
           for line, code in known.items()):
        return IDENTITY
    positions: dict[str, list[int]] = {}
    for number, text in enumerate(current_lines, 1):
        positions.setdefault(text.strip(), []).append(number)
    line_map = LineMap(stale=True, known=frozenset(known))
    # First the lines whose text is unique now: they fix how far the code moved.
    anchors: list[tuple[int, int]] = []
    for line, code in sorted(known.items()):
        candidates = positions.get(code, [])
        if len(candidates) == 1:
            anchors.append((line, candidates[0]))
    anchor_lines = [recorded_line for recorded_line, _ in anchors]
    line_map.anchors = anchors
    for line, code in sorted(known.items()):
        candidates = positions.get(code, [])
        if not candidates:
            line_map.lost.append(line)
            continue
        expected = line + _shift_near(line, anchors, anchor_lines)
        best = min(candidates, key=lambda candidate: (abs(candidate - expected), candidate))
        line_map.to_current[line] = best
    for line, current in line_map.to_current.items():
        line_map.to_recorded.setdefault(current, line)
    return line_map


def _shift_near(line: int, anchors: list[tuple[int, int]], anchor_lines: list[int]) -> int:
    if not anchors:
        return 0
    index = bisect.bisect_left(anchor_lines, line)
    nearby = anchors[max(index - 1, 0):index + 1]
    recorded, current = min(nearby, key=lambda pair: abs(pair[0] - line))
    return current - recorded
