"""Watch mode: rebuild a target's run in a warm engine worker whenever its files change.

Shared by `kernelscope watch`, the language server and the TUI: they create a
`WatchSession` and subscribe to its events. Never imports torch (the worker,
a subprocess, does).
"""
from __future__ import annotations

from kernelscope.watch.events import (
    BuildFailed,
    BuildFinished,
    BuildPhase,
    BuildStarted,
    WatchEvent,
    WatchingFiles,
    WatchStopped,
    WorkerOutput,
    WorkerReady,
    WorkerRestarted,
)
from kernelscope.watch.session import WatchOptions, WatchSession

__all__ = [
    "BuildFailed",
    "BuildFinished",
    "BuildPhase",
    "BuildStarted",
    "WatchEvent",
    "WatchOptions",
    "WatchSession",
    "WatchStopped",
    "WatchingFiles",
    "WorkerOutput",
    "WorkerReady",
    "WorkerRestarted",
]
