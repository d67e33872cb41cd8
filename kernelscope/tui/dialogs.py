"""The dialogs the keys open, and what their choice does.

`r` runs (RunPicker: switch to a run, or compare two with `kernelscope diff`'s
report in a DiffScreen), `b` graph breaks (BreaksScreen: jump to the source line),
`m`/`x` the module filter (ModuleFilterScreen: narrows the kernel list and the
highlights), `o` distributed (CommScreen: open a collective's wrapper line), `M` memory (MemoryScreen:
open a timeline step's wrapper line or a model line), `e` numerics (NumericsScreen: jump to the
line where compiled and eager part ways), `U` the program's own Triton kernels
(UserKernelsScreen: open a kernel's generated copy in the kernel pane), `?`
the keys (HelpScreen). The screens themselves are widgets of their own modules;
this controller reads what they list, pushes them, and acts on what they return.
"""
from __future__ import annotations

from kernelscope.store.results import KERNEL, WRAPPER
from kernelscope.tui.breaks_screen import BreaksScreen
from kernelscope.tui.comm_screen import CommScreen
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.help_screen import HelpScreen
from kernelscope.tui.memory_screen import MemoryScreen
from kernelscope.tui.messages import (
    CommLoaded,
    DiffReady,
    MemoryLoaded,
    NumericsLoaded,
    RunsListed,
    UserKernelsLoaded,
)
from kernelscope.tui.module_filter import EVERY_MODULE, ModuleChoice, ModuleFilterScreen
from kernelscope.tui.numerics_screen import NumericsScreen
from kernelscope.tui.run_picker import DiffScreen, RunPicker
from kernelscope.tui.user_kernels_screen import UserKernelsScreen


class Dialogs(Controller):
    # -- r: runs, switch or compare ----------------------------------------------------------

    @thread_worker("runs", "list runs")
    def list_runs(self) -> None:
        def read(store):
            runs = store.runs()
            ranks = store.ranks_of_runs([run.id for run in runs])
            return runs, {run_id: f"{rank.rank}/{rank.world_size}" for run_id, rank in ranks.items()}

        self.app.post_message(RunsListed(*self.app.gateway.call(read)))

    def show_runs(self, message: RunsListed) -> None:
        app = self.app
        app.push_screen(RunPicker(message.runs, app.run_id, app.workspace, message.ranks), self._run_picked)

    def _run_picked(self, choice) -> None:
        if choice is None:
            return
        if choice[0] == "switch":
            self.app.runs.switch_to(choice[1])
        else:
            self.app.status.set_progress(f"comparing runs {choice[1]} and {choice[2]}…")
            self.compare(choice[1], choice[2])

    @thread_worker("diff", "compare")
    def compare(self, before: int, after: int) -> None:
        from kernelscope.diff import compare_runs, load_side
        from kernelscope.diff.report import render

        store_root = self.app.store_root
        diff = compare_runs(load_side(str(before), store_root), load_side(str(after), store_root))
        self.app.post_message(DiffReady(f"kernelscope diff {before} {after}", render(diff, [], 0, "text")))

    def show_diff(self, message: DiffReady) -> None:
        self.app.status.set_progress("")
        self.app.push_screen(DiffScreen(message.title, message.report))

    # -- b: graph breaks -------------------------------------------------------------------------

    def breaks(self) -> None:
        details = self.app.details
        if details is None:
            return
        run_id = details.summary.id
        failures = self.app.gateway.call(lambda store: store.run(run_id).guard_failures()) if details.recompiles else []
        not_fused = self.app.gateway.call(lambda store: store.run(run_id).not_fused())
        self.app.push_screen(BreaksScreen(details.graph_breaks, details.recompiles, failures, not_fused),
                             self._break_chosen)

    def _break_chosen(self, where) -> None:
        details = self.app.details
        if where is not None and details is not None:
            self.app.files.open_source(where[0], where[1], details.summary.id, details.workspace)

    # -- m, x: the module filter -----------------------------------------------------------------

    def modules(self) -> None:
        app = self.app
        app.push_screen(ModuleFilterScreen(app.modules, app.module, app.facts_loaded, app.runs.module_groups),
                        self._module_chosen)

    def clear_module(self) -> None:
        self._module_chosen(EVERY_MODULE)

    def _module_chosen(self, choice: ModuleChoice | None) -> None:
        if choice is None:
            return
        app = self.app
        app.links.set_module(choice.label, choice.paths)
        app.kernel_list.set_module(choice.label, choice.paths)
        folded = f" ({len(choice.paths)} instances)" if len(choice.paths) > 1 else ""
        app.status.set_progress(f"module {choice.label}{folded}" if choice.label else "")
        app.links.requery()

    # -- o: distributed ------------------------------------------------------------------------------

    def comm(self) -> None:
        if self.app.run_id is not None:
            self.load_comm(self.app.run_id)

    @thread_worker("comm", "load collectives")
    def load_comm(self, run_id: int) -> None:
        self.app.post_message(CommLoaded(self.app.gateway.call(lambda store: store.run(run_id).distributed())))

    def show_comm(self, message: CommLoaded) -> None:
        self.app.push_screen(CommScreen(message.view), self._collective_chosen)

    def _collective_chosen(self, where) -> None:
        details = self.app.details
        if where is not None and details is not None:
            self.app.files.open_generated(WRAPPER, where[0], where[1], details.summary.id)

    # -- M: memory ----------------------------------------------------------------------------------

    def memory(self) -> None:
        if self.app.run_id is not None:
            self.load_memory(self.app.run_id)

    @thread_worker("memory", "load memory")
    def load_memory(self, run_id: int) -> None:
        self.app.post_message(MemoryLoaded(self.app.gateway.call(lambda store: store.run(run_id).memory())))

    def show_memory(self, message: MemoryLoaded) -> None:
        self.app.push_screen(MemoryScreen(message.memory), self._memory_chosen)

    def _memory_chosen(self, where) -> None:
        details = self.app.details
        if where is None or details is None:
            return
        role, path, line = where
        if role == "wrapper":
            self.app.files.open_generated(WRAPPER, path, line, details.summary.id)
        else:
            self.app.files.open_source(path, line, details.summary.id, details.workspace)

    # -- e: numerics ---------------------------------------------------------------------------------

    def numerics(self) -> None:
        if self.app.run_id is not None:
            self.load_numerics(self.app.run_id)

    @thread_worker("numerics", "load numerics")
    def load_numerics(self, run_id: int) -> None:
        self.app.post_message(NumericsLoaded(self.app.gateway.call(lambda store: store.run(run_id).numerics())))

    def show_numerics(self, message: NumericsLoaded) -> None:
        self.app.push_screen(NumericsScreen(message.report), self._break_chosen)

    # -- U: the program's own Triton kernels ------------------------------------------------------

    def user_kernels(self) -> None:
        if self.app.run_id is not None:
            self.load_user_kernels(self.app.run_id)

    @thread_worker("user kernels", "load user kernels")
    def load_user_kernels(self, run_id: int) -> None:
        def read(store):
            view = store.run(run_id)
            kernels = view.user_kernels()
            copies = {}
            for kernel in kernels:
                path = view.absolute_path(kernel.file)
                copies[kernel.file] = path.read_text().splitlines() if path.is_file() else []
            return kernels, copies

        self.app.post_message(UserKernelsLoaded(*self.app.gateway.call(read)))

    def show_user_kernels(self, message: UserKernelsLoaded) -> None:
        self.app.push_screen(UserKernelsScreen(message.kernels, message.copies), self._user_kernel_chosen)

    def _user_kernel_chosen(self, kernel_file) -> None:
        if kernel_file is not None and self.app.run_id is not None:
            self.app.files.open_generated(KERNEL, kernel_file, 1, self.app.run_id)

    # -- ?: the keys -----------------------------------------------------------------------------------

    def help(self) -> None:
        self.app.push_screen(HelpScreen())
