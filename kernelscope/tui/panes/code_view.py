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
from textual.color import Color
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernelscope.tui.panes.shown_file import RecentFiles, ShownFile

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
class _Styles:
    """The view's own style, its component styles and its background, read once until the
    CSS changes: each read walks the widget's ancestors (1.4 ms for the set, every frame)."""

    base: Style
    components: dict[str, Style]
    background: Color


@dataclass
class _Frame:
    """The styles and geometry one render pass of a CodeView shares."""

    styles: _Styles
    scroll: Offset
    width: int  # the columns code is visible in (inside the vertical scrollbar)
    height: int  # the rows code is visible in (above the horizontal scrollbar)
    row_width: int  # the width of a row handed to Textual: the whole view

    @property
    def geometry(self) -> tuple[int, int, int]:
        return self.scroll.x, self.width, self.row_width


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
        self.cursor_line = 1
        self.linked: set[int] = set()
        self.markers: set[int] = set()  # lines with any link (gutter)
        self._recent = RecentFiles()
        self._file: ShownFile | None = None
        self._scroll_target: tuple[int, bool] | None = None
        self._fresh = False  # a file was loaded and not yet placed (it is once the view has a size)
        self._styles: _Styles | None = None  # cleared when the CSS that applies changes

    # -- content ---------------------------------------------------------------------

    def load(self, path: str | None, text: str, cursor_line: int | None = None, lex_strings: bool = True) -> None:
        """Show `text` as the file `path`; the cursor goes to `cursor_line` (or stays in range)."""
        self.path = path
        self._file = self._recent.open(path, text, lex_strings)
        self.linked = set()
        self.markers = set()
        self._set_virtual_size(Size(self._file.longest_line + self._gutter_width() + 1, len(self.lines)))
        self.cursor_line = self._clamp(cursor_line or 1)
        self.scroll_to(x=0, y=0, animate=False, immediate=True, force=True)
        self._fresh = True
        self._bring_into_view(self.cursor_line, center=True)
        self.refresh()

    def _set_virtual_size(self, size: Size) -> None:
        """Size the scrollable area to a new file. Assigning `virtual_size` lays the whole
        screen out again and so repaints every widget (60 ms on a big run); a new file
        changes only this view's scrollbars, so they are updated in place, and a layout
        follows only when one appears or disappears (Textual's `_scroll_update` requests it)."""
        if self.virtual_size == size:
            return
        scroll_update = getattr(self, "_scroll_update", None)
        if scroll_update is None or not self.container_size:  # not laid out yet (or another Textual)
            self.virtual_size = size
            return
        self.set_reactive(CodeView.virtual_size, size)
        scroll_update(size)

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
    def lines(self) -> list[str]:
        return self._file.lines if self._file is not None else []

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
        ordered = (sorted(self.linked | self.markers) if self.role == "source" and not self.linked
                   else sorted(self.linked))
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
        """The rows in `crop`, drawn here rather than through Textual's per-widget line
        cache: that cache rebuilds every row of a view that scrolled (three Strips and a
        colour-filter pass each, about half the cost of a frame), while these rows come
        from the shown file's row cache, and the filters' results from each row's own
        cache. A code view has no border, padding, tint or opacity for it to add."""
        frame = self._new_frame()
        filters = self.get_line_filters()
        rows = []
        for y in crop.line_range:
            row = self._row(y, frame)
            for line_filter in filters:
                row = row.apply_filter(line_filter, frame.styles.background)
            rows.append(row)
        if crop.column_span != (0, frame.row_width):
            rows = [row.crop(*crop.column_span) for row in rows]
        return rows

    def render_line(self, y: int) -> Strip:
        """One row: Textual asks for single lines to find the text under the mouse."""
        return self._row(y, self._new_frame())

    def _new_frame(self) -> _Frame:
        if self._styles is None:
            self._styles = _Styles(self.rich_style,
                                   {name: self.get_component_rich_style(name) for name in self.COMPONENT_CLASSES},
                                   self.background_colors[1])
        content = self.scrollable_content_region
        return _Frame(self._styles, self.scroll_offset, content.width, content.height, self.size.width)

    def _forget_styles(self) -> None:
        self._styles = None
        self._recent.forget_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_styles()

    def _row(self, y: int, frame: _Frame) -> Strip:
        """Row `y` of the view: a line of the file, or blank below its end (and under the
        horizontal scrollbar, which covers that row)."""
        index = frame.scroll.y + y
        shown = self._file
        if shown is None or index >= len(shown.lines) or y >= frame.height:
            return Strip.blank(frame.row_width, frame.styles.base)
        number = index + 1
        line_class = self._line_class(number)
        marked = number in self.markers
        key = (index, line_class, marked)
        row = shown.row(key, frame.geometry)
        if row is None:
            row = self._draw_row(shown.line_segments(index), number, marked, line_class, frame)
            shown.keep_row(key, row)
        return row

    def _draw_row(self, code: list[Segment], number: int, marked: bool, line_class: str | None,
                  frame: _Frame) -> Strip:
        """Marker, line number and code, cut to the view's width at its horizontal scroll,
        on the line's background: made as segments and wrapped in one Strip (each Strip
        carries seven caches; chaining Strip methods made six per row)."""
        scroll_x, width, styles = frame.scroll.x, frame.width, frame.styles.components
        gutter_width = self._gutter_width()
        code_width = max(width - gutter_width, 0)
        if scroll_x:
            parts = list(Segment.divide(code, [scroll_x, scroll_x + code_width]))
            code = parts[1] if len(parts) > 1 else []
        else:
            code = Segment.adjust_line_length(code, code_width, pad=False)
        row = [Segment(MARKER if marked else " ", styles["code-view--marker"]),
               Segment(f"{number:>{gutter_width - 2}} ", styles["code-view--gutter"]), *code]
        line_style = styles[line_class] if line_class else None
        if line_style is not None:  # under the code's own colours
            row = list(Segment.apply_style(row, style=line_style))
        row = Segment.adjust_line_length(row, frame.row_width, style=line_style or frame.styles.base)
        return Strip(row, frame.row_width)

    def _line_class(self, number: int) -> str | None:
        """The component class that styles this line's background, if any."""
        is_cursor = number == self.cursor_line and self.path is not None
        if is_cursor and number in self.linked:
            return "code-view--linked-cursor"
        if is_cursor:
            return "code-view--cursor" if self.has_focus else "code-view--cursor-unfocused"
        if number in self.linked:
            return "code-view--linked"
        return None

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
        self.refresh()  # the cursor row's colour follows the focus

    def on_blur(self) -> None:
        self.refresh()
