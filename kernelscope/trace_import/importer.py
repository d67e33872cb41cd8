"""Find TORCH_TRACE logs, read each, and build one run per rank.

torch names a rank's log `dedicated_log_torch_trace_rank_<R>_<random>.log` when
torch.distributed is initialised before its first trace record (else without
`rank_<R>_`), and stamps `"rank": R` into every record after that. Records of a
file without a rank (logged before the process group existed) belong to the
rank the file name or its other records give.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.run_record import RankInfo, RunRecord
from kernelscope.trace_import import collect, log_reader, to_run

LOG_GLOB = "dedicated_log_torch_trace*.log"
_RANK_IN_NAME = re.compile(r"dedicated_log_torch_trace_rank_(\d+)_")


@dataclass
class ImportOptions:
    strict: bool = False
    workspace: Path = field(default_factory=Path.cwd)
    path_map: list[tuple[str, str]] = field(default_factory=list)
    on_progress: Callable[[Path, int, int], None] | None = None  # (file, bytes read, file size)
    # The job the logs' ranks make (see job_of_logs): each rank's run records its place in it.
    job: str = ""
    world_size: int | None = None


def job_of_logs(logs: list[Path]) -> tuple[str, int | None]:
    """(job, world size) of logs imported together: the job is named after the logs'
    common directory; the world size is the highest rank in the log names plus one
    (the ranks whose logs were not given are still counted)."""
    ranks = [rank for rank in map(rank_from_name, logs) if rank is not None]
    common = os.path.commonpath([str(log.resolve().parent) for log in logs]) if logs else ""
    return f"import:{common}", (max(ranks) + 1 if ranks else None)


@dataclass
class ImportedRun:
    run: RunRecord
    log_path: Path
    rank: int | None
    stats: log_reader.ReadStats
    seconds: float


@dataclass
class LogImport:
    """What one log file gave: a run per rank, and ranks that had no complete graph."""

    path: Path
    runs: list[ImportedRun]
    skipped: list[str]
    stats: log_reader.ReadStats


def find_logs(path: Path) -> list[Path]:
    """The log files named by a file or directory argument."""
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.rglob(LOG_GLOB) if p.is_file())
        if not found:
            found = sorted(p for p in path.rglob("*.log") if p.is_file())
        if not found:
            raise UserError(f"{path}: no TORCH_TRACE logs ({LOG_GLOB}) in this directory; "
                            "run the job with TORCH_TRACE=DIR and pass that DIR or one of its files")
        return found
    raise UserError(f"{path}: no such file or directory")


def rank_from_name(path: Path) -> int | None:
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def import_log(path: Path, options: ImportOptions) -> LogImport:
    """Read one log file into one run per rank found in it."""
    started = time.perf_counter()
    stats = log_reader.ReadStats()
    size = path.stat().st_size
    by_rank: dict[int | None, collect.RankLog] = {}
    progress = None
    if options.on_progress is not None:
        progress = lambda done: options.on_progress(path, done, size)  # noqa: E731
    for record in log_reader.read_log(path, collect.wants_payload, stats, options.strict, progress):
        log = by_rank.get(record.rank)
        if log is None:
            log = by_rank[record.rank] = collect.RankLog()
        collect.handle(log, record)
    logs = _assign_unranked(by_rank, rank_from_name(path))
    if not any(log.compiles for log in logs.values()):
        if stats.records == 0:
            reason = f"{path}: no structured-trace records found: is this a TORCH_TRACE log ({LOG_GLOB})?"
        else:
            reason = (f"{path}: {stats.records} records but no Inductor compile: nothing was compiled "
                      "with Inductor while TORCH_TRACE was set")
        return LogImport(path, [], [reason], stats)
    read_seconds = time.perf_counter() - started
    results, skipped = [], []
    for rank, log in sorted(logs.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        if not log.compiles:
            continue
        build_started = time.perf_counter()
        run = to_run.build_run(log, to_run.RunOptions(
            target=_target_name(path, options.workspace),
            workspace=str(options.workspace.resolve()),
            created=path.stat().st_mtime,
            rank=rank,
            log_path=str(path.resolve()),
            path_map=options.path_map,
        ))
        damaged = stats.malformed + stats.bad_payloads
        if not run.graphs:
            who = "the log" if rank is None else f"rank {rank}"
            skipped.append(f"{path}: {who} has no complete Inductor compile (post-grad graph and output "
                           f"code){f'; {damaged} damaged line(s) were skipped' if damaged else ''}: "
                           "nothing imported")
            continue
        if damaged:
            run.warnings.append(
                f"{damaged} damaged line(s) skipped ({stats.malformed} malformed, {stats.bad_payloads} "
                f"payload(s) failing their md5)" + (f"; first at line {stats.problems[0].line}: "
                                                    f"{stats.problems[0].what}" if stats.problems else ""))
        build_seconds = time.perf_counter() - build_started
        run.timings = {"read": round(read_seconds, 4), "build": round(build_seconds, 4)}
        if rank is not None:
            run.rank = RankInfo(rank=rank, world_size=max(options.world_size or 0, rank + 1),
                                job=options.job or f"import:{path.resolve().parent}")
        results.append(ImportedRun(run, path, rank, stats, read_seconds + build_seconds))
    return LogImport(path, results, skipped, stats)


def _assign_unranked(by_rank: dict, name_rank: int | None) -> dict[int | None, collect.RankLog]:
    """Fold records without a rank into the file's rank (see the module docstring)."""
    unranked = by_rank.pop(None, None)
    if unranked is None:
        return by_rank
    home = name_rank if name_rank in by_rank else next(iter(by_rank), None)
    if home is None:
        return {name_rank: unranked}
    _merge_into(by_rank[home], unranked)
    return by_rank


def _merge_into(target: collect.RankLog, early: collect.RankLog) -> None:
    """`early` holds records logged before the rank was known: they come first."""
    for key, value in early.pre_grad.items():
        if value[0] >= target.pre_grad.get(key, (0, ""))[0]:
            target.pre_grad[key] = value
    target.compiles[:0] = early.compiles
    target.graph_breaks[:0] = early.graph_breaks
    target.recompiles[:0] = early.recompiles
    target.failures[:0] = early.failures
    target.aot_backward |= early.aot_backward
    target.torch_version = target.torch_version or early.torch_version
    target.unknown_kinds.update(early.unknown_kinds)
    target.bad_json[:0] = early.bad_json


def _target_name(path: Path, workspace: Path) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def parse_path_map(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        old, separator, new = item.partition("=")
        if not separator or not old or not new:
            raise UserError(f"--map-path expects OLD=NEW (e.g. /mnt/job/repo={os.getcwd()}), got {item!r}")
        pairs.append((old, new))
    return pairs
