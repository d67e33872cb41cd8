"""Client side of the engine worker (`python -m kernelscope.engine.worker`).

Starts the worker in the user's interpreter, sends one JSON-RPC request at a
time and returns its result, passing the worker's notifications (phases) and
stderr lines (the user's prints, warnings) to callbacks. Never imports torch.

A worker that dies (segfault, OOM kill, `kill -9`) or runs past the timeout
raises `WorkerCrashed`; `restart()` starts a fresh one. A request the worker
answered with an error raises `WorkerRequestError` carrying the structured data
(kind, file, line, message, files).
"""
from __future__ import annotations

import collections
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

_END_OF_OUTPUT = object()
STDERR_TAIL_LINES = 40


class WorkerRequestError(Exception):
    """The worker answered a request with an error."""

    def __init__(self, code: int, message: str, data: dict | None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data or {}


class WorkerCrashed(Exception):
    """The worker process ended (or was killed) before answering; `timed_out` when it was
    stopped because it did not answer in time."""

    def __init__(self, message: str, returncode: int | None, stderr_tail: list[str], timed_out: bool = False):
        super().__init__(message)
        self.returncode, self.stderr_tail, self.timed_out = returncode, stderr_tail, timed_out
        # the worker said nothing about the request before it ended: it had died before the
        # request reached it (killed while idle, after `alive` last said it lived)
        self.unheard = False


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """One of the worker's pipes (`start` opens all three: None only for a process started otherwise)."""
    if stream is None:
        raise RuntimeError("the engine worker was started without its pipes")
    return stream


class WorkerClient:
    def __init__(
        self,
        python: str = sys.executable,
        cwd: str | Path | None = None,
        preload_device: str | None = None,
        execute: bool = False,
        on_output: Callable[[str], None] | None = None,
        env: dict[str, str] | None = None,
        memory_limit_mb: int | None = None,
    ):
        self.python = python
        self.cwd = str(cwd) if cwd is not None else None
        self.preload_device = preload_device
        self.execute = execute
        self.on_output = on_output
        self.env = env
        self.memory_limit_mb = memory_limit_mb
        self.info: dict = {}
        self._process: subprocess.Popen | None = None
        self._messages: queue.Queue = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._ids = itertools.count(1)
        self._request_lock = threading.Lock()

    # -- process -------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def exit_description(self) -> str | None:
        """How the last worker ended ("killed by SIGKILL"), None if none was started or it runs."""
        if self._process is None or self._process.poll() is None:
            return None
        return describe_exit(self._process.returncode)

    def start(self, timeout: float | None = 300) -> dict:
        """Start the worker and wait until it answers `initialize` (torch imported)."""
        command = [self.python, "-m", "kernelscope.engine.worker"]
        if self.preload_device:
            command += ["--preload-device", self.preload_device] + (["--execute"] if self.execute else [])
        if self.memory_limit_mb:
            command += ["--memory-limit-mb", str(self.memory_limit_mb)]
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
        env["PYTHONUNBUFFERED"] = "1"
        self._messages = queue.Queue()
        self._stderr_tail.clear()
        self._process = subprocess.Popen(
            command, cwd=self.cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C in the terminal reaches the front end, not the worker
        )
        process, messages = self._process, self._messages
        threading.Thread(target=self._read_messages, args=(process, messages), daemon=True,
                         name="kernelscope-worker-stdout").start()
        threading.Thread(target=self._read_stderr, args=(process,), daemon=True,
                         name="kernelscope-worker-stderr").start()
        self.info = self.request("initialize", {}, timeout=timeout)
        return self.info

    def restart(self, timeout: float | None = 300) -> dict:
        self.kill()
        return self.start(timeout=timeout)

    def kill(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the worker to exit; kill it if it is busy or does not exit in `timeout` seconds."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        if self._request_lock.acquire(blocking=False):
            try:
                self._send(process, {"jsonrpc": "2.0", "id": next(self._ids), "method": "shutdown", "params": {}})
                _pipe(process.stdin).close()
                process.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
            finally:
                self._request_lock.release()
        self.kill()

    # -- requests -------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict,
        on_notification: Callable[[str, dict], None] | None = None,
        timeout: float | None = None,
    ):
        """Send one request and wait for its answer; raises WorkerRequestError or WorkerCrashed."""
        with self._request_lock:
            process = self._process
            if process is None:
                raise WorkerCrashed("the worker is not started", None, [])
            request_id = next(self._ids)
            try:
                self._send(process, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            except OSError:
                raise self._crashed(process, unheard=True) from None
            heard = False
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    message = self._messages.get(timeout=remaining)
                except queue.Empty:
                    process.kill()
                    process.wait()
                    what = "compile" if method == "record" else f"'{method}'"
                    raise WorkerCrashed(
                        f"the {what} did not finish within {timeout:g}s (the timeout); the engine worker "
                        "was stopped", process.returncode, list(self._stderr_tail), timed_out=True,
                    ) from None
                if message is _END_OF_OUTPUT:
                    raise self._crashed(process, unheard=not heard)
                heard = True
                if "id" not in message:
                    if on_notification is not None:
                        on_notification(message.get("method", ""), message.get("params") or {})
                    continue
                if message.get("id") != request_id:
                    continue  # an answer to a request that timed out before
                if "error" in message:
                    error = message["error"]
                    raise WorkerRequestError(error.get("code", 0), error.get("message", ""), error.get("data"))
                return message.get("result")

    def _send(self, process: subprocess.Popen, message: dict) -> None:
        stdin = _pipe(process.stdin)
        stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        stdin.flush()

    def _crashed(self, process: subprocess.Popen, unheard: bool = False) -> WorkerCrashed:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        crash = WorkerCrashed(f"the engine worker {describe_exit(process.returncode)}",
                              process.returncode, list(self._stderr_tail))
        crash.unheard = unheard
        return crash

    # -- reader threads --------------------------------------------------------------

    def _read_messages(self, process: subprocess.Popen, messages: queue.Queue) -> None:
        for raw in _pipe(process.stdout):
            try:
                message = json.loads(raw)
            except ValueError:
                self._output(f"kernelscope: unreadable message from the worker: {raw[:200]!r}")
                continue
            if isinstance(message, dict):
                messages.put(message)
        messages.put(_END_OF_OUTPUT)

    def _read_stderr(self, process: subprocess.Popen) -> None:
        for raw in _pipe(process.stderr):
            self._output(raw.decode("utf-8", errors="replace").rstrip("\n"))

    def _output(self, line: str) -> None:
        self._stderr_tail.append(line)
        if self.on_output is not None:
            self.on_output(line)
