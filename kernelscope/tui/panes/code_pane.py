"""One bordered pane around a CodeView: its title names the file shown."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Container

from kernelscope.tui.linking import PANE_TITLES
from kernelscope.tui.panes.code_view import CodeView


class CodePane(Container):
    def __init__(self, role: str, key: str):
        super().__init__(id=f"pane-{role}", classes="code-pane")
        self.role = role
        self.key = key  # the number key that focuses it
        self.border_title = f"{key} {PANE_TITLES[role]}"

    def compose(self) -> ComposeResult:
        yield CodeView(self.role, id=f"view-{self.role}")

    @property
    def view(self) -> CodeView:
        return self.query_one(CodeView)

    def show_file(self, label: str | None) -> None:
        self.border_title = f"{self.key} {PANE_TITLES[self.role]}" + (f": {label}" if label else "")
