"""The kernelscope explorer: four linked code panes, the kernel list, runs, breaks.

Every store read and every compile runs in a thread worker that posts a
message back; the UI thread only draws. One query per cursor move computes
the linked lines of all panes; answers that arrive after the cursor moved on
are dropped.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.css.query import NoMatches
from textual.worker import Worker, WorkerState

from kernelscope.errors import StoreError, UserError, full_error, traceback_wanted
from kernelscope.store import InstanceGroup, Store
from kernelscope.store.results import KERNEL, POST_GRAD, SOURCE, WRAPPER, RunDetails, RunSummary
from kernelscope.store.run_facts import KernelFacts
from kernelscope.asm.text import spills_text
from kernelscope.store.asm_store import for_a_gpu
from kernelscope.render.distributed import collective_line, rank_label
from kernelscope.tui.breaks_list import BreaksScreen
from kernelscope.tui.comm_screen import CommScreen
from kernelscope.tui.chain_line import ChainLine
from kernelscope.tui.compile_driver import CompileDriver, CompileRequest
from kernelscope.tui.gateway import Stale, StoreGateway
from kernelscope.tui.help_screen import HelpScreen
from kernelscope.tui.kernel_list import KernelList
from kernelscope.tui.key_footer import KeyFooter
from kernelscope.tui.linking import (
    ASM,
    PANES,
    LinkSet,
    PaneLinks,
    add_kernel_launches,
    launch_lines,
    link_set,
    source_link_set,
)
from kernelscope.tui.module_filter import EVERY_MODULE, ModuleChoice, ModuleFilterScreen
from kernelscope.tui.panes.code_pane import CodePane
from kernelscope.tui.panes.code_view import CodeView
from kernelscope.tui.run_data import KernelRow, add_asm_facts, add_run_facts, display_path, kernel_rows, target_file
from kernelscope.tui.run_picker import DiffScreen, RunPicker
from kernelscope.tui.status_line import StatusLine
from kernelscope.watch.events import (
    BuildFailed,
    BuildFinished,
    BuildPhase,
    BuildStarted,
    WatchEvent,
    WorkerReady,
    WorkerRestarted,
)

_FULL_ERROR_HINT = "KERNELSCOPE_TRACEBACK=1 prints the full error on exit"
PANE_KEYS = {SOURCE: "1", POST_GRAD: "2", KERNEL: "3", WRAPPER: "4", ASM: "4"}
ASM_STAGES = (None, "sass", "ptx")  # what `a` cycles the fourth pane through (None: the wrapper)
STAGE_NAMES = {"sass": "SASS", "ptx": "PTX"}
# Only what the other panes show: a model line needs what is below it, a kernel line what is
# above it (its launch comes from the run's facts); graph and wrapper lines need both.
QUERY_DIRECTION = {SOURCE: "down", POST_GRAD: "both", KERNEL: "up", WRAPPER: "both"}
# Enter follows the chain down to the first of these panes with linked lines.
FOLLOW_DOWN = {SOURCE: [POST_GRAD, KERNEL, WRAPPER], POST_GRAD: [KERNEL, WRAPPER], KERNEL: [WRAPPER],
               WRAPPER: [KERNEL, POST_GRAD]}


@dataclass
class OpenFile:
    """A file to show in a pane, read by a worker."""

    path: str  # stored key
    label: str  # what the pane title shows
    text: str


class KernelscopeApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "kernelscope"
    BINDINGS = [
        Binding("1", "focus_pane('source')", "source", show=False),
        Binding("2", "focus_pane('post_grad')", "post-grad", show=False),
        Binding("3", "focus_pane('kernel')", "kernel", show=False),
        Binding("4", "focus_pane('wrapper')", "wrapper", show=False),
        Binding("5", "focus_kernels", "kernels", show=False),
        Binding("r", "runs", "runs"),
        Binding("b", "breaks", "breaks"),
        Binding("m", "modules", "module"),
        Binding("x", "clear_module", "all modules", show=False),
        Binding("a", "toggle_asm", "SASS/PTX"),
        Binding("B", "build_asm", "build PTX/SASS", show=False),
        Binding("o", "comm", "comm order", show=False),
        Binding("question_mark", "help", "keys"),
        Binding("q", "quit", "quit"),
    ]

    # -- messages the workers post back -------------------------------------------------

    class RunLoaded(Message):
        def __init__(self, details: RunDetails, rows: list[KernelRow], source: OpenFile | None, cursor_line: int,
                     kept: bool, rank: str = ""):
            super().__init__()
            self.details, self.rows, self.source, self.cursor_line = details, rows, source, cursor_line
            self.kept = kept  # the cursor's source line was carried over from the previous run
            self.rank = rank  # `rank 1/2` for a rank of a distributed job

    class AsmLoaded(Message):
        """What the PTX/SASS pane shows for the kernel pane's lines: a stage file (`file`, its
        `lines` linked to them) or, without a build, why not (`message`)."""

        def __init__(self, generation: int, kernel: str, stage: str, file: OpenFile | None, lines: list[int],
                     title: str, message: str = ""):
            super().__init__()
            self.generation, self.kernel, self.stage, self.file, self.lines = generation, kernel, stage, file, lines
            self.title, self.message = title, message

    class AsmBuilt(Message):
        def __init__(self, run_id: int, summary: dict):
            super().__init__()
            self.run_id, self.summary = run_id, summary

    class AsmProgress(Message):
        def __init__(self, detail: str):
            super().__init__()
            self.detail = detail

    class CommLoaded(Message):
        def __init__(self, view):
            super().__init__()
            self.view = view

    class MarkersLoaded(Message):
        """The lines of a source file that have links (gutter marks), computed after the first paint."""

        def __init__(self, run_id: int, path: str, lines: list[int]):
            super().__init__()
            self.run_id, self.path, self.lines = run_id, path, lines

    class LinksReady(Message):
        def __init__(self, generation: int, links: LinkSet, files: dict[str, OpenFile]):
            super().__init__()
            self.generation, self.links, self.files = generation, links, files

    class FileOpened(Message):
        """A file to show in `pane` with the cursor on `line` (kernel list, graph breaks)."""

        def __init__(self, pane: str, file: OpenFile, line: int):
            super().__init__()
            self.pane, self.file, self.line = pane, file, line

    class FactsLoaded(Message):
        def __init__(self, run_id: int, facts: dict[str, KernelFacts], groups: list[InstanceGroup], builds: dict):
            super().__init__()
            self.run_id, self.facts, self.groups, self.builds = run_id, facts, groups, builds

    class RunsListed(Message):
        def __init__(self, runs: list[RunSummary], ranks: dict[int, str] | None = None):
            super().__init__()
            self.runs, self.ranks = runs, ranks or {}

    class DiffReady(Message):
        def __init__(self, title: str, report: str):
            super().__init__()
            self.title, self.report = title, report

    class CompileEvent(Message):
        def __init__(self, event: WatchEvent):
            super().__init__()
            self.event = event

    # -- set-up ----------------------------------------------------------------------------

    def __init__(self, store: str | Path, run_id: int | None = None, compile_request: CompileRequest | None = None):
        super().__init__()
        self.store_root = Path(store).absolute()
        self.gateway = StoreGateway(self.store_root)  # interactive reads: cursor moves, files
        self.bulk_gateway = StoreGateway(self.store_root)  # whole-run reads that must not delay them
        self.requested_run = run_id
        self.compile_request = compile_request
        self.details: RunDetails | None = None
        self.module = ""  # the module filter's label ("" for all)
        self.module_paths: tuple[str, ...] = ()  # the instances it keeps (a folded group: its members)
        self.modules: list[str] = []  # every instance path of the run
        self.module_groups: list[InstanceGroup] = []  # the run's instances as a tree, alike siblings folded
        self.facts_loaded = False
        self.link_generation = 0
        self.last_links: LinkSet | None = None
        self.last_query: tuple[str, int] | None = None  # (pane, line) of the links on screen
        self._compile_driver: CompileDriver | None = None
        self._awaiting_first_line = False
        self._launches: dict[str, dict[str, list[int]]] = {}  # wrapper -> kernel -> launch lines (links worker)
        self.full_errors: list[str] = []  # printed on exit with KERNELSCOPE_TRACEBACK=1
        self.asm_stage: str | None = None  # the fourth pane shows this stage of the kernel (None: the wrapper)
        self.asm_generation = 0
        self._asm_builder = None  # an AsmBuilder (its own engine worker), made on the first build

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Grid(id="panes"):
            for role in PANES:
                yield CodePane(role, PANE_KEYS[role])
            yield CodePane(ASM, PANE_KEYS[ASM])  # hidden until `a`: in the wrapper pane's place
        yield ChainLine(id="chain")
        yield KernelList(id="kernels")
        yield KeyFooter()

    def on_mount(self) -> None:
        for role in PANES:
            self.view(role).clear()
        self.pane(ASM).display = False
        self.status.set_run(f"store {display_path(str(self.store_root), str(Path.cwd()))}")
        if self.compile_request is not None:
            self.status.set_progress(f"compiling {self.compile_request.target} in the engine worker…")
            self.compile_target()
        if self.requested_run is not None or self.compile_request is None:
            self.load_run(self.requested_run)
        else:
            self.load_run(None, quiet=True)  # the last run on screen while the first build runs
        self.view(SOURCE).focus()

    def on_unmount(self) -> None:
        gc.unfreeze()
        if self._compile_driver is not None:
            self._compile_driver.stop()
        if self._asm_builder is not None:
            self._asm_builder.stop()
        self.gateway.close()
        self.bulk_gateway.close()

    # -- helpers ---------------------------------------------------------------------------

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def pane(self, role: str) -> CodePane:
        return self.query_one(f"#pane-{role}", CodePane)

    def view(self, role: str) -> CodeView:
        return self.query_one(f"#view-{role}", CodeView)

    @property
    def run_id(self) -> int | None:
        return self.details.summary.id if self.details else None

    @property
    def workspace(self) -> str:
        return self.details.workspace if self.details else str(Path.cwd())

    def shown_files(self) -> dict[str, str | None]:
        return {role: self.view(role).path for role in PANES}

    def show_file(self, role: str, file: OpenFile, cursor_line: int | None = None) -> None:
        view = self.view(role)
        view.load(file.path, file.text, cursor_line, lex_strings=role != WRAPPER)
        self.pane(role).show_file(file.label)
        if role == SOURCE and self.run_id is not None:
            # after the next frame: the file shows first, its index (the gutter marks) follows
            self.call_after_refresh(self.load_markers, file.path, self.run_id)

    # -- workers: all store reads and compiles --------------------------------------------

    @work(thread=True, exclusive=True, group="load", exit_on_error=False, description="load run")
    def load_run(self, run_id: int | None, keep: tuple[str, int] | None = None, quiet: bool = False) -> None:
        try:
            details = self.gateway.call(lambda store: store.run(run_id).details())
        except StoreError:
            if quiet:
                return
            raise
        rows = kernel_rows(details)
        source, line, kept = self.gateway.call(_initial_source, details, keep)
        rank = self.gateway.call(lambda store: rank_label(store.run(details.summary.id).rank()))
        self.post_message(self.RunLoaded(details, rows, source, line, kept, rank))

    @work(thread=True, exclusive=True, group="markers", exit_on_error=False, description="load markers")
    def load_markers(self, path: str, run_id: int) -> None:
        try:  # the file's source index: the gutter marks now, every later cursor move a lookup
            index = self.gateway.call(lambda store: store.run(run_id).source_index(path))
        except (StoreError, UserError):
            return  # a file the run has no record of: no marks
        self.post_message(self.MarkersLoaded(run_id, path, sorted(index.answers)))

    @work(thread=True, exclusive=True, group="links", exit_on_error=False, description="query links")
    def query_links(self, generation: int, origin: str, path: str, line: int, run_id: int, workspace: str,
                    shown: dict[str, str | None], module: tuple[str, ...], details: RunDetails | None = None,
                    rows: list[KernelRow] | None = None) -> None:
        def still_wanted() -> bool:
            return generation == self.link_generation

        try:
            if origin == ASM:
                answer = self.gateway.call(lambda store: store.run(run_id).asm_line(path, line, "both"),
                                           still_wanted=still_wanted)
                links = asm_link_set(answer, shown, module, self.module)
            elif origin == SOURCE and not module:  # the file's source index: line numbers, no texts
                answer = self.gateway.call(lambda store: store.run(run_id).source_line(path, line),
                                           still_wanted=still_wanted)
                links = source_link_set(answer, shown)
            else:
                result = self.gateway.call(lambda store: store.run(run_id).query(path, line, QUERY_DIRECTION[origin],
                                                                                 module=module or None),
                                           still_wanted=still_wanted)
                links = link_set(result, origin, shown, module, self.module)
                if origin == KERNEL and details is not None and result.location.graph is not None:
                    self._add_launches(links, result.location, details, rows or [], run_id)
            if origin in (SOURCE, POST_GRAD, WRAPPER):  # a line that issues, waits on or needed a collective
                collectives = self.gateway.call(_collectives_at, run_id, path, line, origin, still_wanted=still_wanted)
                if collectives:
                    more = f" (+{len(collectives) - 1})" if len(collectives) > 1 else ""
                    links.summary = f"⇄ {collective_line(collectives[0])}{more} · {links.summary}"
        except Stale:
            return
        files = {}
        for role, pane in links.panes.items():
            if pane.path and pane.path != shown.get(role):
                files[role] = self.gateway.call(_open_file, pane.path, run_id, workspace if role == SOURCE else None)
        self.post_message(self.LinksReady(generation, links, files))

    def _add_launches(self, links: LinkSet, location, details: RunDetails, rows: list[KernelRow], run_id: int) -> None:
        """Called in the links worker: the launch lines of the kernel under the cursor."""
        graph = next((graph for graph in details.graphs if graph.key == location.graph.key), None)
        wrapper_path = graph.files.get("wrapper") if graph else None
        if not wrapper_path or not location.kernel:
            return
        known = [row.wrapper_lines for row in rows
                 if row.graph == location.graph.key and row.name == location.kernel and row.source_lines is not None]
        if known:
            lines = known[0]
        else:
            if wrapper_path not in self._launches:
                text = self.gateway.call(_open_file, wrapper_path, run_id).text
                self._launches = {wrapper_path: launch_lines(text)}  # one wrapper's index at a time
            lines = self._launches[wrapper_path].get(location.kernel, [])
        add_kernel_launches(links, wrapper_path, lines)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="open kernel")
    def open_kernel(self, row: KernelRow, run_id: int, wrapper_path: str | None) -> None:
        if row.file:
            file, line = self.gateway.call(_open_kernel, row.file, run_id)
            self.post_message(self.FileOpened(KERNEL, file, line))
        elif wrapper_path:
            file = self.gateway.call(_open_file, wrapper_path, run_id)
            line = row.wrapper_lines[0] if row.wrapper_lines else _line_containing(file.text, row.name.split("#")[0])
            self.post_message(self.FileOpened(WRAPPER, file, line))

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="open source")
    def open_source(self, path: str, line: int, run_id: int, workspace: str) -> None:
        file = self.gateway.call(_open_source, path, run_id, workspace)
        self.post_message(self.FileOpened(SOURCE, file, line))

    @work(thread=True, exclusive=True, group="facts", exit_on_error=False, description="load facts")
    def load_facts(self, run_id: int) -> None:
        facts, groups, builds = self.bulk_gateway.call(lambda store: (store.run(run_id).kernel_facts(),
                                                                      store.run(run_id).module_groups(),
                                                                      store.run(run_id).asm_builds()))
        self.post_message(self.FactsLoaded(run_id, facts, groups, builds))

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False, description="list runs")
    def list_runs(self) -> None:
        def read(store):
            runs = store.runs()
            ranks = store.ranks_of_runs([run.id for run in runs])
            return runs, {run_id: f"{rank.rank}/{rank.world_size}" for run_id, rank in ranks.items()}

        self.post_message(self.RunsListed(*self.gateway.call(read)))

    @work(thread=True, exclusive=True, group="asm", exit_on_error=False, description="load PTX/SASS")
    def load_asm(self, generation: int, run_id: int, kernel: str, lines: list[int], stage: str) -> None:
        def still_wanted() -> bool:
            return generation == self.asm_generation

        try:
            loaded = self.gateway.call(_asm_of_kernel, run_id, kernel, lines, stage, still_wanted=still_wanted)
        except Stale:
            return
        self.post_message(self.AsmLoaded(generation, kernel, stage, *loaded))

    @work(thread=True, exclusive=True, group="asm-build", exit_on_error=False, description="build PTX/SASS")
    def build_asm(self, run_id: int, kernel_files: list[str] | None) -> None:
        from kernelscope.tui.asm_builder import AsmBuilder

        if self._asm_builder is None:
            self._asm_builder = AsmBuilder(self.store_root, Path(self.workspace))
        summary = self._asm_builder.build(run_id, kernel_files,
                                          on_progress=lambda detail: self.post_message(self.AsmProgress(detail)))
        self.post_message(self.AsmBuilt(run_id, summary))

    @work(thread=True, exclusive=True, group="comm", exit_on_error=False, description="load collectives")
    def load_comm(self, run_id: int) -> None:
        self.post_message(self.CommLoaded(self.gateway.call(lambda store: store.run(run_id).distributed())))

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False, description="compare")
    def compare(self, before: int, after: int) -> None:
        from kernelscope.diff import compare_runs, load_side
        from kernelscope.diff.report import render

        diff = compare_runs(load_side(str(before), self.store_root), load_side(str(after), self.store_root))
        self.post_message(self.DiffReady(f"kernelscope diff {before} {after}", render(diff, [], 0, "text")))

    @work(thread=True, exclusive=True, group="compile", exit_on_error=False, description="compile target")
    def compile_target(self) -> None:
        self._compile_driver = CompileDriver(self.compile_request, lambda event: self.post_message(self.CompileEvent(event)))
        self._compile_driver.drive()

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker becomes a visible error; the screen keeps the last good run."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, Stale):
            return
        self._keep_full_error(full_error(error))
        if isinstance(error, (UserError, StoreError)):
            self.status.set_error(str(error))
        else:
            self.status.set_error(f"{event.worker.name} failed: {type(error).__name__}: {error} ({_FULL_ERROR_HINT})")

    # -- message handlers ------------------------------------------------------------------

    @on(RunLoaded)
    def _run_loaded(self, message: RunLoaded) -> None:
        gc.unfreeze()  # the previous run's objects can be collected again
        self.details = details = message.details
        summary = details.summary
        rank = f" · {message.rank}" if message.rank else ""
        self.status.set_run(f"run {summary.id}{rank} · {display_path(target_file(summary.target), details.workspace)} · "
                            f"{summary.device} · {summary.mode} · {summary.graph_count} graph(s) · "
                            f"{summary.kernel_count} kernel(s)"
                            + (f" · {len(details.graph_breaks)} graph break(s)" if details.graph_breaks else ""))
        self.status.set_error("")
        self.facts_loaded = False
        self.modules, self.module_groups = [], []
        self.last_links = self.last_query = None
        self.query_one(KernelList).set_rows(message.rows)
        for role in (POST_GRAD, KERNEL, WRAPPER, ASM):
            self.view(role).clear()
            self.pane(role).show_file(None)
        if message.source is None:
            self.view(SOURCE).clear("(no model source line reached a compiled graph)")
            self.pane(SOURCE).show_file(None)
        else:
            self.show_file(SOURCE, message.source, message.cursor_line)
            # A carried-over line is queried now; otherwise the cursor goes to the first linked line
            # once the gutter marks are in (they can take a while on a big run: the screen comes first).
            self._awaiting_first_line = not message.kept
            if message.kept:
                self.request_links(SOURCE, message.cursor_line)
        # source lines per kernel and module instances, read once the run is on screen
        self.call_after_refresh(self.load_facts, summary.id)

    @on(MarkersLoaded)
    def _markers_loaded(self, message: MarkersLoaded) -> None:
        try:
            view = self.view(SOURCE)
        except NoMatches:  # the app is closing: its panes are gone
            return
        if message.run_id != self.run_id or message.path != view.path:
            return
        view.set_markers(message.lines)
        if self._awaiting_first_line:
            self._awaiting_first_line = False
            if message.lines:
                view.move_cursor(message.lines[0], center=True)
            else:
                self.request_links(SOURCE, view.cursor_line)

    def request_links(self, origin: str, line: int) -> None:
        view = self.view(origin)
        if view.path is None or self.run_id is None:
            return
        self.link_generation += 1
        self.query_links(self.link_generation, origin, view.path, line, self.run_id, self.workspace,
                         self.shown_files(), self.module_paths, self.details, self.query_one(KernelList).rows)

    @on(CodeView.CursorMoved)
    def _cursor_moved(self, message: CodeView.CursorMoved) -> None:
        if message.view.role == SOURCE:
            self._awaiting_first_line = False
        self.request_links(message.view.role, message.line)

    @on(LinksReady)
    def _links_ready(self, message: LinksReady) -> None:
        if message.generation != self.link_generation:
            return  # the cursor moved on
        links = message.links
        for role, pane in links.panes.items():
            if role == links.origin:
                continue
            view = self.view(role)
            if role in message.files:
                self.show_file(role, message.files[role], pane.focus_line)
            elif pane.focus_line is not None:
                view.move_cursor(pane.focus_line, announce=False)  # its cursor waits on the linked line
            view.set_linked(pane.lines, pane.focus_line)
        self.last_links = links
        self.last_query = (links.origin, self.view(links.origin).cursor_line)
        self.query_one(ChainLine).text = links.summary
        if links.origin != ASM:
            self.refresh_asm()

    @on(CodeView.FollowRequested)
    def _follow(self, message: CodeView.FollowRequested) -> None:
        origin = message.view.role
        links = self.last_links
        if links is None or self.last_query != (origin, message.line):
            self.notify("no links from this line yet", severity="warning")
            return
        targets = [SOURCE] if message.direction == "up" else FOLLOW_DOWN.get(origin, [KERNEL])
        if self.asm_stage is not None and message.direction == "down" and origin == KERNEL:
            asm = self.view(ASM)
            if asm.linked:  # down from a kernel line: its PTX/SASS lines
                asm.focus()
                asm.move_cursor(min(asm.linked), center=True)
                return
        for target in targets:
            pane = links.panes.get(target)
            if target != origin and pane is not None and pane.lines:
                view = self.view(target)
                view.focus()
                view.move_cursor(pane.focus_line or pane.lines[0], center=True)
                return
        where = "the model source" if targets == [SOURCE] else "a generated line below it"
        self.notify(f"this line has no link to {where}", severity="warning")

    @on(KernelList.KernelChosen)
    def _kernel_chosen(self, message: KernelList.KernelChosen) -> None:
        if self.details is None:
            return
        wrapper = next((graph.files.get("wrapper") for graph in self.details.graphs if graph.key == message.row.graph), None)
        self.open_kernel(message.row, self.details.summary.id, wrapper)

    @on(FileOpened)
    def _file_opened(self, message: FileOpened) -> None:
        self.show_file(message.pane, message.file, message.line)
        view = self.view(message.pane)
        view.focus()
        view.move_cursor(message.line, center=True)

    @on(FactsLoaded)
    def _facts_loaded(self, message: FactsLoaded) -> None:
        if message.run_id != self.run_id:
            return
        try:
            kernel_list = self.query_one(KernelList)
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

    @on(RunsListed)
    def _runs_listed(self, message: RunsListed) -> None:
        self.push_screen(RunPicker(message.runs, self.run_id, self.workspace, message.ranks), self._run_picked)

    @on(AsmLoaded)
    def _asm_loaded(self, message: AsmLoaded) -> None:
        if message.generation != self.asm_generation or self.asm_stage is None:
            return
        view = self.view(ASM)
        if message.file is None:
            view.clear(message.message)
            self.pane(ASM).show_file(message.title)
            return
        focus = message.lines[0] if message.lines else None
        if message.file.path != view.path:
            self.show_file(ASM, message.file, focus)
        self.pane(ASM).show_file(message.title)
        view.set_linked(message.lines, focus)
        if focus is not None and not self.view(ASM).has_focus:
            view.move_cursor(focus, announce=False)

    @on(AsmProgress)
    def _asm_progress(self, message: AsmProgress) -> None:
        self.status.set_progress(f"compiling to PTX and SASS: {message.detail}…")

    @on(AsmBuilt)
    def _asm_built(self, message: AsmBuilt) -> None:
        summary = message.summary
        failed = f", {len(summary['failed'])} failed: {summary['failed'][0]}" if summary["failed"] else ""
        self.status.set_progress(f"{summary['built']} kernel(s) compiled to PTX and SASS in "
                                 f"{summary['seconds']:.1f}s{failed}")
        if message.run_id == self.run_id:
            self.load_facts(message.run_id)  # the kernel list's registers and spills
            self.refresh_asm()

    @on(CommLoaded)
    def _comm_loaded(self, message: CommLoaded) -> None:
        self.push_screen(CommScreen(message.view), self._collective_chosen)

    def _collective_chosen(self, where) -> None:
        if where is not None and self.details is not None:
            self.open_generated(WRAPPER, where[0], where[1], self.details.summary.id)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="open file")
    def open_generated(self, role: str, path: str, line: int, run_id: int) -> None:
        self.post_message(self.FileOpened(role, self.gateway.call(_open_file, path, run_id), line))

    def refresh_asm(self) -> None:
        """Show the PTX/SASS lines of the kernel pane's lines: its cursor line when the links came
        from it, else its linked lines (a model line's ops)."""
        if self.asm_stage is None or self.run_id is None:
            return
        self.asm_generation += 1
        kernel = self.view(KERNEL)
        if kernel.path is None:
            self.view(ASM).clear("no kernel in the kernel pane: move to a model line, or open a kernel (5)")
            self.pane(ASM).show_file(None)
            return
        from_kernel = self.last_query is not None and self.last_query[0] == KERNEL
        lines = [kernel.cursor_line] if from_kernel or not kernel.linked else sorted(kernel.linked)
        self.load_asm(self.asm_generation, self.run_id, kernel.path, lines, self.asm_stage)

    def _run_picked(self, choice) -> None:
        if choice is None:
            return
        if choice[0] == "switch":
            self.load_run(choice[1], keep=self._source_position())
        else:
            self.status.set_progress(f"comparing runs {choice[1]} and {choice[2]}…")
            self.compare(choice[1], choice[2])

    @on(DiffReady)
    def _diff_ready(self, message: DiffReady) -> None:
        self.status.set_progress("")
        self.push_screen(DiffScreen(message.title, message.report))

    @on(CompileEvent)
    def _compile_event(self, message: CompileEvent) -> None:
        event = message.event
        if isinstance(event, WorkerReady):
            self.status.set_progress(f"engine worker ready (torch {event.torch or '?'}), compiling…")
        elif isinstance(event, BuildStarted):
            self.status.set_progress(f"build {event.build}: compiling…")
        elif isinstance(event, BuildPhase):
            self.status.set_progress(f"build {event.build}: {event.phase}…")
        elif isinstance(event, BuildFinished):
            self.status.set_progress(f"build {event.build}: run {event.run_id} in {event.seconds:.1f}s"
                                     + (" · watching for saves" if self.compile_request.watch else ""))
            self.load_run(event.run_id, keep=self._source_position())
        elif isinstance(event, BuildFailed):
            where = display_path(event.file, self.workspace) if event.file else ""
            where += f":{event.line}" if where and event.line else ""
            kept = f" (run {event.last_good_run} stays)" if event.last_good_run else ""
            how = ""
            if event.traceback:
                self._keep_full_error(f"build {event.build} failed:\n{event.traceback}")
                how = "" if traceback_wanted() else f" · {_FULL_ERROR_HINT}"
            self.status.set_progress("")
            self.status.set_error(f"build {event.build} failed: {where + ': ' if where else ''}{event.message}{kept}{how}")
        elif isinstance(event, WorkerRestarted):
            self.status.set_error(f"engine worker restarted: {event.reason}")

    def _keep_full_error(self, text: str) -> None:
        """With KERNELSCOPE_TRACEBACK=1 (or --traceback) the chain behind an error is printed
        after the screen closes (the screen itself shows one line)."""
        if traceback_wanted():
            self.full_errors.append(text)

    def _source_position(self) -> tuple[str, int] | None:
        view = self.view(SOURCE)
        return (view.path, view.cursor_line) if view.path else None

    # -- actions ---------------------------------------------------------------------------

    def action_focus_pane(self, role: str) -> None:
        self.view(ASM if role == WRAPPER and self.asm_stage is not None else role).focus()

    def action_toggle_asm(self) -> None:
        """The fourth pane: wrapper -> the kernel's SASS -> its PTX -> wrapper."""
        self.asm_stage = ASM_STAGES[(ASM_STAGES.index(self.asm_stage) + 1) % len(ASM_STAGES)]
        shown = self.asm_stage is not None
        focused = self.focused
        self.pane(WRAPPER).display = not shown
        self.pane(ASM).display = shown
        if focused in (self.view(WRAPPER), self.view(ASM)):
            self.view(ASM if shown else WRAPPER).focus()
        if shown:
            self.view(ASM).clear()
            self.refresh_asm()

    def action_build_asm(self) -> None:
        """Compile the kernel in the kernel pane (none there: every kernel of the run) to PTX and SASS."""
        if self.run_id is None:
            return
        kernel = self.view(KERNEL).path
        what = "every kernel of the run" if kernel is None else kernel.rsplit("/", 1)[-1]
        self.status.set_progress(f"compiling {what} to PTX and SASS in the engine worker…")
        self.build_asm(self.run_id, None if kernel is None else [kernel])

    def action_comm(self) -> None:
        if self.run_id is not None:
            self.load_comm(self.run_id)

    def action_focus_kernels(self) -> None:
        self.query_one(KernelList).table.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_runs(self) -> None:
        self.list_runs()

    def action_breaks(self) -> None:
        if self.details is None:
            return
        self.push_screen(BreaksScreen(self.details.graph_breaks, self.details.recompiles), self._break_chosen)

    def _break_chosen(self, where) -> None:
        if where is not None and self.details is not None:
            self.open_source(where[0], where[1], self.details.summary.id, self.details.workspace)

    def action_modules(self) -> None:
        self.push_screen(ModuleFilterScreen(self.modules, self.module, self.facts_loaded, self.module_groups),
                         self._module_chosen)

    def _module_chosen(self, choice: ModuleChoice | None) -> None:
        if choice is None:
            return
        self.module, self.module_paths = choice.label, choice.paths
        self.query_one(KernelList).set_module(choice.label, choice.paths)
        folded = f" ({len(choice.paths)} instances)" if len(choice.paths) > 1 else ""
        self.status.set_progress(f"module {choice.label}{folded}" if choice.label else "")
        focused = self.focused if isinstance(self.focused, CodeView) else self.view(SOURCE)
        self.request_links(focused.role, focused.cursor_line)

    def action_clear_module(self) -> None:
        self._module_chosen(EVERY_MODULE)


# -- store-thread functions (called through the gateway) ----------------------------------


def _open_file(store: Store, path: str, run_id: int, workspace: str | None = None) -> OpenFile:
    """A file of the run; a source file (`workspace` given) is labelled relative to the workspace."""
    location = store.run(run_id).locate(path)
    text = _read(location.absolute_path)
    key = location.path  # one spelling per file, as the store's answers name it
    label = _generated_label(key) if workspace is None else display_path(key, workspace)
    return OpenFile(key, label, text)


def _open_kernel(store: Store, path: str, run_id: int) -> tuple[OpenFile, int]:
    file = _open_file(store, path, run_id)
    linked = store.run(run_id).file_links(path).lines
    computing = [line.line for line in linked if any(not reason.startswith("shared") for reason in line.reasons)]
    return file, (computing or [line.line for line in linked] or [1])[0]


def _open_source(store: Store, path: str, run_id: int, workspace: str) -> OpenFile:
    """A user source file: through the store when the run recorded nodes in it, else from the workspace."""
    try:
        return _open_file(store, path, run_id, workspace)
    except StoreError:
        absolute = path if Path(path).is_absolute() else str(Path(workspace) / path)
        return OpenFile(path, display_path(path, workspace), _read(absolute))


def _initial_source(store: Store, details: RunDetails,
                    keep: tuple[str, int] | None) -> tuple[OpenFile | None, int, bool]:
    """The source file to open with a run, the cursor line, and whether that line was kept:
    the kept position when the run has that file, else the run's target file (line 1; the
    first linked line follows with the gutter marks)."""
    run_id = details.summary.id
    candidates = ([keep[0]] if keep else []) + [target_file(details.summary.target)]
    candidates += [brk.file for brk in details.graph_breaks if brk.file]
    for path in candidates:
        try:
            file = _open_file(store, path, run_id, details.workspace)
        except (StoreError, UserError):
            continue
        if keep and path == keep[0]:
            return file, keep[1], True
        return file, 1, False
    for kernel in details.kernels:  # a target whose model lives in other files
        if kernel.file:
            for line in store.run(run_id).file_links(kernel.file).lines:
                for chain in store.run(run_id).query(kernel.file, line.line, "up").graphs:
                    for source in chain.sources:
                        return _open_file(store, source.file, run_id, details.workspace), source.line, True
    return None, 1, False


def _collectives_at(store: Store, run_id: int, path: str, line: int, origin: str) -> list:
    """The collectives a model, post-grad or wrapper line issues, waits on or needed."""
    view = store.run(run_id)
    if not view.has_collectives():  # most runs: no lookup per cursor move
        return []
    location = view.locate(path)
    if origin == SOURCE:
        return view.file_collectives(location).get(line, [])
    return view.collectives_at(location, line)


def _asm_of_kernel(store: Store, run_id: int, kernel: str, lines: list[int],
                   stage: str) -> tuple[OpenFile | None, list[int], str, str]:
    """(the kernel's `stage` file, its lines of the kernel's `lines`, the pane's title, why
    there is no file)."""
    view = store.run(run_id)
    below = view.asm_below(kernel, lines, (stage,))
    name = STAGE_NAMES[stage]
    info = below.info
    if info is None and not for_a_gpu(view.summary().device):
        return None, [], f"{name}: none", (f"{name}: this run's kernels run on the CPU ({view.summary().device}): "
                                           "there is no PTX or SASS")
    if info is None:
        return None, [], f"{name}: not built", (
            f"{name}: {below.kernel} is not compiled below Triton yet — press B to compile it in the engine "
            f"worker (about 1-2 s a kernel), or run `kernelscope query {kernel}:{lines[0] if lines else 1} --asm`")
    if info.facts is None:
        return None, [], f"{name}: could not be built", f"{name}: {below.kernel} could not be built: {info.error}"
    path = info.files.get(stage)
    if path is None:
        return None, [], f"{name}: none", f"{name}: the build stored no {name} file"
    file = OpenFile(path, path.rsplit("/", 1)[-1], _read(str(view.absolute_path(path))))
    facts = info.facts
    title = (f"{name} · {facts.registers} regs · {spills_text(facts)} · occupancy {facts.occupancy.share:.0%}: "
             f"{file.label}")
    return file, sorted({line.line for line in below.stage_lines(stage)}), title, ""


def asm_link_set(answer, shown: dict[str, str | None], module: tuple[str, ...], label: str) -> LinkSet:
    """The linked lines of a PTX/SASS line: its kernel line(s) in the kernel pane, and the chain
    of the first of them in the others."""
    stage = STAGE_NAMES.get(answer.file.stage, answer.file.stage.upper())
    if not answer.chains:
        return LinkSet(ASM, {name: PaneLinks() for name in PANES},
                       f"{stage} :{answer.line} {answer.text[:60]} · no kernel line: a declaration, label or directive")
    links = link_set(answer.chains[0], ASM, shown, module, label)
    kernel_lines = answer.kernel_lines
    links.panes[KERNEL] = PaneLinks(answer.file.kernel_file, kernel_lines, kernel_lines[0])
    lines = ", ".join(map(str, kernel_lines))
    links.summary = f"{stage} :{answer.line} {answer.text[:60]} · kernel line {lines} · {links.summary}"
    return links


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError as error:
        raise StoreError(f"cannot read {path}: {error.strerror} — the file moved or the run was deleted") from error


def _generated_label(path: str) -> str:
    """`runs/3/graphs/0_0_0-forward/kernels/k.py` -> `run 3 · 0_0_0-forward/kernels/k.py`."""
    parts = path.split("/")
    if len(parts) > 3 and parts[0] == "runs" and parts[2] == "graphs":
        return f"run {parts[1]} · " + "/".join(parts[3:])
    return path


def _line_containing(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line and not line.lstrip().startswith("#"):
            return number
    return 1
