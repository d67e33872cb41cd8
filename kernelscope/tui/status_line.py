"""The status line: the run on screen, compile progress, the last error."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    def __init__(self, **kwargs):
        super().__init__("", **kwargs)
        self.run_text = "no run"
        self.progress = ""
        self.error = ""

    def set_run(self, text: str) -> None:
        self.run_text = text
        self._redraw()

    def set_progress(self, text: str) -> None:
        self.progress = text
        self._redraw()

    def set_error(self, text: str) -> None:
        self.error = text
        self._redraw()

    def _redraw(self) -> None:
        line = Text(self.run_text, style="bold")
        if self.progress:
            line.append("  ·  " + self.progress, style="cyan")
        if self.error:
            line.append("  ·  " + self.error, style="bold red")
        self.update(line)
