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
from textual.message import Message
from textual.widgets import DataTable, Input

from kernelscope.tui.run_data import SORT_COLUMNS, KernelFilter, KernelRow, has_device_time, sort_key

COLUMNS = {"name": "kernel", "kind": "kind", "phase": "fw/bw", "lines": "lines", "sources": "src lines",
           "device": "device µs"}


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
        self.border_title = "kernels"

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter kernels: words of the name, kind:triton, fw, bw, graph:0/1  (/)",
                    id="kernel-filter")
        yield DataTable(id="kernel-table", cursor_type="row", zebra_stripes=True)

    @property
    def table(self) -> DataTable:
        return self.query_one(DataTable)

    def set_rows(self, rows: list[KernelRow]) -> None:
        self.rows = rows
        self.refresh_rows()

    def set_module(self, module: str) -> None:
        self.filter.module = module
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Redraw the table from `rows`, keeping the kernel under the cursor where it can."""
        table = self.table
        current = self.shown_rows[table.cursor_row].key if self.shown_rows and 0 <= table.cursor_row < len(self.shown_rows) else None
        columns = [name for name in SORT_COLUMNS if name != "device" or has_device_time(self.rows)]
        self.shown_rows = sorted((row for row in self.rows if self.filter.keeps(row)), key=sort_key(self.sort_column))
        table.clear(columns=True)
        for name in columns:
            label = COLUMNS[name] + (" ▼" if name == self.sort_column else "")
            table.add_column(label, key=name)
        table.add_rows([_cells(row, columns) for row in self.shown_rows])
        shown = f"{len(self.shown_rows)} of {len(self.rows)}" if len(self.shown_rows) != len(self.rows) else str(len(self.rows))
        module = f" · module {self.filter.module}" if self.filter.module else ""
        self.border_title = f"kernels ({shown}){module} · sorted by {COLUMNS[self.sort_column]}"
        if current is not None:
            for index, row in enumerate(self.shown_rows):
                if row.key == current:
                    table.move_cursor(row=index, animate=False)
                    break

    def action_next_sort(self) -> None:
        columns = [name for name in SORT_COLUMNS if name != "device" or has_device_time(self.rows)]
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

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        self.sort_column = str(event.column_key.value)
        self.refresh_rows()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self.shown_rows):
            self.post_message(self.KernelChosen(self, self.shown_rows[event.cursor_row]))


def _cells(row: KernelRow, columns: list[str]) -> list:
    values = {
        "name": row.name,
        "kind": row.kind,
        "phase": f"{row.phase} [{row.compile_id}]",
        "lines": "" if row.line_count is None else str(row.line_count),
        "sources": "…" if row.source_lines is None else str(len(row.source_lines)),
        "device": "" if row.device_time_us is None else f"{row.device_time_us:.1f}",
    }
    return [values[name] for name in columns]
