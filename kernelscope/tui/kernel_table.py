"""The kernel list's rows: a line-API table that draws only the visible rows.

Textual's DataTable measures every cell of every row when rows change (about 6 s
for 5,000 kernels here); this table sizes columns from string lengths and
renders only what is on screen, so re-sorting or filtering 5,000 rows is instant.
"""
from __future__ import annotations

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernelscope.tui.panes.code_view import LINE_CURSOR_BINDINGS

GAP = 2


class KernelTable(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"kernel-table--cursor", "kernel-table--cursor-unfocused", "kernel-table--zebra"}
    BINDINGS = [
        *LINE_CURSOR_BINDINGS,
        Binding("enter", "choose", "open kernel"),
    ]

    class RowChosen(Message):
        def __init__(self, table: KernelTable, index: int):
            super().__init__()
            self.table, self.index = table, index

        @property
        def control(self) -> KernelTable:
            return self.table

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rows: list[list[str]] = []
        self.widths: list[int] = []
        self.cursor_row = 0

    def set_rows(self, rows: list[list[str]], widths: list[int], cursor_row: int = 0) -> None:
        self.rows, self.widths = rows, widths
        self.cursor_row = min(max(cursor_row, 0), max(len(rows) - 1, 0))
        self.virtual_size = Size(sum(widths) + GAP * len(widths), len(rows))
        self._bring_into_view()
        self.call_after_refresh(self._bring_into_view)
        self.refresh()

    def move_cursor(self, row: int) -> None:
        if not self.rows:
            return
        self.cursor_row = min(max(row, 0), len(self.rows) - 1)
        self._bring_into_view()
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.rows) - 1 if end else 0)

    def action_choose(self) -> None:
        if self.rows:
            self.post_message(self.RowChosen(self, self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        self.focus()
        self.move_cursor(self.scroll_offset.y + event.y)
        if event.chain == 2:
            self.action_choose()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        text = "".join(cell.ljust(column + GAP) for cell, column in zip(self.rows[index], self.widths))
        if index == self.cursor_row:
            style = self.get_component_rich_style(
                "kernel-table--cursor" if self.has_focus else "kernel-table--cursor-unfocused")
        elif index % 2:
            style = self.get_component_rich_style("kernel-table--zebra")
        else:
            style = self.rich_style
        return Strip([Segment(text, style)]).crop(scroll_x, scroll_x + width).extend_cell_length(width, style)

    def _bring_into_view(self) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = self.scroll_offset.y
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True)
