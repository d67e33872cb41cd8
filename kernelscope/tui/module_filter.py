"""`m`: narrow the kernel list and the linked lines to one module instance (a layer)."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static


class ModuleFilterScreen(ModalScreen):
    """Dismisses with the chosen module path ("" for all), or None to keep the current filter."""

    BINDINGS = [Binding("escape", "dismiss_none", "close")]

    def __init__(self, modules: list[str], current: str, loaded: bool):
        super().__init__()
        self.modules, self.current, self.loaded = modules, current, loaded

    def compose(self) -> ComposeResult:
        with Vertical(id="modules", classes="dialog"):
            if not self.loaded:
                yield Static("The run's module instances are still loading; try again in a moment.")
            elif not self.modules:
                yield Static("This run records no module instances (recorded before module tracking, "
                             "or a plain function): nothing to filter by.")
            else:
                yield Static(f"module instance (now: {self.current or 'all'}) — type to narrow, enter to choose")
                yield Input(placeholder="e.g. blocks.0 or attn", id="module-search")
                yield OptionList("(all modules)", *self.modules, id="module-list")

    def on_mount(self) -> None:
        if self.query("#module-search"):
            self.query_one("#module-search").focus()

    @on(Input.Changed, "#module-search")
    def _narrow(self, event: Input.Changed) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(["(all modules)", *[m for m in self.modules if event.value.lower() in m.lower()]])

    @on(Input.Submitted, "#module-search")
    def _submit(self, event: Input.Submitted) -> None:
        """Enter on a typed path picks it when it names one instance exactly (or only one
        matches); otherwise the list takes the focus with the first match highlighted."""
        typed = event.value.strip()
        matches = [m for m in self.modules if typed.lower() in m.lower()]
        if typed and (typed in self.modules or len(matches) == 1):
            self.dismiss(typed if typed in self.modules else matches[0])
            return
        options = self.query_one(OptionList)
        options.focus()
        options.highlighted = 1 if matches and typed else 0

    @on(OptionList.OptionSelected, "#module-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        text = str(event.option.prompt)
        self.dismiss("" if text == "(all modules)" else text)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
