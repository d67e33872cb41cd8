"""`M`: the run's memory (docs/memory.md): the peak, each graph's allocation timeline with
the bytes live after each step (the peak marked), and the model lines holding the most
(saved for backward, live at the peak, against eager) — worded by kernelscope.render.memory,
as `kernelscope memory` prints them. Enter on a timeline step opens its wrapper line; on a
model line, the source line."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.render import memory as text
from kernelscope.render.text import format_bytes
from kernelscope.store.parts.memory import RunMemory

BAR_WIDTH = 24  # characters of the live-bytes bar at the peak


class MemoryScreen(ModalScreen):
    """Dismisses with ("wrapper" | "source", file, line) of the chosen step or line, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, memory: RunMemory | None):
        super().__init__()
        self.memory = memory
        self.targets: dict[str, tuple[str, str, int]] = {}

    def compose(self) -> ComposeResult:
        memory = self.memory
        options: list[Option] = []
        if memory is not None:
            options += [Option(line.strip(), disabled=True) for line in text.section_lines(memory, top=0)
                        if not line.lstrip().startswith(("[", "model lines", "…"))]
            for number, entry in enumerate(memory.lines[:30]):
                if entry.file and (entry.saved_for_backward_bytes or entry.live_at_peak_bytes or entry.more_than_eager):
                    key = f"line-{number}"
                    self.targets[key] = ("source", entry.file, entry.line)
                    options.append(Option(f"  {text.model_line(entry)}", id=key))
            for index, graph in enumerate(memory.graphs):
                options.append(Option(text.graph_line(graph), disabled=True))
                by_name = {buffer.name: buffer for buffer in graph.buffers}
                for number, event in enumerate(graph.timeline):
                    key = f"step-{index}-{number}"
                    if graph.wrapper:
                        self.targets[key] = ("wrapper", graph.wrapper, event["line"])
                    buffer = by_name.get(event["buffer"])
                    where = f" {buffer.file}:{buffer.line}" if buffer is not None and buffer.file else ""
                    bar = "█" * max(1, round(BAR_WIDTH * event["live_bytes"] / max(graph.peak_bytes, 1)))
                    peak = " ← peak" if event["line"] == graph.peak_line else ""
                    options.append(Option(f"  L{event['line']:<5} {event['action']:<8} {event['buffer']:<7} "
                                          f"{format_bytes(event['live_bytes']):>10} {bar}{peak}{where}", id=key))
        with Vertical(id="memory", classes="dialog"):
            peak = f"peak {format_bytes(memory.peak_bytes)}" if memory is not None else "no memory"
            yield Static(f"memory: {peak} — enter: open the wrapper or model line · esc: close")
            if options:
                yield OptionList(*options, id="memory-list")
            else:
                yield Static("This run recorded no memory (recorded before kernelscope kept it, or imported).")

    @on(OptionList.OptionSelected, "#memory-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        target = self.targets.get(str(event.option.id))
        if target is not None:
            self.dismiss(target)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
