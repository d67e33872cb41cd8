"""`kernelscope import PATH...` — TORCH_TRACE logs from elsewhere into runs, one per rank."""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from kernelscope.cli.common import new_parser
from kernelscope.cli.recording_output import render_overview, run_overview
from kernelscope.errors import UserError
from kernelscope.store import StoreBackend


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "import",
        help="import TORCH_TRACE logs (one run per rank) without recompiling",
        description="Read structured-trace logs written with TORCH_TRACE=DIR (the logs tlparse reads: "
        "a directory of per-rank logs or single files) and store each rank's compiles as a run: "
        "graphs, output code, kernels and Inductor's kernel<->node mapping. Runs imported this way "
        "are kernel-level (no links inside kernels). Never imports torch and never executes "
        "anything from a log. Damaged lines are counted and skipped (--strict makes them fatal). "
        "Exit codes: 0 imported, 2 bad arguments or no usable log, 5 store error, "
        "6 damaged log under --strict.",
        examples=[
            "TORCH_TRACE=/tmp/trace torchrun --nproc-per-node 2 train.py",
            "kernelscope import /tmp/trace",
            "kernelscope import /tmp/trace/dedicated_log_torch_trace_rank_0_ab12cd.log --json",
            "kernelscope import logs/ --map-path /mnt/job/repo=$PWD --strict",
        ],
        map_path=False,  # its --map-path rewrites the paths as they are imported
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", help="a TORCH_TRACE directory or log file")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 6, naming FILE:LINE) on the first malformed line or damaged payload")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--workspace", metavar="DIR", default=".",
                        help="make source paths inside DIR relative to it (default: the current directory)")
    parser.add_argument("--map-path", metavar="OLD=NEW", action="append", default=[],
                        help="rewrite source paths starting with OLD (the job's checkout) to NEW (yours); repeatable")
    parser.set_defaults(func=run)


def run(args) -> int:
    from kernelscope.trace_import import ImportOptions, find_logs, import_log
    from kernelscope.trace_import.importer import job_of_logs, parse_path_map

    started = time.perf_counter()
    files = [log for path in args.paths for log in find_logs(Path(path))]
    job, world_size = job_of_logs(files)  # the ranks' runs share a job
    options = ImportOptions(strict=args.strict, workspace=Path(args.workspace),
                            path_map=parse_path_map(args.map_path), job=job, world_size=world_size)
    summaries, skipped = [], []
    with _progress(enabled=not args.json) as on_progress:
        options.on_progress = on_progress
        with StoreBackend(args.store, create=True) as store:
            for path in files:
                imported_log = import_log(path, options)
                skipped += imported_log.skipped
                for imported in imported_log.runs:
                    store_started = time.perf_counter()
                    run_id = store.write_run(imported.run)
                    store_seconds = time.perf_counter() - store_started
                    summaries.append(_summary(run_id, imported, store_seconds))
    result = {"store": str(args.store), "runs": summaries, "skipped": skipped,
              "seconds": round(time.perf_counter() - started, 3)}
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    else:
        print(render(result))
    if not summaries:
        raise UserError("nothing imported: " + "; ".join(skipped))
    return 0


def _summary(run_id: int, imported, store_seconds: float) -> dict:
    run = imported.run
    stats = imported.stats.to_dict()
    return {
        "run": run_id,
        "log": str(imported.log_path),
        "rank": imported.rank,
        "target": run.target,
        "device": run.device,
        "mode": run.mode,
        "torch": run.torch_version,
        **run_overview(run),
        "log_stats": stats,
        "timings": {**run.timings, "store": round(store_seconds, 4)},
        "warnings": run.warnings,
    }


def render(result: dict) -> str:
    out = []
    for summary in result["runs"]:
        rank = "no rank" if summary["rank"] is None else f"rank {summary['rank']}"
        stats = summary["log_stats"]
        out.append(f"imported run {summary['run']} from {summary['target']} ({rank}, {summary['device']}, "
                   f"{summary['mode']}, torch {summary['torch']}) into {result['store']}")
        out += render_overview(summary)
        out.append(f"  log: {stats['lines']} lines, {stats['records']} records, "
                   f"{stats['malformed_lines']} malformed, {stats['bad_payloads']} bad payload(s)")
        phases = " · ".join(f"{k} {v:.2f}s" for k, v in summary["timings"].items())
        out.append(f"  time: {phases}")
        for warning in summary["warnings"]:
            out.append(f"  warning: {warning}")
        out.append(f"  next: kernelscope show {summary['run']}   ·   kernelscope query FILE:LINE")
    out += [f"skipped: {reason}" for reason in result["skipped"]]
    return "\n".join(out)


@contextlib.contextmanager
def _progress(enabled: bool):
    """A rich progress bar per log on a terminal (stderr); nothing otherwise."""
    if not (enabled and sys.stderr.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        tasks = {}

        def on_progress(path: Path, done: int, total: int) -> None:
            if path not in tasks:
                tasks[path] = progress.add_task(f"reading {path.name}", total=total)
            progress.update(tasks[path], completed=done)

        yield on_progress
