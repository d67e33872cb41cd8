"""Where an error becomes visible: the status line shows one line, and with
KERNELSCOPE_TRACEBACK=1 (or --traceback) the chain behind it is kept and printed
after the screen closes (`kernelscope/cli/tui_cmd.py` prints `app.full_errors`).

A failed worker is the one route (`worker_failed`, from the app's
`Worker.StateChanged`): the screen keeps the last good run. A failed build under
--watch comes as an event instead (compile_status.py) and keeps its chain here too.
"""
from __future__ import annotations

from textual.worker import Worker, WorkerState

from kernelscope.errors import StoreError, UserError, full_error, traceback_wanted
from kernelscope.tui.controller import Controller
from kernelscope.tui.gateway import Stale

FULL_ERROR_HINT = "KERNELSCOPE_TRACEBACK=1 prints the full error on exit"


class ErrorReport(Controller):
    def __init__(self, app):
        super().__init__(app)
        self.full_errors: list[str] = []  # printed on exit with KERNELSCOPE_TRACEBACK=1

    def keep(self, text: str) -> None:
        """Keep an error's chain for after the screen closes, if it is wanted."""
        if traceback_wanted():
            self.full_errors.append(text)

    def worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if error is None or isinstance(error, Stale):  # None: never, in the ERROR state
            return
        self.keep(full_error(error))
        if isinstance(error, (UserError, StoreError)):
            self.app.status.set_error(str(error))
        else:
            self.app.status.set_error(f"{event.worker.name} failed: {type(error).__name__}: {error} "
                                      f"({FULL_ERROR_HINT})")
