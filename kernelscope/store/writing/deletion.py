"""Taking runs out of the store: one run (`delete_run`: its rows in one transaction, the
foreign keys cascade, then its files), and retention (`prune_runs`): how many runs of one
target the store keeps.

Watch mode records a run on every save; without a bound the store would grow
without end. The newest `keep` runs of a target stay; older ones go with their
files. Runs of other targets are never touched.
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.store import paths
from kernelscope.store.database import connection
from kernelscope.store.reading.runs import resolve_run_id

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
        delete_run(conn, root, run_id)
    return sorted(stale)


def delete_run(conn: sqlite3.Connection, root: Path, run_id: int) -> None:
    """Remove a run's rows (one transaction; the foreign keys cascade) and then its files."""
    resolve_run_id(conn, run_id)
    drop_run(conn, root, run_id)


def drop_run(conn: sqlite3.Connection, root: Path, run_id: int) -> None:
    """delete_run without asking first whether the run exists (doctor drops damaged runs)."""
    connection.begin_write(conn)
    try:
        conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    shutil.rmtree(root / paths.run_dir(run_id), ignore_errors=True)
