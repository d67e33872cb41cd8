"""The kernel list: every kernel of the run, sortable, filterable and searchable.

Typing in the filter narrows the list (words match names; `kind:triton`,
`fw`/`bw`/`inf`, `graph:0/1` narrow further); a click on a column header or
`s` changes the sort; Enter opens the kernel in the kernel pane.
"""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Click
from textual.message import Message
from textual.widgets import Input, Static

from kernelscope.tui.kernel_table import GAP, KernelTable
from kernelscope.tui.run_data import KernelFilter, KernelRow, shown_columns, sort_key

COLUMNS = {"name": "kernel", "kind": "kind", "phase": "fw/bw", "lines": "lines", "sources": "src lines",
           "device": "device µs", "regs": "regs", "spills": "spill B"}


class KernelList(Vertical):
    BINDINGS = [
        Binding("s", "next_sort", "sort"),
        Binding("slash", "search", "search"),
    ]

    class KernelChosen(Message):
        def __init__(self, kernel_list: KernelList, row: KernelRow):
            super().__init__()
            self.kernel_list, self.row = kernel_list, row

        @property
        def control(self) -> KernelList:
            return self.kernel_list

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rows: list[KernelRow] = []
        self.shown_rows: list[KernelRow] = []
        self.filter = KernelFilter()
        self.sort_column = "phase"
        self.columns: list[str] = []
        self.header_widths: list[int] = []
        self.border_title = "kernels"

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter kernels: words of the name, kind:triton, fw, bw, graph:0/1  (/)",
                    id="kernel-filter")
        yield Static("", id="kernel-header")
        yield KernelTable(id="kernel-table")

    @property
    def table(self) -> KernelTable:
        return self.query_one(KernelTable)

    def set_rows(self, rows: list[KernelRow]) -> None:
        self.rows = rows
        self.refresh_rows()

    def set_module(self, module: str, paths: tuple[str, ...] = ()) -> None:
        """Keep the kernels of module instance `module` ("" for all), or of any of `paths`
        (a folded group's members, `module` being its label)."""
        self.filter.module, self.filter.modules = module, paths
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Redraw the table from `rows`, keeping the kernel under the cursor where it can."""
        table = self.table
        current = self.shown_rows[table.cursor_row].key if 0 <= table.cursor_row < len(self.shown_rows) else None
        self.columns = shown_columns(self.rows)
        self.shown_rows = sorted((row for row in self.rows if self.filter.keeps(row)), key=sort_key(self.sort_column))
        labels = [COLUMNS[name] + (" ▼" if name == self.sort_column else "") for name in self.columns]
        cells = [_cells(row, self.columns) for row in self.shown_rows]
        widths = [max([len(label)] + [len(row[index]) for row in cells]) for index, label in enumerate(labels)]
        self.query_one("#kernel-header", Static).update(
            "".join(label.ljust(width + GAP) for label, width in zip(labels, widths)))
        self.header_widths = widths
        cursor = next((index for index, row in enumerate(self.shown_rows) if row.key == current), 0)
        table.set_rows(cells, widths, cursor)
        shown = (f"{len(self.shown_rows)} of {len(self.rows)}" if len(self.shown_rows) != len(self.rows)
                 else str(len(self.rows)))
        module = f" · module {self.filter.module}" if self.filter.module else ""
        self.border_title = f"kernels ({shown}){module} · sorted by {COLUMNS[self.sort_column]}"

    def action_next_sort(self) -> None:
        columns = shown_columns(self.rows)
        self.sort_column = columns[(columns.index(self.sort_column) + 1) % len(columns)]
        self.refresh_rows()

    def action_search(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Changed, "#kernel-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter.text = event.value
        self.refresh_rows()

    @on(Input.Submitted, "#kernel-filter")
    def _filter_submitted(self) -> None:
        self.table.focus()

    @on(Click, "#kernel-header")
    def _header_clicked(self, event: Click) -> None:
        """A click on a column's title sorts by that column."""
        start = 0
        for name, width in zip(self.columns, self.header_widths):
            if start <= event.x < start + width + GAP:
                self.sort_column = name
                self.refresh_rows()
                return
            start += width + GAP

    @on(KernelTable.RowChosen)
    def _row_chosen(self, event: KernelTable.RowChosen) -> None:
        if 0 <= event.index < len(self.shown_rows):
            self.post_message(self.KernelChosen(self, self.shown_rows[event.index]))


def _cells(row: KernelRow, columns: list[str]) -> list:
    values = {
        "name": row.name,
        "kind": row.kind,
        "phase": f"{row.phase} [{row.compile_id}]",
        "lines": "" if row.line_count is None else str(row.line_count),
        "sources": "…" if row.source_lines is None else str(len(row.source_lines)),
        "device": "" if row.device_time_us is None else f"{row.device_time_us:.1f}",
        "regs": "" if row.registers is None else str(row.registers),
        "spills": "" if row.spill_bytes is None else str(row.spill_bytes),
    }
    return [values[name] for name in columns]
