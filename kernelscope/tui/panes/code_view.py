"""A read-only code view with a line cursor and linked-line highlights.

A line-API widget (like toolong's log view): it draws only the visible rows,
lexes only those lines, and a highlight change redraws without re-laying out,
so a 100,000-line wrapper opens and scrolls as fast as a 30-line model file.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernelscope.tui.panes.syntax import highlight, string_lines

# Keys that move a line cursor (up/down, a page, to either end): the code panes and the
# kernel table both implement actions cursor, page and edge.
LINE_CURSOR_BINDINGS = [
    Binding("up,k", "cursor(-1)", "up", show=False),
    Binding("down,j", "cursor(1)", "down", show=False),
    Binding("pageup", "page(-1)", "page up", show=False),
    Binding("pagedown", "page(1)", "page down", show=False),
    Binding("home,g", "edge(0)", "top", show=False),
    Binding("end,G", "edge(1)", "bottom", show=False),
]

MARKER = "▌"


@dataclass
class _Frame:
    """The styles and geometry one render pass of a CodeView shares."""

    base: Style
    width: int
    scroll: Offset
    styles: dict[str, Style]


class CodeView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "code-view--gutter",
        "code-view--marker",
        "code-view--cursor",
        "code-view--cursor-unfocused",
        "code-view--linked",
        "code-view--linked-cursor",
    }
    BINDINGS = [
        *LINE_CURSOR_BINDINGS,
        Binding("left,h", "scroll_sideways(-4)", "left", show=False),
        Binding("right,l", "scroll_sideways(4)", "right", show=False),
        Binding("n", "next_linked(1)", "next linked"),
        Binding("N", "next_linked(-1)", "prev linked", show=False),
        Binding("enter", "follow", "follow link"),
        Binding("u,backspace", "follow_up", "to source"),
    ]

    class CursorMoved(Message):
        """The user moved the cursor to `line` (1-based)."""

        def __init__(self, view: CodeView, line: int):
            super().__init__()
            self.view, self.line = view, line

        @property
        def control(self) -> CodeView:
            return self.view

    class FollowRequested(Message):
        """Enter (down the chain) or `u` (up to the model source) on `line`."""

        def __init__(self, view: CodeView, line: int, direction: str):
            super().__init__()
            self.view, self.line, self.direction = view, line, direction

        @property
        def control(self) -> CodeView:
            return self.view

    def __init__(self, role: str, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.role = role  # source | post_grad | kernel | wrapper
        self.path: str | None = None  # the stored key of the file shown
        self.lines: list[str] = []
        self.cursor_line = 1
        self.linked: set[int] = set()
        self.markers: set[int] = set()  # lines with any link (gutter)
        self._starts_in_string: list[bool] = []
        self._segments: dict[int, list[Segment]] = {}
        self._scroll_target: tuple[int, bool] | None = None
        self._fresh = False  # a file was loaded and not yet placed after layout
        self._frame: _Frame | None = None  # set while a render pass draws lines

    # -- content ---------------------------------------------------------------------

    def load(self, path: str | None, text: str, cursor_line: int | None = None, lex_strings: bool = True) -> None:
        """Show `text` as the file `path`; the cursor goes to `cursor_line` (or stays in range)."""
        self.path = path
        self.lines = text.splitlines() or [""]
        self._starts_in_string = string_lines(self.lines) if lex_strings else [False] * len(self.lines)
        self._segments.clear()
        self.linked = set()
        self.markers = set()
        width = max((len(line) for line in self.lines), default=0) + self._gutter_width() + 1
        self.virtual_size = Size(width, len(self.lines))
        self.cursor_line = self._clamp(cursor_line or 1)
        self.scroll_to(x=0, y=0, animate=False, immediate=True, force=True)
        self._fresh = True
        self._bring_into_view(self.cursor_line, center=True)
        self.refresh()  # (a new virtual size re-lays the view out by itself)

    def clear(self, message: str = "") -> None:
        self.load(None, message)

    def set_linked(self, lines, focus_line: int | None = None) -> None:
        """Highlight `lines` and bring `focus_line` (or the first of them) into view."""
        linked = set(lines)
        changed = linked ^ self.linked
        self.linked = linked
        target = focus_line if focus_line is not None else (min(linked) if linked else None)
        if target is not None:
            self._bring_into_view(target, center=True)
        self._refresh_numbers(changed)

    def set_markers(self, lines) -> None:
        self.markers = set(lines)
        self.refresh()

    def move_cursor(self, line: int, announce: bool = True, center: bool = False) -> None:
        line = self._clamp(line)
        previous = self.cursor_line
        changed = line != previous
        self.cursor_line = line
        self._bring_into_view(line, center=center)
        self._refresh_numbers({previous, line})
        if announce and (changed or center):
            self.post_message(self.CursorMoved(self, line))

    def _refresh_numbers(self, numbers: set[int]) -> None:
        """Repaint only these 1-based lines, where they are on screen (a scroll repaints
        the whole view by itself): a cursor move then redraws two rows, not every pane."""
        top = self.scroll_offset.y
        for number in range(top + 1, top + self.size.height + 1):
            if number in numbers:
                self.refresh_line(number - 1)

    @property
    def cursor_text(self) -> str:
        return self.lines[self.cursor_line - 1] if self.lines else ""

    # -- actions ---------------------------------------------------------------------

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_line + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_line + direction * max(self.size.height - 1, 1))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.lines) if end else 1)

    def action_scroll_sideways(self, delta: int) -> None:
        self.scroll_to(x=max(self.scroll_offset.x + delta, 0), animate=False)

    def action_next_linked(self, direction: int) -> None:
        ordered = sorted(self.linked | self.markers) if self.role == "source" and not self.linked else sorted(self.linked)
        later = [line for line in ordered if (line - self.cursor_line) * direction > 0]
        if later:
            self.move_cursor(later[0] if direction > 0 else later[-1])
        elif ordered:
            self.move_cursor(ordered[0] if direction > 0 else ordered[-1])

    def action_follow(self) -> None:
        self.post_message(self.FollowRequested(self, self.cursor_line, "down"))

    def action_follow_up(self) -> None:
        self.post_message(self.FollowRequested(self, self.cursor_line, "up"))

    def on_click(self, event: events.Click) -> None:
        self.focus()
        self.move_cursor(self.scroll_offset.y + event.y + 1)
        if event.chain == 2:
            self.action_follow()

    # -- drawing -----------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line of this pass shares, read once: the widget's style walks its
        # ancestors on each read, which was half the cost of a line.
        self._frame = self._new_frame()
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _new_frame(self) -> _Frame:
        return _Frame(
            base=self.rich_style,
            width=self.scrollable_content_region.width,
            scroll=self.scroll_offset,
            styles={name: self.get_component_rich_style(name) for name in self.COMPONENT_CLASSES},
        )

    def render_line(self, y: int) -> Strip:
        frame = self._frame or self._new_frame()
        scroll_x, scroll_y = frame.scroll
        index = scroll_y + y
        width = frame.width
        if index >= len(self.lines):
            return Strip.blank(width, frame.base)
        number = index + 1
        gutter_width = self._gutter_width()
        marker = Segment(MARKER if number in self.markers else " ", frame.styles["code-view--marker"])
        gutter = Segment(f"{number:>{gutter_width - 2}} ", frame.styles["code-view--gutter"])
        code = Strip(self._line_segments(index)).crop(scroll_x, scroll_x + max(width - gutter_width, 0))
        strip = Strip([marker, gutter, *code])
        line_style = self._line_style(number, frame.styles)
        if line_style is not None:
            strip = strip.apply_style(line_style)
        return strip.extend_cell_length(width, line_style or frame.base).crop(0, width)

    def _line_style(self, number: int, styles: dict[str, Style]) -> Style | None:
        is_cursor = number == self.cursor_line and self.path is not None
        if is_cursor and number in self.linked:
            return styles["code-view--linked-cursor"]
        if is_cursor:
            return styles["code-view--cursor" if self.has_focus else "code-view--cursor-unfocused"]
        if number in self.linked:
            return styles["code-view--linked"]
        return None

    def _line_segments(self, index: int) -> list[Segment]:
        segments = self._segments.get(index)
        if segments is None:
            segments = self._segments[index] = highlight(self.lines[index], self._starts_in_string[index])
        return segments

    def _gutter_width(self) -> int:
        return len(str(len(self.lines))) + 2

    def _clamp(self, line: int) -> int:
        return min(max(line, 1), max(len(self.lines), 1))

    def _bring_into_view(self, line: int, center: bool) -> None:
        """Scroll `line` into view now, and again once a new file's size is laid out."""
        self._scroll_target = (line, center)
        self._apply_scroll()
        self.call_after_refresh(self._apply_scroll)

    def _apply_scroll(self) -> None:
        """Bring the scroll target into view. A centred line is placed by the view's own
        height, not the region inside its scrollbars (a new file's long lines add one only
        at the next layout), and the scroll is forced (until that layout the scrollbars
        still describe the previous file and would refuse it): a file lands the same way
        whatever the timing."""
        if self._scroll_target is None:
            return
        line, center = self._scroll_target
        height = max(self.scrollable_content_region.height, 1)  # the rows a line is visible in
        top = self.scroll_offset.y
        if center:
            recenter = self._fresh and self.size.height > 0  # a new file is placed once it has a size
            if recenter:
                self._fresh = False
            if recenter or not top <= line - 1 < top + height:
                y = max(line - 1 - self.size.height // 3, 0)
                self.scroll_to(y=y, animate=False, immediate=True, force=True)
        elif line - 1 < top:
            self.scroll_to(y=line - 1, animate=False, immediate=True, force=True)
        elif line - 1 >= top + height:
            self.scroll_to(y=line - height, animate=False, immediate=True, force=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Textual moves the scrollbar only while it is shown; a new file is scrolled before
        # the layout that shows its bar, which then would start at the top.
        if new_value > 0:
            self.vertical_scrollbar.position = new_value

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
