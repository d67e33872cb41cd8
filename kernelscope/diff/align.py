"""Pair the user source lines of two runs, so that an edit that shifts lines (an
inserted `print`) or rewrites one line (`gelu` -> `relu`) compares line with line.

Per file, the recorded lines of each side (the lines post-grad nodes came
from, with their code) are aligned on their code with difflib: equal code is
the same line, a replaced block of equal length pairs line by line (an edited
line), anything else exists on one side only. Lines no node came from (a graph
break on a `print`) move with the nearest aligned line above them.
"""
from __future__ import annotations

import bisect
import difflib
from collections import defaultdict

from kernelscope.diff.model import DiffSide, SourceKey


class LineAlignment:
    def __init__(self, before: DiffSide, after: DiffSide):
        self._to_after: dict[SourceKey, int] = {}
        self._to_before: dict[SourceKey, int] = {}
        self._anchors: dict[str, list[tuple[int, int]]] = {}  # file -> sorted (line before, line after)
        before_lines = _lines_by_file(before)
        after_lines = _lines_by_file(after)
        for file in sorted(set(before_lines) | set(after_lines)):
            old, new = before_lines.get(file, []), after_lines.get(file, [])
            matcher = difflib.SequenceMatcher(None, [code for _, code in old], [code for _, code in new],
                                              autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                    for (old_line, _), (new_line, _) in zip(old[i1:i2], new[j1:j2]):
                        self._to_after[(file, old_line)] = new_line
                        self._to_before[(file, new_line)] = old_line
            self._anchors[file] = sorted((line, self._to_after[(file, line)]) for line, _ in old
                                         if (file, line) in self._to_after)

    def paired(self, key: SourceKey) -> SourceKey | None:
        """The after-side line a recorded before-side line became, None if it is gone."""
        line = self._to_after.get(key)
        return None if line is None else (key[0], line)

    def counterpart(self, key: SourceKey) -> SourceKey | None:
        """The before-side line an after-side line was, None if it is new."""
        line = self._to_before.get(key)
        return None if line is None else (key[0], line)

    def follow(self, file: str | None, line: int | None) -> int | None:
        """Where any before-side line of `file` is on the after side: its pair when it
        has one, else shifted like the nearest aligned line above it."""
        if file is None or line is None:
            return line
        if (file, line) in self._to_after:
            return self._to_after[(file, line)]
        anchors = self._anchors.get(file, [])
        index = bisect.bisect_right(anchors, (line, float("inf"))) - 1
        if index < 0:
            return line
        before_anchor, after_anchor = anchors[index]
        return line - before_anchor + after_anchor


def _lines_by_file(run: DiffSide) -> dict[str, list[tuple[int, str]]]:
    lines: dict[str, set[int]] = defaultdict(set)
    for kernel in run.kernels:
        for file, line in kernel.sources:
            lines[file].add(line)
    for (_, (file, line)) in run.ops_by_source:
        lines[file].add(line)
    return {file: [(line, run.source_code.get((file, line), "").strip()) for line in sorted(found)]
            for file, found in lines.items()}
