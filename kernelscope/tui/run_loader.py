"""The run on screen: reading a run and putting it on screen, then its facts.

`load_run` reads the run (details, kernel rows, the source file to open, its rank)
in one worker; `show` puts it on screen (status line, kernel list, cleared panes,
the source file) and, after that frame, `load_facts` reads what needs the whole run
(source lines per kernel, module instances, builds below Triton) on the bulk
gateway, so cursor moves are not queued behind it. A run switched to from the run
picker or a new build keeps the source pane's file and line when it has that file.
"""
from __future__ import annotations

import gc
from pathlib import Path

from textual.css.query import NoMatches

from kernelscope.errors import StoreError
from kernelscope.render.distributed import rank_label
from kernelscope.store import InstanceGroup
from kernelscope.store.results import KERNEL, POST_GRAD, SOURCE, WRAPPER, RunDetails
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.linking import ASM
from kernelscope.tui.messages import FactsLoaded, RunLoaded
from kernelscope.tui.run_data import add_asm_facts, add_run_facts, display_path, kernel_rows, target_file
from kernelscope.tui.store_reads import initial_source


class RunLoader(Controller):
    def __init__(self, app):
        super().__init__(app)
        self.details: RunDetails | None = None
        self.facts_loaded = False
        self.modules: list[str] = []  # every instance path of the run
        self.module_groups: list[InstanceGroup] = []  # the run's instances as a tree, alike siblings folded

    @property
    def run_id(self) -> int | None:
        return self.details.summary.id if self.details else None

    @property
    def workspace(self) -> str:
        return self.details.workspace if self.details else str(Path.cwd())

    # -- the run -----------------------------------------------------------------------------

    def switch_to(self, run_id: int) -> None:
        """Show run `run_id` with the source pane's file and line kept (where the run has that file)."""
        self.load_run(run_id, keep=self._source_position())

    @thread_worker("load", "load run")
    def load_run(self, run_id: int | None, keep: tuple[str, int] | None = None, quiet: bool = False) -> None:
        gateway = self.app.gateway
        try:
            details = gateway.call(lambda store: store.run(run_id).details())
        except StoreError:
            if quiet:
                return
            raise
        rows = kernel_rows(details)
        source, line, kept = gateway.call(initial_source, details, keep)
        rank = gateway.call(lambda store: rank_label(store.run(details.summary.id).rank()))
        self.app.post_message(RunLoaded(details, rows, source, line, kept, rank))

    def show(self, message: RunLoaded) -> None:
        app = self.app
        gc.unfreeze()  # the previous run's objects can be collected again
        self.details = details = message.details
        summary = details.summary
        rank = f" · {message.rank}" if message.rank else ""
        app.status.set_run(f"run {summary.id}{rank} · {display_path(target_file(summary.target), details.workspace)} · "
                           f"{summary.device} · {summary.mode} · {summary.graph_count} graph(s) · "
                           f"{summary.kernel_count} kernel(s)"
                           + (f" · {len(details.graph_breaks)} graph break(s)" if details.graph_breaks else ""))
        app.status.set_error("")
        self.facts_loaded = False
        self.modules, self.module_groups = [], []
        app.links.forget()
        app.kernel_list.set_rows(message.rows)
        for role in (POST_GRAD, KERNEL, WRAPPER, ASM):
            app.view(role).clear()
            app.pane(role).show_file(None)
        if message.source is None:
            app.view(SOURCE).clear("(no model source line reached a compiled graph)")
            app.pane(SOURCE).show_file(None)
        else:
            app.show_file(SOURCE, message.source, message.cursor_line)
            app.links.start_at(message.cursor_line, message.kept)
        # source lines per kernel and module instances, read once the run is on screen
        app.call_after_refresh(self.load_facts, summary.id)

    def _source_position(self) -> tuple[str, int] | None:
        view = self.app.view(SOURCE)
        return (view.path, view.cursor_line) if view.path else None

    # -- its facts -----------------------------------------------------------------------------

    @thread_worker("facts", "load facts")
    def load_facts(self, run_id: int) -> None:
        facts, groups, builds = self.app.bulk_gateway.call(lambda store: (store.run(run_id).kernel_facts(),
                                                                          store.run(run_id).module_groups(),
                                                                          store.run(run_id).asm_builds()))
        self.app.post_message(FactsLoaded(run_id, facts, groups, builds))

    def show_facts(self, message: FactsLoaded) -> None:
        if message.run_id != self.run_id:
            return
        try:
            kernel_list = self.app.kernel_list
        except NoMatches:  # the app is closing: its widgets are gone
            return
        self.modules = add_run_facts(kernel_list.rows, message.facts)
        add_asm_facts(kernel_list.rows, message.builds)
        self.module_groups = message.groups
        self.facts_loaded = True
        kernel_list.refresh_rows()
        # The run's objects (rows, facts, files, the widgets) stay while it is shown: freeze
        # them out of the cyclic collector, whose full passes over them paused the screen
        # 50-90 ms in the middle of cursor moves. Unfrozen when another run replaces this one.
        gc.freeze()
