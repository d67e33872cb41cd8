"""A file as a code view shows it: its lines, and the work of drawing them, done once.

Lexing a line and building its row are the costly parts of drawing a pane, and the
same rows come back again and again: the highlights toggle on and off as the cursor
moves elsewhere, and the kernel pane switches among a handful of kernel files. A view
keeps the files it showed last (`RecentFiles`), each with its lexed lines and drawn rows.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from rich.segment import Segment
from textual.strip import Strip

from kernelscope.tui.panes.syntax import highlight, language_of, string_lines

# Rows a file keeps, by (line index, line class, marked); cleared when full. A few hundred
# screens of one file; the rows of a 200,000-line wrapper are drawn as they are reached.
ROWS_KEPT = 5000


@dataclass(eq=False)
class ShownFile:
    text: str
    lines: list[str]
    starts_in_string: list[bool]
    longest_line: int
    segments: dict[int, list[Segment]] = field(default_factory=dict)  # lexed lines by index
    rows: dict[tuple[int, str | None, bool], Strip] = field(default_factory=dict)
    rows_geometry: tuple[int, ...] = ()  # the horizontal scroll and widths the rows were drawn for
    language: str = "python"  # "cpp" for a .cpp file (syntax.language_of)

    @classmethod
    def read(cls, text: str, lex_strings: bool, language: str = "python") -> ShownFile:
        lines = text.splitlines() or [""]
        python_strings = lex_strings and language == "python"  # C++ has no triple-quoted strings
        starts_in_string = string_lines(lines) if python_strings else [False] * len(lines)
        return cls(text, lines, starts_in_string, max(len(line) for line in lines), language=language)

    def line_segments(self, index: int) -> list[Segment]:
        segments = self.segments.get(index)
        if segments is None:
            segments = self.segments[index] = highlight(self.lines[index], self.starts_in_string[index],
                                                        self.language)
        return segments

    def row(self, key: tuple[int, str | None, bool], geometry: tuple[int, ...]) -> Strip | None:
        """The row drawn before for `key` at this scroll and width, if any."""
        if geometry != self.rows_geometry:
            self.rows.clear()
            self.rows_geometry = geometry
        return self.rows.get(key)

    def keep_row(self, key: tuple[int, str | None, bool], strip: Strip) -> None:
        if len(self.rows) >= ROWS_KEPT:
            self.rows.clear()
        self.rows[key] = strip


class RecentFiles:
    """The last `size` files a view showed, by stored path; a file whose text changed is read again."""

    def __init__(self, size: int = 8):
        self.size = size
        self._files: OrderedDict[tuple[str | None, bool], ShownFile] = OrderedDict()

    def open(self, path: str | None, text: str, lex_strings: bool) -> ShownFile:
        key = (path, lex_strings)
        shown = self._files.get(key)
        if shown is None or shown.text != text:
            shown = ShownFile.read(text, lex_strings, language_of(path))
        self._files[key] = shown
        self._files.move_to_end(key)
        while len(self._files) > self.size:
            self._files.popitem(last=False)
        return shown

    def forget_rows(self) -> None:
        """The styles rows are drawn in changed: every row is drawn again."""
        for shown in self._files.values():
            shown.rows.clear()
