"""Compiling for the TUI: a `WatchSession` (warm engine worker, never in-process),
run until the first build ends, or until stopped with --watch.

The app runs `drive()` in a thread worker and turns each watch event into a
message; this module knows nothing about Textual.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelscope.store.writing.deletion import DEFAULT_KEEP
from kernelscope.watch.events import BuildFailed, BuildFinished, WatchEvent


@dataclass
class CompileRequest:
    target: str  # PATH.py:FACTORY
    store: Path
    workspace: Path
    watch: bool = False
    device: str = "auto"
    train: bool = False
    dynamic: bool = False
    execute: bool = False
    keep: int = DEFAULT_KEEP  # runs of the target kept in the store (older ones are deleted)
    build_timeout: float = 600.0  # seconds; a longer build stops (and restarts) the engine worker
    memory_limit_mb: int | None = None  # the engine worker's address-space cap


class CompileDriver:
    def __init__(self, request: CompileRequest, on_event: Callable[[WatchEvent], None]):
        self.request = request
        self._on_event = on_event
        self._done = threading.Event()

    def drive(self) -> None:
        """Blocks: the first build (and with `watch`, every rebuild) until `stop()`."""
        from kernelscope.watch.session import WatchOptions, WatchSession  # watchdog, loaded on demand

        request = self.request
        options = WatchOptions(target=request.target, store=request.store, workspace=request.workspace,
                               device=request.device, train=request.train, dynamic=request.dynamic,
                               execute=request.execute, keep=request.keep, build_timeout=request.build_timeout,
                               memory_limit_mb=request.memory_limit_mb)
        session = WatchSession(options, self._event)
        session.start()
        try:
            self._done.wait()
        finally:
            session.stop()

    def stop(self) -> None:
        self._done.set()

    def _event(self, event: WatchEvent) -> None:
        self._on_event(event)
        if not self.request.watch and isinstance(event, (BuildFinished, BuildFailed)):
            self._done.set()
