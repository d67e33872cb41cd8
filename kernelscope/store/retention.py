"""Retention: how many runs of one target the store keeps.

Watch mode records a run on every save; without a bound the store would grow
without end. The newest `keep` runs of a target stay; older ones go with their
files. Runs of other targets are never touched.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.store import catalog

DEFAULT_KEEP = 20


def prune_runs(conn: sqlite3.Connection, root: Path, target: str, keep: int = DEFAULT_KEEP) -> list[int]:
    """Delete all but the newest `keep` runs of `target`; returns the deleted run ids, oldest first."""
    if not isinstance(keep, int) or keep < 1:
        raise UserError(f"--keep must be a whole number from 1 (the runs kept per target), got {keep!r}")
    stale = [
        row[0]
        for row in conn.execute(
            "SELECT id FROM runs WHERE target = ? ORDER BY id DESC LIMIT -1 OFFSET ?", (target, keep)
        )
    ]
    for run_id in sorted(stale):
        catalog.delete_run(conn, root, run_id)
    return sorted(stale)
