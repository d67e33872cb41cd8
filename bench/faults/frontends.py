"""The three front ends that compile, driven as a user drives them, with faults injected.

- `watch`: `kernelscope watch MODEL:make --json` as a subprocess; a build is a save.
- `lsp`: `kernelscope lsp` as a subprocess with a real LSP client (pytest-lsp); a build
  is the `kernelscope.compile` command.
- `tui`: the Textual app (`kernelscope tui MODEL:make --watch`) run headless in this
  process (Textual's `run_test`); a build is a save.
Each compiles in its own real engine worker, which the campaign finds among the front
end's child processes and kills with SIGKILL. Nothing here is mocked.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from faults.common import (
    BUILD_TIMEOUT,
    DEVICE,
    FAULTS,
    MEMORY_LIMIT_MB,
    MODEL_NAME,
    REPO,
    model_source,
    touch_model,
    worker_pids,
)


@dataclass
class Outcome:
    kind: str  # "ok", or the failure kind the front end reported (crash, timeout, target, memory, ...)
    message: str = ""
    run_id: int | None = None


async def wait_until(predicate, timeout: float, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(interval)
    return None


# -- kernelscope watch ---------------------------------------------------------------------------


class WatchFrontEnd:
    name = "watch"

    def __init__(self, workspace: Path, store: Path):
        self.workspace, self.store = workspace, store
        self.events: list[dict] = []
        self.mark = 0
        self.process: subprocess.Popen | None = None

    async def start(self) -> int:
        command = [sys.executable, "-m", "kernelscope", "watch", f"{MODEL_NAME}:make", "--json", "--store",
                   str(self.store), "--keep", "100000", "--quiet-period", "0.05", "--target", DEVICE,
                   "--build-timeout", str(BUILD_TIMEOUT), "--memory-limit", str(MEMORY_LIMIT_MB)]
        self.log = open(self.workspace / "watch.stderr", "w")
        self.process = subprocess.Popen(command, cwd=self.workspace, stdout=subprocess.PIPE, stderr=self.log,
                                        text=True, env=_env())
        threading.Thread(target=self._read, daemon=True).start()
        outcome = await self.finish(300)
        assert outcome.kind == "ok", f"the first build failed: {outcome}"
        return outcome.run_id

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass

    def worker_pid(self) -> int | None:
        pids = worker_pids(self.process.pid)
        return pids[0] if pids else None

    async def begin_compile(self, counter: int) -> None:
        self.mark = len(self.events)
        touch_model(self.workspace, counter)
        await self._next(lambda e: e["event"] == "build_started", 30)

    async def break_model(self, fault: str) -> None:
        self.mark = len(self.events)
        (self.workspace / MODEL_NAME).write_text(model_source(FAULTS[fault]))
        await self._next(lambda e: e["event"] == "build_started", 30)

    async def wait_phase(self, phase: str, timeout: float = 60) -> bool:
        found = await self._next(lambda e: (e["event"] == "build_phase" and e["phase"] == phase)
                                 or e["event"] in ("build_finished", "build_failed"), timeout, consume=False)
        return bool(found) and found["event"] == "build_phase"

    async def finish(self, timeout: float) -> Outcome:
        event = await self._next(lambda e: e["event"] in ("build_finished", "build_failed"), timeout)
        if event is None:
            return Outcome("hang", f"no build result within {timeout:.0f}s")
        if event["event"] == "build_finished":
            return Outcome("ok", run_id=event["run_id"])
        where = f"{Path(event['file']).name}:{event['line']}: " if event.get("file") and event.get("line") else ""
        return Outcome(event["kind"], where + event["message"])

    async def recovered(self, outcome: Outcome) -> str:
        if outcome.kind not in ("crash", "timeout"):
            return ""
        event = await self._next(lambda e: e["event"] == "worker_restarted", 120)
        return f"engine worker restarted (pid {event['pid']})" if event else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    async def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            await asyncio.to_thread(self.process.wait, 60)
        self.log.close()

    async def _next(self, predicate, timeout: float, consume: bool = True):
        def look():
            for index in range(self.mark, len(self.events)):
                if predicate(self.events[index]):
                    if consume:
                        self.mark = index + 1
                    return self.events[index]
            return None

        return await wait_until(look, timeout)


# -- kernelscope lsp ---------------------------------------------------------------------------


class LspFrontEnd:
    name = "lsp"

    def __init__(self, workspace: Path, store: Path):
        self.workspace, self.store = workspace, store
        self.task: asyncio.Task | None = None
        self.session = None

    async def start(self) -> int:
        from lsp_support import start_session

        self.session = await start_session(self.workspace, {
            "store": str(self.store), "deviceTarget": DEVICE, "compileTimeout": BUILD_TIMEOUT,
            "memoryLimit": MEMORY_LIMIT_MB})
        await self.begin_compile(0)
        outcome = await self.finish(300)
        assert outcome.kind == "ok", f"the first compile failed: {outcome}"
        return outcome.run_id

    @property
    def server_pid(self) -> int:
        return self.session.client._server.pid

    def worker_pid(self) -> int | None:
        pids = worker_pids(self.server_pid)
        return pids[0] if pids else None

    async def begin_compile(self, counter: int, factory: str = "make") -> None:
        self.reports = len(self._reports())
        self.task = asyncio.ensure_future(self.session.command("kernelscope.compile",
                                                               {"target": f"{MODEL_NAME}:{factory}"}))
        await asyncio.sleep(0)

    async def break_model(self, fault: str) -> None:
        await self.begin_compile(0, f"fault_{fault}")

    def _reports(self) -> list[str]:
        values = [value for values in self.session.client.progress_reports.values() for value in values]
        return [getattr(value, "message", None) or "" for value in values]

    async def wait_phase(self, phase: str, timeout: float = 60) -> bool:
        found = await wait_until(lambda: any(message.startswith(phase) for message in self._reports()[self.reports:])
                                 or self.task.done(), timeout)
        return bool(found) and not self.task.done()

    async def finish(self, timeout: float) -> Outcome:
        from pygls.exceptions import JsonRpcException

        try:
            result = await asyncio.wait_for(asyncio.shield(self.task), timeout)
        except asyncio.TimeoutError:
            return Outcome("hang", f"no answer to kernelscope.compile within {timeout:.0f}s")
        except JsonRpcException as error:
            data = getattr(error, "data", None) or {}
            return Outcome(data.get("kind", "error"), str(error.message if hasattr(error, "message") else error))
        return Outcome("ok", run_id=result["runId"] if isinstance(result, dict) else result.runId)

    async def recovered(self, outcome: Outcome) -> str:
        if outcome.kind not in ("crash", "timeout"):
            return ""
        shown = await wait_until(lambda: [m.message for m in self.session.client.messages
                                          if "restarted the engine worker" in m.message], 30)
        return shown[-1] if shown else ""

    def alive(self) -> bool:
        return self.session.client._server.returncode is None

    async def answers(self) -> bool:
        """The server still answers requests (a command that reads the store)."""
        try:
            await asyncio.wait_for(self.session.command("kernelscope.runs"), 30)
            return True
        except Exception:  # noqa: BLE001 - any failure to answer is what this checks
            return False

    async def stop(self) -> None:
        if self.session is not None:
            await asyncio.wait_for(self.session.stop(), 60)


# -- kernelscope tui (in this process) ------------------------------------------------------------


class TuiFrontEnd:
    name = "tui"

    def __init__(self, workspace: Path, store: Path):
        self.workspace, self.store = workspace, store
        self.errors: list[str] = []
        self.mark = 0

    async def start(self) -> int:
        from kernelscope.tui.app import KernelscopeApp
        from kernelscope.tui.compile_driver import CompileRequest

        request = CompileRequest(target=f"{MODEL_NAME}:make", store=self.store, workspace=self.workspace, watch=True,
                                 device=DEVICE, build_timeout=BUILD_TIMEOUT, memory_limit_mb=MEMORY_LIMIT_MB,
                                 keep=100_000)  # every run stays: the campaign counts lost runs
        self.app = KernelscopeApp(self.store, compile_request=request)
        self._context = self.app.run_test(size=(160, 48))
        self.pilot = await self._context.__aenter__()
        status = self.app.status
        original = status.set_error

        def spy(text: str) -> None:  # what the status line was told, in order
            if text:
                self.errors.append(text)
            original(text)

        status.set_error = spy
        found = await wait_until(lambda: self.app.run_id, 300)
        assert found, f"the first build never showed: {self.errors}"
        return self.app.run_id

    def worker_pid(self) -> int | None:
        pids = worker_pids(os.getpid())
        return pids[0] if pids else None

    async def begin_compile(self, counter: int) -> None:
        self.before, self.mark = self.app.run_id, len(self.errors)
        touch_model(self.workspace, counter)
        await wait_until(lambda: "compiling" in self.app.status.progress or self._failed(), 30)

    async def break_model(self, fault: str) -> None:
        self.before, self.mark = self.app.run_id, len(self.errors)
        (self.workspace / MODEL_NAME).write_text(model_source(FAULTS[fault]))
        await wait_until(lambda: "compiling" in self.app.status.progress or self._failed(), 30)

    def _failed(self) -> str | None:
        return next((text for text in self.errors[self.mark:] if "failed" in text), None)

    async def wait_phase(self, phase: str, timeout: float = 60) -> bool:
        found = await wait_until(lambda: self.app.status.progress.endswith(f": {phase}…") or self._failed()
                                 or self.app.run_id != self.before, timeout)
        return bool(found) and not self._failed() and self.app.run_id == self.before

    async def finish(self, timeout: float) -> Outcome:
        found = await wait_until(lambda: self._failed() or (self.app.run_id != self.before), timeout)
        if not found:
            return Outcome("hang", f"the TUI showed no result within {timeout:.0f}s")
        failed = self._failed()
        if failed is None:
            return Outcome("ok", run_id=self.app.run_id)
        return Outcome(_kind_of(failed), failed)

    async def recovered(self, outcome: Outcome) -> str:
        if outcome.kind not in ("crash", "timeout"):
            return ""
        shown = await wait_until(lambda: [text for text in self.errors[self.mark:] if "worker restarted" in text], 120)
        return shown[-1] if shown else ""

    def alive(self) -> bool:
        return self.app.is_running

    async def stop(self) -> None:
        await self._context.__aexit__(None, None, None)


def _kind_of(message: str) -> str:
    """The TUI shows a message, not a kind: the kind it names."""
    if "did not finish within" in message:
        return "timeout"
    if "memory limit" in message:
        return "memory"
    if "killed by" in message or "exited with status" in message:
        return "crash"
    if "raised" in message or "the factory" in message:
        return "target"
    return "error"


FRONT_ENDS = {"watch": WatchFrontEnd, "lsp": LspFrontEnd, "tui": TuiFrontEnd}


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
