"""Compiles for the language server, always in the engine worker (never in-process).

`Compiler.compile` sends one `record` request to a warm worker and returns the
new run id (`build_asm` an `asm` request: a run's kernels below Triton); a compile
that raises reports its file and line, one that hangs past the timeout or crashes
the worker ends that worker, and a fresh one is started for the next compile. Watch
mode is a `WatchSession` (its own worker). Both write runs into the store; the server
notices new runs and refreshes. Blocking calls: run them in a thread.
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
    asm: dict | None = None  # the build below Triton's summary, when asked for
    decisions: dict | None = None  # the run's timing decisions: counts, the guessed ones (docs/decisions.md)


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
                memory_limit_mb: int | None = None, asm: bool = False,
                decisions: str | None = None) -> CompileResult:
        """Record `target` into `store`; with `asm`, the run's Triton kernels are compiled below
        Triton (PTX, SASS) in the same request, once the run is stored. `decisions`: the GPU
        decisions to replay (None: the workspace's default, which the worker finds)."""
        options = {"device": target.device, "train": target.train, "dynamic": target.dynamic,
                   **({"asm": True} if asm else {}), **({"decisions": decisions} if decisions else {})}
        params = {"target": target.spec, "store": str(store), "workspace": str(self.workspace), "options": options}
        result = self._request("record", params, python, target.device, timeout, on_phase, on_restart, memory_limit_mb)
        return CompileResult(result["run_id"], result["graphs"], result["kernels"],
                             result["timings"].get("total", 0.0), result.get("asm"), result.get("decisions"))

    def build_asm(self, store: Path, run_id: int, kernel_files: list[str] | None, python: str | None,
                  timeout: float, on_phase: Callable[[str, str], None] | None = None,
                  on_restart: Callable[[str], None] | None = None,
                  memory_limit_mb: int | None = None, device: str = "auto") -> dict:
        """Compile run `run_id`'s Triton kernels (those stored at `kernel_files`, else all) below
        Triton in the warm engine worker; each is stored as soon as it is built. Returns the
        worker's summary (`built`, `failed`, `seconds`)."""
        params = {"store": str(store), "run_id": run_id}
        if kernel_files is not None:
            params["kernel_files"] = sorted(set(kernel_files))
        # `device`: what a worker started here imports torch for (a compile that follows reuses it)
        return self._request("asm", params, python, device, timeout, on_phase, on_restart, memory_limit_mb)

    def _request(self, method: str, params: dict, python: str | None, device: str, timeout: float, on_phase,
                 on_restart, memory_limit_mb) -> dict:
        with self._lock:
            self.busy = True
            try:
                client = self._worker(python or sys.executable, device, on_restart, memory_limit_mb)
                return self._send(client, method, params, timeout, on_phase, on_restart)
            finally:
                self.busy = False

    def _send(self, client: WorkerClient, method: str, params: dict, timeout: float, on_phase, on_restart) -> dict:
        try:
            try:
                return client.request(
                    method, params, timeout=timeout,
                    on_notification=lambda name, p: on_phase and on_phase(p.get("phase", ""), p.get("detail", "")),
                )
            except WorkerCrashed as crash:
                if not crash.unheard or crash.timed_out:
                    raise
                # it had died while idle (after `alive` last said it lived): ask a new one, once
                ended = str(crash).removeprefix("the engine worker ")
                asked = "compile" if method == "record" else "PTX/SASS build"
                if not self._restart(client, on_restart,
                                     f"the engine worker ended ({ended}) before the {asked} reached it"):
                    raise
                return client.request(
                    method, params, timeout=timeout,
                    on_notification=lambda name, p: on_phase and on_phase(p.get("phase", ""), p.get("detail", "")),
                )
        except WorkerRequestError as error:
            data = error.data
            raise CompileFailed(data.get("kind", "internal"), data.get("message") or error.message,
                                data.get("file"), data.get("line"), traceback=data.get("traceback")) from None
        except WorkerCrashed as crash:
            tail = [line for line in crash.stderr_tail if line.strip()][-2:]
            detail = f" (last output: {' | '.join(tail)})" if tail and not crash.timed_out else ""
            restarted = self._restart(client, on_restart, str(crash))
            raise CompileFailed("timeout" if crash.timed_out else "crash", f"{crash}{detail}",
                                restarted=restarted, traceback="\n".join(crash.stderr_tail) or None) from None

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

    def _restart(self, client: WorkerClient, on_restart, reason: str) -> bool:
        """Start a fresh worker now, so the next compile finds it warm."""
        try:
            client.restart()
        except WorkerCrashed as error:
            if on_restart:
                on_restart(f"{reason}; restarting the engine worker failed: {error}")
            return False
        if on_restart:
            on_restart(f"{reason}; restarted the engine worker (pid {client.pid})")
        return True

    def stop(self) -> None:
        if self._client is not None:
            self._client.stop()
