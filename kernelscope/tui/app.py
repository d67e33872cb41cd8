"""The kernelscope explorer's shell: four linked code panes, the kernel list, the keys.

`KernelscopeApp` lays the screen out, owns the two store gateways and one of each
controller (`self.runs`, `self.links`, … in `__init__`; kernelscope/tui/__init__.py
has the map), and does no work of its own: a key calls an action, which hands over
to a controller; every message a worker posts comes back here and goes to the
controller that applies it ("messages -> controllers" below).

Every store read and every compile runs in a thread worker that posts a message
back; the UI thread only draws. One query per cursor move computes the linked
lines of all panes; answers that arrive after the cursor moved on are dropped.
"""
from __future__ import annotations

import gc
from pathlib import Path

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.worker import Worker

from kernelscope.store.results import KERNEL, POST_GRAD, SOURCE, WRAPPER, RunDetails
from kernelscope.tui import messages
from kernelscope.tui.asm_mode import AsmMode
from kernelscope.tui.chain_line import ChainLine
from kernelscope.tui.compile_driver import CompileRequest
from kernelscope.tui.compile_status import CompileStatus
from kernelscope.tui.dialogs import Dialogs
from kernelscope.tui.error_report import ErrorReport
from kernelscope.tui.file_opener import FileOpener
from kernelscope.tui.gateway import StoreGateway
from kernelscope.tui.kernel_list import KernelList
from kernelscope.tui.key_footer import KeyFooter
from kernelscope.tui.link_follower import LinkFollower
from kernelscope.tui.linking import ASM, PANES, LinkSet
from kernelscope.tui.panes.code_pane import CodePane
from kernelscope.tui.panes.code_view import CodeView
from kernelscope.tui.run_data import display_path
from kernelscope.tui.run_loader import RunLoader
from kernelscope.tui.status_line import StatusLine
from kernelscope.tui.store_reads import OpenFile

PANE_KEYS = {SOURCE: "1", POST_GRAD: "2", KERNEL: "3", WRAPPER: "4", ASM: "4"}


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
        Binding("M", "memory", "memory", show=False),
        Binding("e", "numerics", "numerics vs eager", show=False),
        Binding("U", "user_kernels", "user Triton kernels", show=False),
        Binding("question_mark", "help", "keys"),
        Binding("q", "quit", "quit"),
    ]

    # The messages the workers post (messages.py), also under the app's name (`app.CompileEvent(...)`).
    RunLoaded = messages.RunLoaded
    FactsLoaded = messages.FactsLoaded
    LinksReady = messages.LinksReady
    MarkersLoaded = messages.MarkersLoaded
    AsmLoaded = messages.AsmLoaded
    AsmBuilt = messages.AsmBuilt
    AsmProgress = messages.AsmProgress
    FileOpened = messages.FileOpened
    RunsListed = messages.RunsListed
    DiffReady = messages.DiffReady
    CommLoaded = messages.CommLoaded
    MemoryLoaded = messages.MemoryLoaded
    NumericsLoaded = messages.NumericsLoaded
    UserKernelsLoaded = messages.UserKernelsLoaded
    CompileEvent = messages.CompileEvent

    # -- set-up ----------------------------------------------------------------------------

    def __init__(self, store: str | Path, run_id: int | None = None, compile_request: CompileRequest | None = None):
        super().__init__()
        self.store_root = Path(store).absolute()
        self.gateway = StoreGateway(self.store_root)  # interactive reads: cursor moves, files
        self.bulk_gateway = StoreGateway(self.store_root)  # whole-run reads that must not delay them
        self.requested_run = run_id
        self.runs = RunLoader(self)
        self.links = LinkFollower(self)
        self.asm = AsmMode(self)
        self.files = FileOpener(self)
        self.dialogs = Dialogs(self)
        self.compiling = CompileStatus(self, compile_request)
        self.errors = ErrorReport(self)

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
        compiling = self.compiling.request is not None
        if compiling:
            self.compiling.start()
        if self.requested_run is not None or not compiling:
            self.runs.load_run(self.requested_run)
        else:
            self.runs.load_run(None, quiet=True)  # the last run on screen while the first build runs
        self.view(SOURCE).focus()

    def on_unmount(self) -> None:
        gc.unfreeze()
        self.compiling.stop()
        self.asm.stop()
        self.gateway.close()
        self.bulk_gateway.close()

    # -- the widgets -------------------------------------------------------------------------

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def chain_line(self) -> ChainLine:
        return self.query_one(ChainLine)

    @property
    def kernel_list(self) -> KernelList:
        return self.query_one(KernelList)

    def pane(self, role: str) -> CodePane:
        return self.query_one(f"#pane-{role}", CodePane)

    def view(self, role: str) -> CodeView:
        return self.query_one(f"#view-{role}", CodeView)

    def show_file(self, role: str, file: OpenFile, cursor_line: int | None = None) -> None:
        view = self.view(role)
        view.load(file.path, file.text, cursor_line, lex_strings=role != WRAPPER)
        self.pane(role).show_file(file.label)
        if role == SOURCE and self.run_id is not None:
            # after the next frame: the file shows first, its index (the gutter marks) follows
            self.call_after_refresh(self.links.load_markers, file.path, self.run_id)

    # -- what is on screen (the controllers' state, read by them, the tests and the CLI) -------

    @property
    def details(self) -> RunDetails | None:
        return self.runs.details

    @property
    def run_id(self) -> int | None:
        return self.runs.run_id

    @property
    def workspace(self) -> str:
        return self.runs.workspace

    @property
    def facts_loaded(self) -> bool:
        return self.runs.facts_loaded

    @property
    def modules(self) -> list[str]:
        return self.runs.modules

    @property
    def module(self) -> str:
        return self.links.module

    @property
    def module_paths(self) -> tuple[str, ...]:
        return self.links.module_paths

    @property
    def link_generation(self) -> int:
        return self.links.generation

    @property
    def last_links(self) -> LinkSet | None:
        return self.links.last_links

    @property
    def last_query(self) -> tuple[str, int] | None:
        return self.links.last_query

    @property
    def full_errors(self) -> list[str]:
        return self.errors.full_errors

    def open_source(self, path: str, line: int, run_id: int, workspace: str) -> None:
        """Open a model source file in the source pane with the cursor on `line`."""
        self.files.open_source(path, line, run_id, workspace)

    # -- messages -> controllers ------------------------------------------------------------------

    @on(RunLoaded)
    def _run_loaded(self, message: messages.RunLoaded) -> None:
        self.runs.show(message)

    @on(FactsLoaded)
    def _facts_loaded(self, message: messages.FactsLoaded) -> None:
        self.runs.show_facts(message)

    @on(CodeView.CursorMoved)
    def _cursor_moved(self, message: CodeView.CursorMoved) -> None:
        self.links.cursor_moved(message)

    @on(LinksReady)
    def _links_ready(self, message: messages.LinksReady) -> None:
        self.links.show(message)

    @on(CodeView.FollowRequested)
    def _follow(self, message: CodeView.FollowRequested) -> None:
        self.links.follow(message)

    @on(MarkersLoaded)
    def _markers_loaded(self, message: messages.MarkersLoaded) -> None:
        self.links.show_markers(message)

    @on(AsmLoaded)
    def _asm_loaded(self, message: messages.AsmLoaded) -> None:
        self.asm.show(message)

    @on(AsmProgress)
    def _asm_progress(self, message: messages.AsmProgress) -> None:
        self.asm.show_progress(message)

    @on(AsmBuilt)
    def _asm_built(self, message: messages.AsmBuilt) -> None:
        self.asm.built(message)

    @on(KernelList.KernelChosen)
    def _kernel_chosen(self, message: KernelList.KernelChosen) -> None:
        self.files.kernel_chosen(message)

    @on(FileOpened)
    def _file_opened(self, message: messages.FileOpened) -> None:
        self.files.show(message)

    @on(RunsListed)
    def _runs_listed(self, message: messages.RunsListed) -> None:
        self.dialogs.show_runs(message)

    @on(DiffReady)
    def _diff_ready(self, message: messages.DiffReady) -> None:
        self.dialogs.show_diff(message)

    @on(CommLoaded)
    def _comm_loaded(self, message: messages.CommLoaded) -> None:
        self.dialogs.show_comm(message)

    @on(MemoryLoaded)
    def _memory_loaded(self, message: messages.MemoryLoaded) -> None:
        self.dialogs.show_memory(message)
    @on(NumericsLoaded)
    def _numerics_loaded(self, message: messages.NumericsLoaded) -> None:
        self.dialogs.show_numerics(message)

    @on(UserKernelsLoaded)
    def _user_kernels_loaded(self, message: messages.UserKernelsLoaded) -> None:
        self.dialogs.show_user_kernels(message)

    @on(CompileEvent)
    def _compile_event(self, message: messages.CompileEvent) -> None:
        self.compiling.show(message)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker becomes a visible error; the screen keeps the last good run."""
        self.errors.worker_failed(event)

    # -- keys -> controllers -------------------------------------------------------------------------

    def action_focus_pane(self, role: str) -> None:
        self.view(self.asm.pane_for(role)).focus()

    def action_focus_kernels(self) -> None:
        self.kernel_list.table.focus()

    def action_toggle_asm(self) -> None:
        self.asm.toggle()

    def action_build_asm(self) -> None:
        self.asm.build()

    def action_runs(self) -> None:
        self.dialogs.list_runs()

    def action_breaks(self) -> None:
        self.dialogs.breaks()

    def action_modules(self) -> None:
        self.dialogs.modules()

    def action_clear_module(self) -> None:
        self.dialogs.clear_module()

    def action_comm(self) -> None:
        self.dialogs.comm()

    def action_memory(self) -> None:
        self.dialogs.memory()
    def action_numerics(self) -> None:
        self.dialogs.numerics()

    def action_user_kernels(self) -> None:
        self.dialogs.user_kernels()

    def action_help(self) -> None:
        self.dialogs.help()
