"""Compiling from the TUI (`kernelscope tui TARGET [--watch]`): the compile session in a
thread worker, its events on the status line, each new run on screen.

The session itself (the warm engine worker, the file watcher) is compile_driver.py,
which knows nothing of Textual; here each of its events becomes a `CompileEvent`
message and then a status line: progress while building, the new run opened with
the cursor kept on its source line when a build finishes, the file, line and
message when one fails (the last good run stays).
"""
from __future__ import annotations

from kernelscope.errors import traceback_wanted
from kernelscope.tui.compile_driver import CompileDriver, CompileRequest
from kernelscope.tui.controller import Controller, thread_worker
from kernelscope.tui.error_report import FULL_ERROR_HINT
from kernelscope.tui.messages import CompileEvent
from kernelscope.tui.run_data import display_path
from kernelscope.watch.events import (
    BuildFailed,
    BuildFinished,
    BuildPhase,
    BuildStarted,
    WorkerReady,
    WorkerRestarted,
)


class CompileStatus(Controller):
    def __init__(self, app, request: CompileRequest | None):
        super().__init__(app)
        self.request = request  # None: the app only shows the store
        self._driver: CompileDriver | None = None

    def start(self) -> None:
        if self.request is None:  # the app starts it only with a request
            return
        self.app.status.set_progress(f"compiling {self.request.target} in the engine worker…")
        self.compile_target(self.request)

    @thread_worker("compile", "compile target")
    def compile_target(self, request: CompileRequest) -> None:
        self._driver = CompileDriver(request, lambda event: self.app.post_message(CompileEvent(event)))
        self._driver.drive()

    def show(self, message: CompileEvent) -> None:
        status = self.app.status
        event = message.event
        if isinstance(event, WorkerReady):
            status.set_progress(f"engine worker ready (torch {event.torch or '?'}), compiling…")
        elif isinstance(event, BuildStarted):
            status.set_progress(f"build {event.build}: compiling…")
        elif isinstance(event, BuildPhase):
            status.set_progress(f"build {event.build}: {event.phase}…")
        elif isinstance(event, BuildFinished):
            status.set_progress(f"build {event.build}: run {event.run_id} in {event.seconds:.1f}s"
                                + (" · watching for saves" if self.request is not None and self.request.watch else ""))
            self.app.runs.switch_to(event.run_id)
        elif isinstance(event, BuildFailed):
            where = display_path(event.file, self.app.workspace) if event.file else ""
            where += f":{event.line}" if where and event.line else ""
            kept = f" (run {event.last_good_run} stays)" if event.last_good_run else ""
            how = ""
            if event.traceback:
                self.app.errors.keep(f"build {event.build} failed:\n{event.traceback}")
                how = "" if traceback_wanted() else f" · {FULL_ERROR_HINT}"
            status.set_progress("")
            status.set_error(f"build {event.build} failed: {where + ': ' if where else ''}{event.message}{kept}{how}")
        elif isinstance(event, WorkerRestarted):
            status.set_error(f"engine worker restarted: {event.reason}")

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.stop()
