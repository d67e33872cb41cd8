"""Which run has a file, and what the file is there (`locate`); whether any run has it
(`has_file`) and the hash it was written with (`file_sha256`); a located file's lines.

A user-given path becomes a stored key first (paths.lookup_key); `locate` finds the
latest run that has that key (`files`, through its index), or the run asked for, and
says what kind of file it is (source, pre-grad or post-grad graph, wrapper, kernel,
PTX/SASS stage file). Generated files are only ever opened inside the store
(paths.generated_path).
"""
from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

from kernelscope.errors import StoreError, UserError
from kernelscope.store import paths
from kernelscope.store.parts.subgraphs import graph_label
from kernelscope.store.results import (
    ASM,
    SOURCE,
    GraphRef,
    Location,
)


def locate(conn: sqlite3.Connection, root: Path, key: str, run_id: int | None = None) -> Location:
    """Which run has the file `key` (the latest, unless `run_id` is given) and what it is there."""
    sql = """SELECT f.path, f.kind, f.run_id, f.graph_id, f.line_count, k.name AS kernel_name,
                    r.workspace
             FROM files f JOIN runs r ON r.id = f.run_id
             LEFT JOIN kernels k ON k.id = f.kernel_id
             WHERE f.path = ?"""
    row = _latest_file_row(conn, sql, key, run_id)
    if row is None:
        stage_file = _locate_stage_file(conn, root, key, run_id)
        if stage_file is not None:
            return stage_file
        raise _not_found(conn, key, run_id)
    if row["kind"] == SOURCE:
        absolute = key if Path(key).is_absolute() else str(Path(row["workspace"]) / key)
    else:
        absolute = str(paths.generated_path(root, key))
    return Location(
        path=key,
        kind=row["kind"],
        run_id=row["run_id"],
        absolute_path=absolute,
        graph=None if row["graph_id"] is None else graph_ref(conn, row["graph_id"]),
        kernel=row["kernel_name"],
        line_count=row["line_count"],
    )


def _latest_file_row(conn: sqlite3.Connection, sql: str, key: str, run_id: int | None):
    """The row of `sql` (a query of files `f` by `f.path = ?`) for `key` in run `run_id`, or
    in the latest run that has it."""
    params: tuple = (key,)
    if run_id is not None:
        sql += " AND f.run_id = ?"
        params += (run_id,)
    return conn.execute(sql + " ORDER BY f.run_id DESC LIMIT 1", params).fetchone()


def _locate_stage_file(conn: sqlite3.Connection, root: Path, key: str, run_id: int | None) -> Location | None:
    """A kernel's stage file (`runs/3/asm/<graph>/<kernel>/<kernel>.sass`), built below Triton."""
    sql = """SELECT f.run_id, f.line_count, k.name, k.graph_id FROM asm_files f JOIN kernels k ON k.id = f.kernel_id
             WHERE f.path = ?"""
    row = _latest_file_row(conn, sql, key, run_id)
    if row is None:
        return None
    return Location(path=key, kind=ASM, run_id=row["run_id"], absolute_path=str(paths.generated_path(root, key)),
                    graph=graph_ref(conn, row["graph_id"]), kernel=row["name"], line_count=row["line_count"])


def has_file(conn: sqlite3.Connection, path: str) -> bool:
    """Whether any run knows the file stored under `path`."""
    return conn.execute("SELECT 1 FROM files WHERE path = ? LIMIT 1", (path,)).fetchone() is not None


def file_sha256(conn: sqlite3.Connection, run_id: int, path: str) -> str | None:
    """The sha256 run `run_id` recorded for its generated file `path`."""
    row = conn.execute("SELECT sha256 FROM files WHERE path = ? AND run_id = ?", (path, run_id)).fetchone()
    return row[0] if row else None


def file_lines(location: Location) -> list[str] | None:
    """The located file's lines, or None when it is not on this machine."""
    try:
        with open(location.absolute_path, encoding="utf-8", errors="replace") as file:
            return file.read().splitlines()
    except OSError:
        return None


def one_line(location: Location, line: int) -> str:
    """Line `line` of the located file ("" when it is not on this machine)."""
    try:
        with open(location.absolute_path, encoding="utf-8", errors="replace") as file:
            return next(itertools.islice(file, line - 1, None), "").rstrip("\r\n")
    except OSError:
        return ""


def check_line(location: Location, line: int, lines: list[str] | None) -> None:
    count = location.line_count if location.line_count is not None else (None if lines is None else len(lines))
    if line < 1 or (count is not None and line > count):
        valid = f"1-{count}" if count is not None else "from 1"
        raise UserError(f"line {line} is out of range for {location.path}: give a line {valid}")


def graph_ref(conn: sqlite3.Connection, graph_id: int) -> GraphRef:
    row = conn.execute("SELECT id, key, compile_id, kind FROM graphs WHERE id = ?", (graph_id,)).fetchone()
    return GraphRef(id=row["id"], key=row["key"], compile_id=row["compile_id"], kind=row["kind"],
                    label=graph_label(conn, graph_id))



def _not_found(conn: sqlite3.Connection, key: str, run_id: int | None) -> StoreError:
    if run_id is not None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return StoreError(f"there is no run {run_id} in this store — `kernelscope runs` lists the runs")
        others = [row[0] for row in conn.execute(
            "SELECT run_id FROM files WHERE path = ? ORDER BY run_id DESC LIMIT 5", (key,))]
        hint = f"runs that have it: {', '.join(map(str, others))}" if others else "no run has it"
        return StoreError(f"run {run_id} has no record of {key} ({hint})")
    if key.startswith("runs/"):
        return StoreError(f"no run in this store generated {key} (was the run deleted?) — "
                          "`kernelscope runs` lists the runs")
    compiled = conn.execute(
        "SELECT id, target FROM runs WHERE target = ? OR target LIKE ? ESCAPE '\\' ORDER BY id DESC LIMIT 1",
        (key, _escape_like(key) + ":%"),
    ).fetchone()
    if compiled is not None:
        return StoreError(f"run {compiled['id']} compiled {compiled['target']} but recorded no FX node "
                          f"from {key}: no line of it reached a compiled graph")
    return StoreError(f"no run has recorded {key} — run `kernelscope compile {key}:FACTORY` (or "
                      f"`kernelscope run SCRIPT.py`) for a model that uses it first")


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
