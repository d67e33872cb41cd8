"""Compiling kernels below Triton (PTX, SASS) for the TUI: an `asm` request to an engine
worker of its own (the TUI never imports torch), started on the first ask and kept warm
until the app closes. Each kernel is stored as soon as it is built; the app reads the
builds from the store. Blocking: call it from a thread worker. Knows nothing of Textual.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.watch.worker_client import WorkerClient, WorkerCrashed, WorkerRequestError


class AsmBuilder:
    def __init__(self, store: Path, cwd: Path, python: str = sys.executable):
        self.store = store
        self.cwd = cwd
        self.python = python
        self._client: WorkerClient | None = None
        self._lock = threading.Lock()

    def build(self, run_id: int, kernel_files: list[str] | None,
              on_progress: Callable[[str], None] = lambda detail: None, timeout: float = 600.0) -> dict:
        """Build run `run_id`'s kernels stored at `kernel_files` (None: all of them) that have no
        build yet; the worker's summary (`built`, `failed`, `seconds`). UserError on failure."""
        with self._lock:
            if self._client is None or not self._client.alive:
                self._client = WorkerClient(python=self.python, cwd=self.cwd, on_output=lambda line: None)
                on_progress("starting the engine worker (importing torch)")
                try:
                    self._client.start()
                except WorkerCrashed as error:
                    raise UserError(f"the engine worker could not start with {self.python}: {error}") from error
            params = {"store": str(self.store), "run_id": run_id}
            if kernel_files is not None:
                params["kernel_files"] = sorted(set(kernel_files))
            try:
                return self._client.request("asm", params, timeout=timeout, on_notification=lambda method, p:
                                            on_progress(p.get("detail", "")) if p.get("phase") == "asm" else None)
            except (WorkerRequestError, WorkerCrashed) as error:
                raise UserError(f"compiling run {run_id}'s kernels to PTX and SASS failed: {error} "
                                "(the run itself is unchanged)") from error

    def stop(self) -> None:
        if self._client is not None:
            self._client.stop()
            self._client = None
