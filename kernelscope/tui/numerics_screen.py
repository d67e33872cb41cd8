"""`e`: the run's numerics (`kernelscope numerics`): where compiled and eager first part ways,
the model lines beyond tolerance, the fixes tried; Enter jumps to the model line."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.render.numerics import divergence_text, error, fixes_text, judge_text
from kernelscope.run_record import NumericsReport
from kernelscope.store.parts.numerics import line_numerics


class NumericsScreen(ModalScreen):
    """Dismisses with (file, line) of the chosen model line, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, report: NumericsReport | None):
        super().__init__()
        self.report = report
        self.places: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="numerics", classes="dialog"):
            if self.report is None:
                yield Static("This run was recorded without numerics: record it with "
                             "`kernelscope numerics PATH.py:FACTORY` (docs/numerics.md).")
                return
            options: list[Option] = []
            first = self.report.first_divergence
            if first is not None and first.source is not None:
                self.places.append((first.source.file, first.source.line))
                options.append(Option(f"first divergence: {divergence_text(first)}\n    {first.cause}: {first.why}\n"
                                      f"    {judge_text(first)}", id="place-0"))
            for line in line_numerics(self.report):
                self.places.append((line.file, line.line))
                state = "beyond" if line.over else "within"
                options.append(Option(f"{line.file}:{line.line}  {len(line.outputs)} output(s) {state} tolerance: "
                                      f"max abs {error(line.max_abs)}, max rel {error(line.max_rel)}",
                                      id=f"place-{len(self.places) - 1}"))
            compared = sum(1 for output in self.report.outputs if output.max_abs is not None)
            fixes = fixes_text(self.report)
            yield Static(f"numerics ({self.report.target}): {compared} kernel output(s) compared with eager"
                         + (f" · fixes: {fixes}" if fixes else "") + " — enter: jump to the line · esc: close")
            if first is None:
                yield Static("No divergence: every compared kernel output agrees with eager.")
            if options:
                yield OptionList(*options, id="numerics-list")

    @on(OptionList.OptionSelected, "#numerics-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.places[int(str(event.option.id).partition("-")[2])])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
