"""`r`: the runs of the store. Enter switches to a run; `c` on two runs compares
them with `kernelscope diff` (kernels paired by what they compute)."""
from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kernelscope.store.results import RunSummary
from kernelscope.tui.run_data import display_path


class RunPicker(ModalScreen):
    """Dismisses with ("switch", run_id), ("compare", before_id, after_id) or None."""

    BINDINGS = [
        Binding("escape,q", "dismiss_none", "close"),
        Binding("c", "mark", "compare"),
    ]

    def __init__(self, runs: list[RunSummary], current: int | None, workspace: str,
                 ranks: dict[int, str] | None = None):
        super().__init__()
        self.runs = runs
        self.ranks = ranks or {}  # run id -> `1/2`: the runs of a distributed job's ranks
        self.current = current
        self.workspace = workspace
        self.marked: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="run-picker", classes="dialog"):
            yield Static("runs — enter: open · c: mark two runs to compare · esc: close", id="run-picker-hint")
            yield DataTable(id="run-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "run", "created", "target", *(["rank"] if self.ranks else []), "device", "mode",
                          "graphs", "kernels")
        for run in self.runs:
            rank = [self.ranks.get(run.id, "-")] if self.ranks else []
            created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created))
            table.add_row(self._mark(run.id), str(run.id), created,
                          display_path(run.target, self.workspace), *rank, run.device, run.mode, str(run.graph_count),
                          str(run.kernel_count), key=str(run.id))
        for index, run in enumerate(self.runs):
            if run.id == self.current:
                table.move_cursor(row=index, animate=False)
        table.focus()

    def _mark(self, run_id: int) -> str:
        return "●" if run_id == self.current else ("◆" if run_id == self.marked else "")

    def _cursor_run(self) -> int | None:
        table = self.query_one(DataTable)
        if 0 <= table.cursor_row < len(self.runs):
            return self.runs[table.cursor_row].id
        return None

    @on(DataTable.RowSelected, "#run-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.dismiss(("switch", self.runs[event.cursor_row].id))

    def action_mark(self) -> None:
        run_id = self._cursor_run()
        if run_id is None:
            return
        if self.marked is None or self.marked == run_id:
            self.marked = None if self.marked == run_id else run_id
            table = self.query_one(DataTable)
            for run in self.runs:
                table.update_cell(str(run.id), table.ordered_columns[0].key, self._mark(run.id))
            self.query_one("#run-picker-hint", Static).update(
                f"run {self.marked} marked — c on another run compares them (older → newer)"
                if self.marked is not None else "runs — enter: open · c: mark two runs to compare · esc: close")
            return
        before, after = sorted((self.marked, run_id))
        self.dismiss(("compare", before, after))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class DiffScreen(ModalScreen):
    """The text report of `kernelscope diff A B`."""

    BINDINGS = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, title: str, report: str):
        super().__init__()
        self.title_text, self.report = title, report

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diff-body", classes="dialog") as body:
            body.border_title = self.title_text
            yield Static(self.report, markup=False)
