"""`U`: the program's own Triton kernels (`@triton.jit`, `@triton.autotune`, `wrap_triton`):
each one's generated copy, where the user wrote it, the autotune configs with the one the
run launched, and the start of the copy itself; Enter opens the copy in the kernel pane."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.render.user_kernels import title, tuning_lines
from kernelscope.store.results import UserKernelRef

PREVIEW = 8  # lines of each copy's body shown under it


class UserKernelsScreen(ModalScreen):
    """Dismisses with the chosen kernel's copy (its stored path), or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, kernels: list[UserKernelRef], copies: dict[str, list[str]]):
        """`copies`: each kernel file's text, by line (the body's first lines are previewed)."""
        super().__init__()
        self.kernels = kernels
        self.copies = copies

    def compose(self) -> ComposeResult:
        with Vertical(id="user-kernels", classes="dialog"):
            if not self.kernels:
                yield Static("This run launched no Triton kernel of the program's own (@triton.jit, "
                             "wrap_triton, triton_op).")
                return
            yield Static(f"user Triton kernels: {len(self.kernels)} generated cop"
                         f"{'y' if len(self.kernels) == 1 else 'ies'} — enter: open the copy · esc: close")
            yield OptionList(*[Option(self._text(kernel), id=f"kernel-{index}")
                               for index, kernel in enumerate(self.kernels)], id="user-kernel-list")

    def _text(self, kernel: UserKernelRef) -> str:
        launches = ", ".join(map(str, kernel.launch_lines)) or "none"
        lines = [title(kernel), f"    copy {kernel.file}, launched at wrapper line {launches}"]
        lines += [f"    {text}" for text in tuning_lines(kernel)]
        body = _body(self.copies.get(kernel.file, []), kernel.function)
        lines += [f"    │ {text}" for text in body[:PREVIEW]]
        return "\n".join(lines)

    @on(OptionList.OptionSelected, "#user-kernel-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.kernels[int(str(event.option.id).partition("-")[2])].file)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


def _body(lines: list[str], function: str) -> list[str]:
    """The copy from its `def` line on (Inductor's imports and decorators come before it)."""
    for number, text in enumerate(lines):
        if text.lstrip().startswith("def "):
            return lines[number:]
    return lines
