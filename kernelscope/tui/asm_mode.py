"""Below the kernel: the fourth pane as the kernel's SASS or PTX (a C++ kernel's x86-64).

`a` cycles the fourth pane: wrapper -> the kernel pane's kernel in SASS -> in PTX ->
wrapper (`toggle`); for a C++ kernel wrapper -> x86-64 -> wrapper; the ASM pane takes the
wrapper pane's place. After each
set of links (and each build) `refresh` reads the stage file's lines of the kernel
pane's lines in the "asm" worker, with a generation like the link follower's, and
`show` lights them. `B` (`build`) compiles kernels to PTX and SASS in an engine
worker of its own (asm_builder.py), started on the first build and kept until quit.
"""
from __future__ import annotations

from pathlib import Path

from kernelscope.store.parts.asm_builds import is_cpp_kernel
from kernelscope.store.results import KERNEL, WRAPPER
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.gateway import Stale
from kernelscope.tui.linking import ASM
from kernelscope.tui.messages import AsmBuilt, AsmLoaded, AsmProgress
from kernelscope.tui.store_reads import asm_of_kernel

STAGES = (None, "sass", "ptx")  # what `a` cycles the fourth pane through (None: the wrapper)
CPP_STAGES = (None, "x86")  # the same for a C++ kernel (a .cpp file in the kernel pane)


class AsmMode(Controller):
    def __init__(self, app):
        super().__init__(app)
        self.stage: str | None = None  # the fourth pane shows this stage of the kernel (None: the wrapper)
        self.generation = 0
        self._builder = None  # an AsmBuilder (its own engine worker), made on the first build

    @property
    def shown(self) -> bool:
        return self.stage is not None

    def pane_for(self, role: str) -> str:
        """The pane a number key focuses: `4` is the ASM pane while it is shown."""
        return ASM if role == WRAPPER and self.shown else role

    def toggle(self) -> None:
        """The fourth pane: wrapper -> the kernel's SASS -> its PTX -> wrapper."""
        app = self.app
        stages = CPP_STAGES if is_cpp_kernel(app.view(KERNEL).path) else STAGES
        self.stage = stages[(stages.index(self.stage) + 1) % len(stages)] if self.stage in stages else None
        shown = self.shown
        focused = app.focused
        app.pane(WRAPPER).display = not shown
        app.pane(ASM).display = shown
        if focused in (app.view(WRAPPER), app.view(ASM)):
            app.view(ASM if shown else WRAPPER).focus()
        if shown:
            app.view(ASM).clear()
            self.refresh()

    # -- the stage file's lines ------------------------------------------------------------------

    def refresh(self) -> None:
        """Show the PTX/SASS lines of the kernel pane's lines: its cursor line when the links came
        from it, else its linked lines (a model line's ops)."""
        app = self.app
        if self.stage is None or app.run_id is None:
            return
        self.generation += 1
        kernel = app.view(KERNEL)
        if kernel.path is None:
            app.view(ASM).clear("no kernel in the kernel pane: move to a model line, or open a kernel (5)")
            app.pane(ASM).show_file(None)
            return
        last_query = app.links.last_query
        from_kernel = last_query is not None and last_query[0] == KERNEL
        lines = [kernel.cursor_line] if from_kernel or not kernel.linked else sorted(kernel.linked)
        cpp = is_cpp_kernel(kernel.path)
        stage = "x86" if cpp else ("sass" if self.stage == "x86" else self.stage)  # the kind the pane now holds
        self.load_asm(self.generation, app.run_id, kernel.path, lines, stage)

    @thread_worker("asm", "load PTX/SASS")
    def load_asm(self, generation: int, run_id: int, kernel: str, lines: list[int], stage: str) -> None:
        def still_wanted() -> bool:
            return generation == self.generation

        try:
            loaded = self.app.gateway.call(asm_of_kernel, run_id, kernel, lines, stage, still_wanted=still_wanted)
        except Stale:
            return
        self.app.post_message(AsmLoaded(generation, kernel, stage, *loaded))

    def show(self, message: AsmLoaded) -> None:
        if message.generation != self.generation or self.stage is None:
            return
        app = self.app
        view = app.view(ASM)
        if message.file is None:
            view.clear(message.message)
            app.pane(ASM).show_file(message.title)
            return
        focus = message.lines[0] if message.lines else None
        if message.file.path != view.path:
            app.show_file(ASM, message.file, focus)
        app.pane(ASM).show_file(message.title)
        view.set_linked(message.lines, focus)
        if focus is not None and not app.view(ASM).has_focus:
            view.move_cursor(focus, announce=False)

    # -- B: compile to PTX and SASS ---------------------------------------------------------------

    def build(self) -> None:
        """Compile the kernel in the kernel pane (none there: every kernel of the run) to PTX and SASS."""
        app = self.app
        if app.run_id is None:
            return
        kernel = app.view(KERNEL).path
        what = "every kernel of the run" if kernel is None else kernel.rsplit("/", 1)[-1]
        app.status.set_progress(f"compiling {what} to PTX and SASS in the engine worker…")
        self.build_asm(app.run_id, None if kernel is None else [kernel])

    @thread_worker("asm-build", "build PTX/SASS")
    def build_asm(self, run_id: int, kernel_files: list[str] | None) -> None:
        from kernelscope.tui.asm_builder import AsmBuilder

        if self._builder is None:
            self._builder = AsmBuilder(self.app.store_root, Path(self.app.workspace))
        summary = self._builder.build(run_id, kernel_files,
                                      on_progress=lambda detail: self.app.post_message(AsmProgress(detail)))
        self.app.post_message(AsmBuilt(run_id, summary))

    def show_progress(self, message: AsmProgress) -> None:
        self.app.status.set_progress(f"compiling to PTX and SASS: {message.detail}…")

    def built(self, message: AsmBuilt) -> None:
        summary = message.summary
        failed = f", {len(summary['failed'])} failed: {summary['failed'][0]}" if summary["failed"] else ""
        self.app.status.set_progress(f"{summary['built']} kernel(s) compiled to PTX and SASS in "
                                     f"{summary['seconds']:.1f}s{failed}")
        if message.run_id == self.app.run_id:
            self.app.runs.load_facts(message.run_id)  # the kernel list's registers and spills
            self.refresh()

    def stop(self) -> None:
        if self._builder is not None:
            self._builder.stop()
