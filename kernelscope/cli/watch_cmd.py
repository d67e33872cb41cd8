"""`kernelscope watch PATH.py:FACTORY` or `kernelscope watch SCRIPT.py -- ARGS` — record a run,
then a new one on every save."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from kernelscope.cli import distributed_args
from kernelscope.cli.common import add_store_argument
from kernelscope.cli.recording_output import add_target_arguments
from kernelscope.errors import CLI_TRACEBACK_HINT, UserError, traceback_wanted
from kernelscope.store.writing.deletion import DEFAULT_KEEP
from kernelscope.watch.debounce import DEFAULT_QUIET_SECONDS
from kernelscope.watch.events import (
    BuildFailed,
    BuildFinished,
    BuildStarted,
    WatchEvent,
    WatchingFiles,
    WatchStopped,
    WorkerOutput,
    WorkerReady,
    WorkerRestarted,
)

PHASE_ORDER = ("import", "capture", "lower", "codegen", "store")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="record a model factory or a script, then record again on every save",
        description="Record PATH.py:FACTORY like `kernelscope compile`, or SCRIPT.py (with the ARGS "
        "after `--`) like `kernelscope run`, then watch the files the target imported from the "
        "workspace and record a new run after every save, in an engine worker that keeps torch "
        "imported. A save that breaks the model or the script (an exception, sys.exit with a "
        "non-zero status) is reported at its file and line; the last good run stays the latest. "
        "Ctrl-C stops.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  kernelscope watch examples/mlp.py:make\n"
        "  kernelscope watch examples/mlp.py:make --train --keep 5\n"
        "  kernelscope watch examples/train_script.py -- --steps 2   # a whole script, as `kernelscope run`\n"
        "  kernelscope watch model.py:make --decisions latest   # replay the store's latest GPU run's decisions\n"
        "  kernelscope watch model.py:make --json | jq -c 'select(.event == \"build_finished\")'",
    )
    parser.add_argument("target", metavar="PATH.py:FACTORY | SCRIPT.py")
    add_store_argument(parser)
    add_target_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print each event as one JSON object per line (for tools)")
    parser.add_argument("--train", action="store_true",
                        help="a factory: compile forward and backward of a scalar loss (sum of the outputs)")
    parser.add_argument("--dynamic", action="store_true", help="a factory: mark the batch dimension dynamic")
    parser.add_argument("--keep", type=_positive_int, default=DEFAULT_KEEP, metavar="N",
                        help=f"runs of this target kept in the store; older ones are deleted (default: {DEFAULT_KEEP})")
    parser.add_argument("--quiet-period", type=float, default=DEFAULT_QUIET_SECONDS, metavar="SECONDS",
                        help="wait until files have been quiet this long before building "
                             f"(default: {DEFAULT_QUIET_SECONDS})")
    parser.add_argument("--build-timeout", type=float, default=600.0, metavar="SECONDS",
                        help="stop a build that runs longer and restart the worker (default: 600)")
    parser.add_argument("--memory-limit", type=_positive_int, metavar="MB",
                        help="cap the engine worker's memory (address space, RLIMIT_AS): a model that "
                             "allocates past it fails with MemoryError, the watch goes on (default: no cap)")
    distributed_args.add_distributed_arguments(parser)
    parser.set_defaults(func=run)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text!r}")
    return int(text)


def run(args) -> int:
    from kernelscope.watch.session import WatchOptions, WatchSession  # needs watchdog

    if args.quiet_period < 0:
        raise UserError(f"--quiet-period cannot be negative, got {args.quiet_period}")
    if args.build_timeout <= 0:
        raise UserError(f"--build-timeout must be a positive number of seconds, got {args.build_timeout}")
    options = WatchOptions(
        target=args.target, store=Path(args.store), workspace=Path.cwd(), device=args.target_device,
        train=args.train, dynamic=args.dynamic, execute=args.execute, keep=args.keep,
        quiet_seconds=args.quiet_period, build_timeout=args.build_timeout, memory_limit_mb=args.memory_limit,
        decisions=args.decisions, script_args=list(args.passthrough),  # what followed `--`
        **distributed_args.record_options(args),
    )
    session = WatchSession(options, JsonPrinter() if args.json else LinePrinter())
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    session.start()
    try:
        while not session.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        session.stop()
        signal.signal(signal.SIGTERM, previous_sigterm)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # `kill PID` stops the watch as cleanly as Ctrl-C


class JsonPrinter:
    """One JSON object per event on stdout; the worker's own output goes to stderr."""

    def __call__(self, event: WatchEvent) -> None:
        if isinstance(event, WorkerOutput):
            print(event.line, file=sys.stderr, flush=True)
            return
        data = event.to_dict()
        if "traceback" in data and not traceback_wanted():
            data["traceback"] = None  # --traceback (or KERNELSCOPE_TRACEBACK=1) includes it
        sys.stdout.write(json.dumps({"time": round(time.time(), 3), **data}) + "\n")
        sys.stdout.flush()


class LinePrinter:
    """One line per event, for a person at a terminal."""

    def __call__(self, event: WatchEvent) -> None:
        if isinstance(event, WorkerOutput):
            print(event.line, file=sys.stderr, flush=True)
            return
        line = self.render(event)
        if isinstance(event, BuildFailed) and event.traceback and traceback_wanted():
            print(event.traceback.rstrip("\n"), file=sys.stderr, flush=True)
        if line:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    def render(self, event: WatchEvent) -> str | None:
        if isinstance(event, WorkerReady):
            problem = f" — {event.problem}" if event.problem else ""
            return (f"engine worker ready (pid {event.pid}, torch {event.torch or 'not imported'}, "
                    f"import {event.import_seconds:.1f}s){problem}")
        if isinstance(event, WatchingFiles):
            shown = ", ".join(_display(path) for path in event.files)
            return f"watching {len(event.files)} file(s): {shown} · Ctrl-C to stop"
        if isinstance(event, BuildStarted):
            reason = ", ".join(_display(path) for path in event.changed) if event.changed else "first build"
            return f"build {event.build} started ({reason})"
        if isinstance(event, BuildFinished):
            phases = " · ".join(f"{phase} {event.timings.get(phase, 0.0):.2f}s" for phase in PHASE_ORDER)
            pruned = f" · pruned {len(event.pruned)} old run(s)" if event.pruned else ""
            decisions = "".join(f"\n    {line}" for line in event.decisions)
            return (f"build {event.build}: run {event.run_id} of {event.target} · {event.graphs} graph(s), "
                    f"{event.kernels} Triton kernel(s) · {phases} · total {event.timings.get('total', 0.0):.2f}s"
                    f"{pruned}{decisions}")
        if isinstance(event, BuildFailed):
            where = _display(event.file) if event.file else ""
            if where and event.line:
                where += f":{event.line}"
            kept = (f"run {event.last_good_run} stays the latest" if event.last_good_run is not None
                    else "no run recorded yet")
            how = "" if traceback_wanted() or not event.traceback else f"; {CLI_TRACEBACK_HINT}"
            return f"build {event.build} failed: {where + ': ' if where else ''}{event.message} ({kept}{how})"
        if isinstance(event, WorkerRestarted):
            return f"engine worker restarted (pid {event.pid}) after: {event.reason}"
        if isinstance(event, WatchStopped):
            last = f"; latest run {event.last_good_run}" if event.last_good_run is not None else ""
            return f"stopped after {event.builds} build(s){last}"
        return None  # build phases: shown with --json only


def _display(path: str) -> str:
    """A path relative to the current directory when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative
