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


def __getattr__(name: str):
    # The session needs watchdog; load it only when asked for, so importing the
    # events (the CLI's --help, the LSP server's handlers) stays light.
    if name in ("WatchOptions", "WatchSession"):
        from kernelscope.watch import session

        return getattr(session, name)
    raise AttributeError(f"module 'kernelscope.watch' has no attribute {name!r}")

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
