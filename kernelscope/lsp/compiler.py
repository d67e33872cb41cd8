"""Compiles for the language server, always in the engine worker (never in-process).

`Compiler.compile` sends one `record` request to a warm worker and returns the
new run id; a compile that raises reports its file and line, one that hangs past
the timeout or crashes the worker ends that worker, and a fresh one is started
for the next compile. Watch mode is a `WatchSession` (its own worker). Both
write runs into the store; the server notices new runs and refreshes.
Blocking calls: run them in a thread.
"""
from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelscope.lsp.targets import CompileTarget
from kernelscope.watch.worker_client import WorkerClient, WorkerCrashed, WorkerRequestError

log = logging.getLogger(__name__)


@dataclass
class CompileFailed(Exception):
    """No new run; the last good run stays shown."""

    kind: str  # syntax, target, compile, store, usage, internal, memory, crash, timeout
    message: str
    file: str | None = None
    line: int | None = None
    restarted: bool = False  # a fresh worker replaced one that died
    traceback: str | None = None  # the chain behind it (worker side), logged on request

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else f"{self.file}: " if self.file else ""
        return f"{where}{self.message}"


@dataclass
class CompileResult:
    run_id: int
    graphs: int
    kernels: int
    seconds: float


class Compiler:
    def __init__(self, workspace: Path, on_output: Callable[[str], None] | None = None):
        self.workspace = workspace
        self._on_output = on_output
        self._client: WorkerClient | None = None
        self._python: str | None = None
        self._lock = threading.Lock()  # one compile at a time
        self.busy = False

    @property
    def worker_pid(self) -> int | None:
        return self._client.pid if self._client is not None and self._client.alive else None

    def compile(self, target: CompileTarget, store: Path, python: str | None, timeout: float,
                on_phase: Callable[[str, str], None] | None = None,
                on_restart: Callable[[str], None] | None = None,
                memory_limit_mb: int | None = None) -> CompileResult:
        with self._lock:
            self.busy = True
            try:
                return self._compile(target, store, python or sys.executable, timeout, on_phase, on_restart,
                                     memory_limit_mb)
            finally:
                self.busy = False

    def _compile(self, target, store, python, timeout, on_phase, on_restart, memory_limit_mb) -> CompileResult:
        client = self._worker(python, target.device, on_restart, memory_limit_mb)
        params = {
            "target": target.spec,
            "store": str(store),
            "workspace": str(self.workspace),
            "options": {"device": target.device, "train": target.train, "dynamic": target.dynamic},
        }
        try:
            result = client.request(
                "record", params, timeout=timeout,
                on_notification=lambda method, p: on_phase and on_phase(p.get("phase", ""), p.get("detail", "")),
            )
        except WorkerRequestError as error:
            data = error.data
            raise CompileFailed(data.get("kind", "internal"), data.get("message") or error.message,
                                data.get("file"), data.get("line"), traceback=data.get("traceback")) from None
        except WorkerCrashed as crash:
            tail = [line for line in crash.stderr_tail if line.strip()][-2:]
            detail = f" (last output: {' | '.join(tail)})" if tail and not crash.timed_out else ""
            restarted = self._restart(on_restart, str(crash))
            raise CompileFailed("timeout" if crash.timed_out else "crash", f"{crash}{detail}",
                                restarted=restarted, traceback="\n".join(crash.stderr_tail) or None) from None
        return CompileResult(result["run_id"], result["graphs"], result["kernels"],
                             result["timings"].get("total", 0.0))

    def _worker(self, python: str, device: str, on_restart, memory_limit_mb: int | None = None) -> WorkerClient:
        if self._client is not None and (self._python, self._client.memory_limit_mb) != (python, memory_limit_mb):
            self._client.stop()
            self._client = None
        if self._client is None:
            self._client = WorkerClient(python=python, cwd=self.workspace, preload_device=device,
                                        on_output=self._on_output, memory_limit_mb=memory_limit_mb)
            self._python = python
        if not self._client.alive:
            ended = self._client.exit_description
            try:
                self._client.start()
            except WorkerCrashed as error:
                raise CompileFailed("worker", f"the engine worker could not start with {python}: {error}") from None
            if ended is not None and on_restart is not None:
                on_restart(f"the engine worker {ended}; started a new one (pid {self._client.pid})")
        return self._client

    def _restart(self, on_restart, reason: str) -> bool:
        """Start a fresh worker now, so the next compile finds it warm."""
        try:
            self._client.restart()
        except WorkerCrashed as error:
            if on_restart:
                on_restart(f"{reason}; restarting the engine worker failed: {error}")
            return False
        if on_restart:
            on_restart(f"{reason}; restarted the engine worker (pid {self._client.pid})")
        return True

    def kill_worker(self) -> None:
        if self._client is not None:
            self._client.kill()

    def stop(self) -> None:
        if self._client is not None:
            self._client.stop()
