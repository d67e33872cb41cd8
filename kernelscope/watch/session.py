"""A watch session: file watcher + debouncer + engine worker + store, reporting events.

    session = WatchSession(WatchOptions("examples/mlp.py:make"), on_event=print)
    # or a whole script, as `kernelscope run` records it:
    # WatchSession(WatchOptions("train.py", script_args=["--steps", "2"]), on_event=print)
    session.start()          # first build, then a build after every change
    ...
    session.stop()

The CLI, the language server and the TUI all drive this class; it never prints.
`on_event` is called from background threads (the build thread, and the
worker's stderr reader for `WorkerOutput`), one event at a time: front ends
with an event loop hand events over to it. The store is written by the worker;
a failed build writes nothing, so the last good run stays the latest.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import TargetError, UserError, full_error
from kernelscope.store.paths import DEFAULT_STORE_DIR
from kernelscope.store.writing.deletion import DEFAULT_KEEP
from kernelscope.watch.debounce import DEFAULT_QUIET_SECONDS, Debouncer
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
from kernelscope.watch.watcher import FileWatcher
from kernelscope.watch.worker_client import WorkerClient, WorkerCrashed, WorkerRequestError

log = logging.getLogger(__name__)



@dataclass
class WatchOptions:
    target: str  # PATH.py:FACTORY, or a script PATH.py (run as __main__, as `kernelscope run` does)
    store: Path = Path(DEFAULT_STORE_DIR)
    workspace: Path = field(default_factory=Path.cwd)
    device: str = "auto"
    train: bool = False
    dynamic: bool = False
    execute: bool = False
    keep: int = DEFAULT_KEEP  # runs kept per target
    quiet_seconds: float = DEFAULT_QUIET_SECONDS
    build_timeout: float | None = 600.0  # a build running longer is stopped (worker restarted)
    python: str = sys.executable  # the interpreter the worker runs in
    memory_limit_mb: int | None = None  # the worker's address-space cap (RLIMIT_AS); None: no cap
    asm: bool = False  # compile each run's Triton kernels below Triton (PTX, SASS) after it is stored
    decisions: str | None = None  # --decisions: a GPU's timing decisions to replay (None: the workspace default)
    script_args: list[str] = field(default_factory=list)  # a script's argv after its path (what follows `--`)
    world_size: int | None = None  # --world-size: one rank of a job of this size, on the fake process group
    rank: int = 0
    job: str | None = None


def resolve_target(spec: str, workspace: Path) -> tuple[Path, str | None]:
    """(absolute target file, factory name), the factory None for a script (`PATH.py`);
    TargetError when the spec is malformed or missing."""
    path_text, separator, factory = spec.rpartition(":")
    if not separator or not path_text or not factory.isidentifier():
        if not spec.endswith(".py"):
            raise TargetError(f"'{spec}' is not a target: write PATH.py:FACTORY (a model factory, e.g. "
                              "examples/mlp.py:make) or SCRIPT.py (a whole program)")
        path_text, factory = spec, ""
    path = Path(path_text)
    path = path if path.is_absolute() else workspace / path
    if not path.is_file():
        raise TargetError(f"{path_text}: no such file (the target was '{spec}')")
    return path.resolve(), factory or None


def check_mode(options: WatchOptions, script: bool) -> None:
    """UserError for options the target's kind does not take: a script decides for itself
    what it compiles and how (no --train, --dynamic); a factory takes no script arguments."""
    if script:
        refused = [flag for flag, on in (("--train", options.train), ("--dynamic", options.dynamic)) if on]
        if refused:
            raise UserError(f"{' and '.join(refused)}: only for a factory (PATH.py:FACTORY); the script "
                            f"{options.target} decides for itself what it compiles and how (as under "
                            "`kernelscope run`)")
    elif options.script_args:
        raise UserError(f"arguments after `--` are a script's; {options.target} is a factory "
                        "(PATH.py:FACTORY), which takes none")


class WatchSession:
    def __init__(self, options: WatchOptions, on_event: Callable[[WatchEvent], None],
                 clock: Callable[[], float] = time.monotonic):
        if not isinstance(options.keep, int) or options.keep < 1:
            raise TargetError(f"--keep must be a whole number from 1, got {options.keep!r}")
        self.options = options
        self.workspace = options.workspace.resolve()
        self.store = (options.store if options.store.is_absolute() else self.workspace / options.store).absolute()
        self.target_file, factory = resolve_target(options.target, self.workspace)
        self.script = factory is None  # a whole program, run as __main__
        check_mode(options, self.script)
        self.target = str(self.target_file) if self.script else f"{self.target_file}:{factory}"
        self.builds = 0
        self.last_good_run: int | None = None
        self.watched_files: list[str] = []
        self._on_event = on_event
        self._clock = clock
        self._emit_lock = threading.Lock()
        self._condition = threading.Condition()
        self._debouncer = Debouncer(options.quiet_seconds)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._client = WorkerClient(
            python=options.python, cwd=self.workspace, preload_device=options.device,
            execute=options.execute, on_output=lambda line: self._emit(WorkerOutput(line)),
            memory_limit_mb=options.memory_limit_mb,
        )
        self._watcher = FileWatcher(self._changed, excluded_dirs=[str(self.store)])

    # -- control -----------------------------------------------------------------------

    def start(self) -> None:
        """Watch the target, start the worker and the first build (in the background)."""
        self._watch([str(self.target_file)])
        self._watcher.start()
        self._thread = threading.Thread(target=self._run, name="kernelscope-watch", daemon=True)
        self._thread.start()

    def request_build(self, reason: str = "requested") -> None:
        """Build again after the quiet period, as if `reason` (a path) had changed."""
        self._changed(reason)

    def stop(self) -> None:
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        self._watcher.stop()
        self._client.stop()  # a build in progress is cut short
        if self._thread is not None:
            self._thread.join()
        self._client.stop()  # in case the thread started a worker while we were stopping
        self._emit(WatchStopped(self.builds, self.last_good_run))

    def wait(self, timeout: float | None = None) -> bool:
        """True once the session's build thread has ended (after stop())."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def worker_pid(self) -> int | None:
        return self._client.pid

    # -- the build loop ----------------------------------------------------------------

    def _changed(self, path: str) -> None:
        with self._condition:
            self._debouncer.change(path, self._clock())
            self._condition.notify_all()

    def _run(self) -> None:
        with self._condition:
            self._debouncer.start_build()  # saves during the first build are remembered
        self._build([])
        while True:
            with self._condition:
                self._debouncer.finish_build()
                while not self._stopping and not self._debouncer.is_due(self._clock()):
                    due = self._debouncer.due_at()
                    self._condition.wait(None if due is None else max(due - self._clock(), 0.0))
                if self._stopping:
                    return
                changed = self._debouncer.start_build()
            self._build(changed)

    def _build(self, changed: list[str]) -> None:
        if self._stopping:
            return
        self.builds += 1
        build = self.builds
        self._emit(BuildStarted(build, changed))
        started = time.perf_counter()
        try:
            if not self._client.alive:
                self._start_worker()  # first build, or the worker died while idle
            try:
                result = self._record(build)
            except WorkerCrashed as crash:
                if not crash.unheard or crash.timed_out or self._stopping:
                    raise
                self._start_worker()  # it died while idle, after `alive` last said it lived: once more
                result = self._record(build)
        except WorkerRequestError as error:
            data = error.data
            self._watch([*self.watched_files, *data.get("files", [])])
            self._emit(BuildFailed(
                build, data.get("kind", "internal"), data.get("message") or error.message,
                data.get("file"), data.get("line"), data.get("column"), self.last_good_run,
                data.get("traceback"),
            ))
            return
        except WorkerCrashed as crash:
            if not self._stopping:
                self._report_crash(build, crash)
            return
        except Exception as error:  # noqa: BLE001 - a bug here must not end the watch
            log.exception("build %d failed inside kernelscope", build)
            self._emit(BuildFailed(build, "internal", f"{type(error).__name__}: {error}",
                                   last_good_run=self.last_good_run, traceback=full_error(error)))
            return
        self.last_good_run = result["run_id"]
        self._watch(result["files"])
        self._emit(BuildFinished(
            build, result["run_id"], result["target"], result["graphs"], result["kernels"],
            result["timings"], round(time.perf_counter() - started, 4), result["pruned"], result["warnings"],
            (result.get("decisions") or {}).get("lines", []),
        ))

    def _record(self, build: int) -> dict:
        return self._client.request(
            "record", self._record_params(),
            on_notification=lambda method, params: self._emit(
                BuildPhase(build, params.get("phase", ""), params.get("detail", ""))),
            timeout=self.options.build_timeout,
        )

    def _record_params(self) -> dict:
        options = self.options
        what = {"script": self.target, "args": list(options.script_args)} if self.script else \
            {"target": self.target}
        shape = {} if self.script else {"train": options.train, "dynamic": options.dynamic}
        job = {"world_size": options.world_size, "rank": options.rank,
               **({"job": options.job} if options.job is not None else {})} if options.world_size else {}
        return {
            **what,
            "store": str(self.store),
            "workspace": str(self.workspace),
            "keep": options.keep,
            "options": {"device": options.device, **shape, "execute": options.execute, **job,
                        **({"asm": True} if options.asm else {}),
                        **({"decisions": options.decisions} if options.decisions is not None else {})},
        }

    def _start_worker(self) -> None:
        ended = self._client.exit_description
        info = self._client.start()
        if ended is not None:
            self._emit(WorkerRestarted(f"the engine worker {ended} between builds", info["pid"]))
        else:
            self._emit(WorkerReady(info["pid"], info.get("torch"), info.get("import_seconds", 0.0),
                                   info.get("preload_error")))

    def _report_crash(self, build: int, crash: WorkerCrashed) -> None:
        tail = [line for line in crash.stderr_tail if line.strip()][-3:]
        detail = f" (last output: {' | '.join(tail)})" if tail and not crash.timed_out else ""
        self._emit(BuildFailed(build, "timeout" if crash.timed_out else "crash", f"{crash}{detail}",
                               last_good_run=self.last_good_run,
                               traceback="\n".join(crash.stderr_tail) or None))
        try:
            info = self._client.restart()
        except WorkerCrashed as again:
            self._emit(BuildFailed(build, "worker", f"could not restart the engine worker: {again}",
                                   last_good_run=self.last_good_run))
            return
        self._emit(WorkerRestarted(str(crash), info["pid"]))

    def _watch(self, files: list[str]) -> None:
        wanted = sorted({os.path.realpath(self.target_file), *files})
        if wanted != self.watched_files:
            self.watched_files = self._watcher.watch(wanted)
            self._emit(WatchingFiles(list(self.watched_files)))

    def _emit(self, event: WatchEvent) -> None:
        with self._emit_lock:
            try:
                self._on_event(event)
            except Exception:  # noqa: BLE001 - a front end's bug must not stop the watch
                log.exception("watch event handler failed on %s", event.event)
