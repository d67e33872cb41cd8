"""Options of `compile` and `run` for distributed jobs, and where each rank's run is stored."""
from __future__ import annotations

import argparse
from pathlib import Path

from kernelscope.errors import UserError

RANK_STORE_PREFIX = "rank-"


def add_distributed_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "distributed jobs",
        "Under torchrun every rank records (each into STORE/rank-<R>; then `kernelscope merge`). "
        "Without a GPU or other processes, --world-size records one rank of a job of any size.")
    group.add_argument("--world-size", type=int, metavar="N",
                       help="record this process as one rank of an N-rank job on torch's fake process group "
                            "(no communication: collectives are compiled and recorded, not run)")
    group.add_argument("--rank", type=int, default=0, metavar="R",
                       help="with --world-size: the rank this process plays (default: 0)")
    group.add_argument("--job", metavar="NAME",
                       help="the job name the ranks' runs share (default: torchrun's run id; with "
                            "--world-size, this process)")


def record_options(args: argparse.Namespace) -> dict:
    """The RecordOptions fields these arguments set."""
    if args.world_size is not None and args.world_size < 1:
        raise UserError(f"--world-size {args.world_size}: a job has at least one rank")
    if args.world_size is not None and not 0 <= args.rank < args.world_size:
        raise UserError(f"--rank {args.rank} is not a rank of --world-size {args.world_size} "
                        f"(ranks are 0 to {args.world_size - 1})")
    if args.world_size is None and args.rank != 0:
        raise UserError("--rank needs --world-size (under torchrun the rank comes from torchrun)")
    return {"world_size": args.world_size, "rank": args.rank, "job": args.job}


def store_for_rank(args: argparse.Namespace) -> tuple[int, int] | None:
    """Under a launcher (torchrun), point --store at this rank's own store, STORE/rank-<R>
    (every rank writes locally; `kernelscope merge` brings them together). Returns
    (rank, world size), or None when this process is not one rank of several."""
    from kernelscope.engine import rank_info

    launched = rank_info.under_launcher()
    if launched is None:
        return None
    if args.world_size is not None:
        raise UserError("--world-size fakes a job in one process; under torchrun the job is real: drop --world-size")
    args.store = str(Path(args.store) / f"{RANK_STORE_PREFIX}{launched[0]}")
    return launched


def rank_stores(store: Path) -> list[Path]:
    """The per-rank stores a job left in `store` (STORE/rank-<R>), by rank."""
    found = [path for path in store.glob(f"{RANK_STORE_PREFIX}*")
             if path.is_dir() and path.name[len(RANK_STORE_PREFIX):].isdigit()]
    return sorted(found, key=lambda path: int(path.name[len(RANK_STORE_PREFIX):]))
