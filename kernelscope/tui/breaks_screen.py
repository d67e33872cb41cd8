"""`b`: graph breaks, recompiles and ops kept in different kernels, with their reasons;
Enter jumps to the user line (a recompile's: the line whose guard failed; a pair's: its
first op's line, docs/why.md)."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.render.why import kept_apart_text, recompile_text
from kernelscope.store.parts.why import NotFusedRef, RecompileRef
from kernelscope.store.results import GraphBreakInfo, RecompileInfo


class BreaksScreen(ModalScreen):
    """Dismisses with (file, line) of the chosen graph break, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, breaks: list[GraphBreakInfo], recompiles: list[RecompileInfo],
                 failures: list[RecompileRef] | None = None, not_fused: list[NotFusedRef] | None = None):
        super().__init__()
        self.breaks, self.recompiles = breaks, recompiles
        self.failures = failures or []  # each recompile's failed guards, at their lines
        self.not_fused = not_fused or []  # ops kept in different kernels, and why

    def compose(self) -> ComposeResult:
        options: list[Option] = []
        for index, brk in enumerate(self.breaks):
            where = f"{brk.file}:{brk.line}" if brk.file and brk.line else "(no user line)"
            code = f"  {brk.code.strip()}" if brk.code else ""
            options.append(Option(f"graph break [{brk.compile_id}] {where}{code}\n    {brk.reason}",
                                  id=f"break-{index}"))
        explained = {failure.compile_id for failure in self.failures}
        for index, failure in enumerate(self.failures):
            file, line, code = failure.lines[-1] if failure.lines else (None, None, "")
            where = f"{file}:{line}  {code.strip()}" if file else "(no user line)"
            advice = f"\n    advice: {failure.advice}" if failure.advice else ""
            options.append(Option(f"recompile {where}\n    {recompile_text(failure)}{advice}", id=f"failure-{index}"))
        for index, recompile in enumerate(self.recompiles):
            if recompile.compile_id in explained:
                continue
            options.append(Option(f"recompile [{recompile.compile_id}]\n    {recompile.reason}",
                                  id=f"recompile-{index}"))
        for index, ref in enumerate(self.not_fused):
            where = f"{ref.file}:{ref.line}  {ref.code.strip()}" if ref.file else "(no user line)"
            options.append(Option(f"not fused {where}\n    {kept_apart_text(ref)}", id=f"apart-{index}"))
        with Vertical(id="breaks", classes="dialog"):
            counts = (f"{len(self.breaks)} graph break(s), {len(self.recompiles)} recompile(s), "
                      f"{len(self.not_fused)} pair(s) not fused")
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
        elif kind == "failure" and self.failures[int(index)].lines:
            file, line, _ = self.failures[int(index)].lines[-1]
            self.dismiss((file, line))
        elif kind == "apart" and self.not_fused[int(index)].file:
            ref = self.not_fused[int(index)]
            self.dismiss((ref.file, ref.line))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
