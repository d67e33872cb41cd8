"""What a watch session reports, as plain data.

Front ends subscribe with one callback (`WatchSession(options, on_event)`) and
branch on the event's type; `to_dict()` gives the JSON form `kernelscope watch
--json` prints, one object per line with an `event` key. Paths are absolute.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WatchEvent:
    event = "event"

    def to_dict(self) -> dict:
        return {"event": self.event, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class WorkerReady(WatchEvent):
    """An engine worker is running with torch imported."""

    event = "worker_ready"
    pid: int
    torch: str | None
    import_seconds: float
    problem: str | None = None  # e.g. torch missing in that interpreter


@dataclass(frozen=True)
class WorkerRestarted(WatchEvent):
    """The worker died (crash, kill, timeout) and a fresh one replaced it."""

    event = "worker_restarted"
    reason: str
    pid: int


@dataclass(frozen=True)
class WorkerOutput(WatchEvent):
    """A line the worker wrote to stderr: the user's prints, warnings."""

    event = "worker_output"
    line: str


@dataclass(frozen=True)
class WatchingFiles(WatchEvent):
    """The set of watched files changed (after a build reported what the target imported)."""

    event = "watching"
    files: list[str]


@dataclass(frozen=True)
class BuildStarted(WatchEvent):
    event = "build_started"
    build: int
    changed: list[str]  # paths whose change caused the build; empty for the first build


@dataclass(frozen=True)
class BuildPhase(WatchEvent):
    event = "build_phase"
    build: int
    phase: str  # import, capture, lower, codegen
    detail: str


@dataclass(frozen=True)
class BuildFinished(WatchEvent):
    """A new run is in the store and is the latest of its target."""

    event = "build_finished"
    build: int
    run_id: int
    target: str
    graphs: int
    kernels: int
    timings: dict[str, float]  # seconds: import, capture, lower, codegen, store, total
    seconds: float  # build start to finish as the session saw it (includes the protocol)
    pruned: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)  # the run's timing decisions, as the run summary says them


@dataclass(frozen=True)
class BuildFailed(WatchEvent):
    """No new run; `last_good_run` (if any) stays the latest run of the target."""

    event = "build_failed"
    build: int
    kind: str  # syntax, target, compile, store, usage, internal, crash, timeout, worker
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    last_good_run: int | None = None
    traceback: str | None = None  # the chain behind the error (worker side), for --traceback


@dataclass(frozen=True)
class WatchStopped(WatchEvent):
    event = "stopped"
    builds: int
    last_good_run: int | None
