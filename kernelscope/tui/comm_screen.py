"""`o`: a distributed run's rank and job, which ranks compiled identical code, and per
graph the compute/communication order with each collective's model line and layer
(worded by kernelscope.render.distributed, as `kernelscope show` prints them). Enter on a
collective opens its wrapper line."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.render import distributed as text
from kernelscope.store.parts.distributed import DistributedRun


class CommScreen(ModalScreen):
    """Dismisses with (wrapper file, line) of the chosen collective, or None."""

    BINDINGS = [Binding("escape,q", "dismiss_none", "close")]

    def __init__(self, view: DistributedRun):
        super().__init__()
        self.view = view
        self.targets: dict[str, tuple[str, int]] = {}

    def compose(self) -> ComposeResult:
        view = self.view
        options: list[Option] = []
        if view.rank is not None:
            rank = view.rank
            ranks = ", ".join(f"{other.rank} (run {other.run_id})" for other in view.job_ranks)
            options.append(Option(f"{text.rank_text(rank.rank, rank.world_size, rank.backend)} · job {rank.job}\n"
                                  f"    ranks in this store: {ranks}", disabled=True))
            for line in text.code_lines(view):
                options.append(Option(line, disabled=True))
        for index, graph in enumerate(view.graphs):
            if not graph.collectives and not graph.split:
                continue
            split = f", {graph.split.label}" if graph.split else ""
            order = text.order_text(graph.order) if graph.collectives else "no collective"
            options.append(Option(f"[{graph.graph}{split}] compute/communication order:\n    {order}", disabled=True))
            for number, collective in enumerate(c for c in graph.collectives if c.role != "wait"):
                key = f"collective-{index}-{number}"
                if collective.wrapper_lines and graph.wrapper_file:
                    self.targets[key] = (graph.wrapper_file, collective.wrapper_lines[0])
                overlap = graph.overlap.get(collective.node)
                hidden = f"\n      {overlap} compute op(s) between issue and wait" if overlap is not None else ""
                options.append(Option(f"  ⇄ {text.collective_line(collective)}{hidden}", id=key))
        with Vertical(id="comm", classes="dialog"):
            collectives = view.collective_count
            yield Static(f"distributed: {collectives} collective(s) — enter: open the wrapper line · esc: close")
            if options:
                yield OptionList(*options, id="comm-list")
            else:
                yield Static("This run has no rank, collective or DDP split: it ran in one process.")

    @on(OptionList.OptionSelected, "#comm-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        target = self.targets.get(str(event.option.id))
        if target is not None:
            self.dismiss(target)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
