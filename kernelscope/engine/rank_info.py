"""Which rank of which torch.distributed job this process is.

Read from torch.distributed when a process group is initialized (a program under
`torchrun`, or torch's fake process group), else from the variables torchrun sets
(RANK, WORLD_SIZE, LOCAL_RANK). The job is what groups the ranks' runs:
- torchrun's run id (TORCHELASTIC_RUN_ID: a fresh uuid for every single-node torchrun,
  `--rdzv-id` for multi-node jobs), the same in every rank;
- else, under a launcher that sets RANK without a run id, the host and parent process
  (the ranks of one launch on one host);
- else (a fake process group in this one process) this host and process.
`kernelscope run --job NAME` names it instead.
"""
from __future__ import annotations

import os
import socket

from kernelscope.run_record import RankInfo


def current(job: str | None = None) -> RankInfo | None:
    """This process's rank, or None outside a distributed job (no process group, no RANK)."""
    rank = world_size = None
    backend = ""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            rank, world_size = dist.get_rank(), dist.get_world_size()
            backend = str(dist.get_backend())
    except (ImportError, RuntimeError, ValueError):
        pass
    if rank is None and os.environ.get("RANK", "").isdigit() and os.environ.get("WORLD_SIZE", "").isdigit():
        rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank is None:
        return None
    local = os.environ.get("LOCAL_RANK", "")
    return RankInfo(rank=rank, world_size=world_size, job=job or job_id(), backend=backend,
                    local_rank=int(local) if local.isdigit() else None)


def job_id() -> str:
    """See the module docstring."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "")
    if run_id and run_id != "none":
        return f"torchrun:{run_id}"
    host = socket.gethostname()
    if "RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        return f"launch:{host}:{os.getppid()}"
    return f"process:{host}:{os.getpid()}"


def under_launcher() -> tuple[int, int] | None:
    """(rank, world size) when a launcher (torchrun) started this process as one rank of
    several, from its environment; None otherwise. Read before the program runs."""
    rank, world_size = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
    if rank.isdigit() and world_size.isdigit() and int(world_size) > 1:
        return int(rank), int(world_size)
    return None
