"""`b`: graph breaks and recompiles with their reasons; Enter jumps to the user line."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.store.results import GraphBreakInfo, RecompileInfo


class BreaksScreen(ModalScreen):
    """Dismisses with (file, line) of the chosen graph break, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, breaks: list[GraphBreakInfo], recompiles: list[RecompileInfo]):
        super().__init__()
        self.breaks, self.recompiles = breaks, recompiles

    def compose(self) -> ComposeResult:
        options: list[Option] = []
        for index, brk in enumerate(self.breaks):
            where = f"{brk.file}:{brk.line}" if brk.file and brk.line else "(no user line)"
            code = f"  {brk.code.strip()}" if brk.code else ""
            options.append(Option(f"graph break [{brk.compile_id}] {where}{code}\n    {brk.reason}",
                                  id=f"break-{index}"))
        for index, recompile in enumerate(self.recompiles):
            options.append(Option(f"recompile [{recompile.compile_id}]\n    {recompile.reason}",
                                  id=f"recompile-{index}"))
        with Vertical(id="breaks", classes="dialog"):
            counts = f"{len(self.breaks)} graph break(s), {len(self.recompiles)} recompile(s)"
            yield Static(f"{counts} — enter: jump to the source line · esc: close")
            if options:
                yield OptionList(*options, id="breaks-list")
            else:
                yield Static("This run compiled in one graph, with no recompile.")

    @on(OptionList.OptionSelected, "#breaks-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        kind, _, index = str(event.option.id).partition("-")
        if kind == "break":
            brk = self.breaks[int(index)]
            if brk.file and brk.line:
                self.dismiss((brk.file, brk.line))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
