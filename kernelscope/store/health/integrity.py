"""Checking a store and repairing what can be repaired safely (`kernelscope doctor`).

What is checked: that the database opens and is a kernelscope store of a schema
this version reads; SQLite's own integrity and foreign-key checks; that every
run's rows are whole (its graph and kernel counts) and that every generated file
a run wrote is there with the content it was written with (`files.sha256`); and
what interrupted writes leave behind (`runs/.incoming-*` staging folders, run
folders no row points to).

What a repair does, and nothing else:
- index damage only: REINDEX (the rows are intact, the indexes are rebuilt);
- a run that is not whole (a missing or edited generated file, rows that fail
  the checks): that run is dropped, rows and files; other runs are not touched;
- leftovers of interrupted writes: removed;
- a database that does not open (not SQLite, damaged pages): set aside with the
  run folders into `damaged-<time>/` (nothing is deleted), so that the next
  compile starts a new store.
A foreign SQLite file and a store of a newer or older schema are reported only.
Repairs run under the store's write lock, so a compile writing meanwhile waits.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelscope.store import paths
from kernelscope.store.database import connection, tables, values
from kernelscope.store.writing.deletion import drop_run

INDEX_ONLY_MARKERS = ("missing from index", "wrong # of entries in index", "non-unique entry in index")


@dataclass
class Problem:
    kind: str  # unreadable, foreign, schema, integrity, index, foreign_keys, incomplete_run, missing_file,
    #           edited_file, leftover
    message: str
    run_id: int | None = None
    path: str | None = None  # relative to the store root
    repair: str | None = None  # what --repair does about it; None: nothing it can do safely


@dataclass
class Report:
    root: str
    runs: int = 0
    files_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def damaged_runs(self) -> list[int]:
        return sorted({p.run_id for p in self.problems if p.run_id is not None and p.repair})

    def to_dict(self) -> dict:
        return {**asdict(self), "healthy": self.healthy}


def check(root: Path) -> Report:
    """Every check; never writes."""
    root = Path(root).absolute()
    report = Report(root=str(root))
    db_path = root / connection.DB_FILE_NAME
    if not db_path.is_file():
        report.problems.append(Problem("unreadable", f"no store database at {db_path}"))
        return report
    try:
        conn = _open_readonly(db_path)
    except sqlite3.DatabaseError as error:
        report.problems.append(_unreadable(db_path, error))
        return report
    try:
        _check_database(conn, root, report)
    except sqlite3.DatabaseError as error:
        report.problems.append(_unreadable(db_path, error))
    finally:
        conn.close()
    return report


def repair(root: Path) -> Report:
    """Check, repair what can be repaired safely (module docstring), and check again;
    the returned report lists what was done and what is left."""
    root = Path(root).absolute()
    first = check(root)
    done: list[str] = []
    if any(p.kind == "unreadable" and p.repair for p in first.problems):
        done.append(_set_aside(root))
    elif any(p.repair for p in first.problems):
        if not connection.writable_store(root):
            after = check(root)
            after.problems.append(Problem("read_only", f"the store {root} is read-only here: nothing was repaired"))
            return after
        conn = sqlite3.connect(root / connection.DB_FILE_NAME, isolation_level=None,
                               timeout=connection.BUSY_TIMEOUT_SECONDS)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if any(p.kind == "index" for p in first.problems):
                conn.execute("REINDEX")
                done.append("rebuilt the database's indexes (REINDEX)")
            for run_id in first.damaged_runs():
                why = next(p.message for p in first.problems if p.run_id == run_id and p.repair)
                drop_run(conn, root, run_id)
                done.append(f"dropped run {run_id} ({why})")
            done += _remove_leftovers(conn, root)
        finally:
            conn.close()
    after = check(root)
    after.repaired = done
    return after


# -- checks ----------------------------------------------------------------------------------


def _check_database(conn: sqlite3.Connection, root: Path, report: Report) -> None:
    existing = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not existing:
        report.problems.append(Problem("foreign", "the database is empty (no kernelscope tables): "
                                       "move it away, or compile into this store to start it"))
        return
    version = None
    if "meta" in existing:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_schema_version'").fetchone()
        version = row[0] if row else None
    if version is None or "runs" not in existing:
        report.problems.append(Problem("foreign", "an SQLite database, but not a kernelscope store: it was left "
                                       "as it is (move it away, or pass --store DIR)"))
        return
    if version != str(tables.STORE_SCHEMA_VERSION):
        newer = version.isdigit() and int(version) > tables.STORE_SCHEMA_VERSION
        report.problems.append(Problem("schema", f"store schema version {version}; this kernelscope reads "
                                       f"{tables.STORE_SCHEMA_VERSION}: " + ("upgrade kernelscope" if newer else
                                       "re-record into a new store (old runs lack what this version reads)")))
        return
    messages = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if messages != ["ok"]:
        index_only = all(any(marker in message for marker in INDEX_ONLY_MARKERS) for message in messages)
        shown = "; ".join(messages[:3]) + (f" (+{len(messages) - 3} more)" if len(messages) > 3 else "")
        if index_only:
            report.problems.append(Problem("index", f"damaged indexes: {shown}", repair="rebuild the indexes"))
        else:
            report.problems.append(Problem("unreadable", f"damaged database pages: {shown}",
                                           repair=f"set the database aside into {root}/damaged-<time>/"))
            return
    run_ids = [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]
    report.runs = len(run_ids)
    for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check"):
        run_id = _run_of_row(conn, table, rowid)
        report.problems.append(Problem("foreign_keys", f"a row of {table} points at a missing {parent} row",
                                       run_id, repair=f"drop run {run_id}" if run_id is not None else None))
    for problem in values.value_problems(conn, limit=20):
        run_id = _run_of_row(conn, problem.table, problem.rowid)
        report.problems.append(Problem("bad_value", f"{problem}: a crafted or damaged store", run_id,
                                       repair=f"drop run {run_id}" if run_id is not None else None))
    for run_id in run_ids:
        _check_run(conn, root, run_id, report)
    _check_leftovers(root, set(run_ids), report)


def _check_run(conn: sqlite3.Connection, root: Path, run_id: int, report: Report) -> None:
    run = conn.execute("SELECT graph_count, kernel_count FROM runs WHERE id = ?", (run_id,)).fetchone()
    graphs = conn.execute("SELECT COUNT(*) FROM graphs WHERE run_id = ?", (run_id,)).fetchone()[0]
    kernels = conn.execute("SELECT COUNT(*) FROM kernels WHERE run_id = ?", (run_id,)).fetchone()[0]
    if (graphs, kernels) != (run[0], run[1]):
        report.problems.append(Problem(
            "incomplete_run", f"run {run_id} has {graphs} graph(s) and {kernels} kernel(s) of the "
            f"{run[0]} and {run[1]} it recorded", run_id, repair=f"drop run {run_id}"))
    for path, sha256 in conn.execute(
            "SELECT path, sha256 FROM files WHERE run_id = ? AND (sha256 IS NOT NULL OR kind != 'source') "
            "ORDER BY path", (run_id,)):
        report.files_checked += 1
        problem = file_problem(root, path, sha256)
        if problem is not None:
            kind, message = problem
            report.problems.append(Problem(kind, message, run_id, path, repair=f"drop run {run_id}"))
    # below-the-kernel builds are rebuilt on demand: only where their paths lead is checked
    for (path,) in conn.execute("SELECT path FROM asm_files WHERE run_id = ? ORDER BY path", (run_id,)):
        outside = paths.why_outside(root, path)
        if outside is not None:
            report.problems.append(Problem("outside_store", f"{path!r} leaves the store: the path {outside} "
                                           "(a crafted or damaged store; it is not read)", run_id, path,
                                           repair=f"drop run {run_id}"))


def file_problem(root: Path, path: str, sha256: str | None) -> tuple[str, str] | None:
    """('outside_store' | 'missing_file' | 'edited_file', message) when a generated file is
    not as written; a path that leads out of the store is named and never read."""
    outside = paths.why_outside(root, path)
    if outside is not None:
        return "outside_store", (f"{path!r} leaves the store: the path {outside} (a crafted or damaged store; "
                                 "it is not read)")
    try:
        data = (root / path).read_bytes()
    except FileNotFoundError:
        return "missing_file", f"{path} is missing (deleted after the run was recorded)"
    except OSError as error:
        return "missing_file", f"{path} cannot be read ({error.strerror})"
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        return "edited_file", f"{path} was changed after the run was recorded (its content is not what was written)"
    return None


def _check_leftovers(root: Path, run_ids: set[int], report: Report) -> None:
    runs_dir = root / paths.RUNS_DIR
    if not runs_dir.is_dir():
        return
    for entry in sorted(runs_dir.iterdir()):
        if entry.name.startswith(".incoming-"):
            report.problems.append(Problem("leftover", f"{paths.RUNS_DIR}/{entry.name}: the staging folder of an "
                                           "interrupted write", path=f"{paths.RUNS_DIR}/{entry.name}",
                                           repair="remove it"))
        elif entry.name.isdigit() and int(entry.name) not in run_ids:
            report.problems.append(Problem("leftover", f"{paths.RUNS_DIR}/{entry.name}: files of a run that is not "
                                           "in the database (an interrupted write or delete)",
                                           path=f"{paths.RUNS_DIR}/{entry.name}", repair="remove it"))


def _run_of_row(conn: sqlite3.Connection, table: str, rowid: int) -> int | None:
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if "run_id" not in columns:
        return None
    row = conn.execute(f"SELECT run_id FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    return row[0] if row else None


def _open_readonly(db_path: Path) -> sqlite3.Connection:
    if connection.writable_store(db_path.parent):
        # A normal connection: it sees the WAL and waits for a writer's lock like any reader.
        conn = sqlite3.connect(db_path, isolation_level=None, timeout=connection.BUSY_TIMEOUT_SECONDS)
        conn.execute("PRAGMA query_only = ON")
        return conn
    uri = f"{db_path.absolute().as_uri()}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None)


def _unreadable(db_path: Path, error: sqlite3.DatabaseError) -> Problem:
    return Problem("unreadable", f"{db_path.name} does not open as an SQLite database ({error})",
                   repair=f"set it aside into {db_path.parent}/damaged-<time>/ (nothing is deleted)")


# -- repairs ---------------------------------------------------------------------------------


def _remove_leftovers(conn: sqlite3.Connection, root: Path) -> list[str]:
    """Under the write lock: no writer is between staging and commit, so every staging
    folder and every run folder without a row is a leftover."""
    done = []
    connection.begin_write(conn)
    try:
        run_ids = {row[0] for row in conn.execute("SELECT id FROM runs")}
        runs_dir = root / paths.RUNS_DIR
        for entry in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
            if entry.name.startswith(".incoming-") or (entry.name.isdigit() and int(entry.name) not in run_ids):
                shutil.rmtree(entry, ignore_errors=True)
                done.append(f"removed {paths.RUNS_DIR}/{entry.name}")
    finally:
        conn.execute("ROLLBACK")
    return done


def _set_aside(root: Path) -> str:
    aside = root / f"damaged-{time.strftime('%Y%m%d-%H%M%S')}"
    aside.mkdir()
    database = connection.DB_FILE_NAME
    for name in (database, database + "-wal", database + "-shm", paths.RUNS_DIR):
        if (root / name).exists():
            os.replace(root / name, aside / name)
    connection.connect(root, create=True).close()
    return f"set the database and its run folders aside into {aside.name}/ and started a new, empty store"
