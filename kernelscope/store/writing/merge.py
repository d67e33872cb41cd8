"""Bring the runs of another store into this one (`kernelscope merge`).

Each rank of a distributed job records into a store of its own (no SQLite shared
over a network filesystem); merging copies those runs into one store, where they
are runs like any other, each with its rank. Per run, in one transaction: every row
that belongs to it, found through the schema's own foreign keys (so tables added
later, such as attached profiles, come along), with ids renumbered for this store,
`runs/<old>/...` paths rewritten to `runs/<new>/...`, and its generated files copied
(staged, then renamed into place before the commit, as a recording is written).
A run already merged (same creation time, target, rank and job) is skipped, so
merging again after more ranks finished is safe; the source stores are not changed.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import StoreError, UserError
from kernelscope.store import paths
from kernelscope.store.database import connection
from kernelscope.store.database.sql import inserted_id
from kernelscope.store.writing import writer


@dataclass
class MergeResult:
    source: Path
    merged: list[tuple[int, int]] = field(default_factory=list)  # (run id there, run id here)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (run id there, why)


@dataclass
class _Table:
    name: str
    columns: list[str]
    integer_id: bool  # an `id INTEGER PRIMARY KEY` renumbered on insert
    references: dict[str, str]  # column -> the table its foreign key names
    required: set[str]  # NOT NULL columns


def merge_store(conn: sqlite3.Connection, root: Path, source_root: Path) -> MergeResult:
    """Copy every run of the store at `source_root` into the store `conn`/`root`."""
    source_root = source_root.absolute()
    if not (source_root / connection.DB_FILE_NAME).exists():
        raise UserError(f"{source_root}: no kernelscope store there (no {connection.DB_FILE_NAME}): "
                        "pass a store directory a rank recorded into, e.g. .kernelscope/rank-1")
    if os.path.realpath(source_root) == os.path.realpath(root):
        raise UserError(f"{source_root} is the store being merged into: name the per-rank stores to merge")
    source = connection.connect(source_root, create=False)  # refuses another schema version with advice
    try:
        tables = _tables(source)
        _create_missing_tables(source, conn, tables)
        result = MergeResult(source_root)
        for run_id, created, target in source.execute("SELECT id, created, target FROM runs ORDER BY id").fetchall():
            rank = source.execute("SELECT rank, job FROM run_ranks WHERE run_id = ?", (run_id,)).fetchone()
            existing = _already_merged(conn, created, target, rank)
            if existing is not None:
                result.skipped.append((run_id, f"already here as run {existing}"))
                continue
            result.merged.append((run_id, _copy_run(source, conn, root, source_root, run_id, tables)))
        return result
    finally:
        source.close()


def _tables(conn: sqlite3.Connection) -> list[_Table]:
    """The store's tables, each after the tables its foreign keys name."""
    found: dict[str, _Table] = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                "AND name NOT LIKE 'sqlite_%' AND name != 'meta' ORDER BY name"):
        info = conn.execute(f"PRAGMA table_info({name})").fetchall()
        columns = [row[1] for row in info]
        primary = [row[1] for row in info if row[5]]
        integer_id = primary == ["id"] and any(row[1] == "id" and row[2].upper() == "INTEGER" for row in info)
        references = {row[3]: row[2] for row in conn.execute(f"PRAGMA foreign_key_list({name})")}
        found[name] = _Table(name, columns, integer_id, references, {row[1] for row in info if row[3]})
    ordered: list[_Table] = []
    placed: set[str] = set()
    while len(ordered) < len(found):
        ready = [table for table in found.values() if table.name not in placed
                 and all(ref in placed or ref == table.name or ref not in found for ref in table.references.values())]
        if not ready:
            raise StoreError("the store's tables reference each other in a cycle: cannot merge")
        for table in ready:
            ordered.append(table)
            placed.add(table.name)
    return ordered


def _create_missing_tables(source: sqlite3.Connection, conn: sqlite3.Connection, tables: list[_Table]) -> None:
    """Tables a store creates on first use (profiles) that this store does not have yet."""
    have = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in tables:
        if table.name in have:
            continue
        for (sql,) in source.execute("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL "
                                     "ORDER BY type = 'index'", (table.name,)):
            conn.execute(sql)


def _already_merged(conn: sqlite3.Connection, created: float, target: str, rank) -> int | None:
    for (run_id,) in conn.execute("SELECT id FROM runs WHERE created = ? AND target = ?", (created, target)):
        here = conn.execute("SELECT rank, job FROM run_ranks WHERE run_id = ?", (run_id,)).fetchone()
        if (tuple(here) if here else None) == (tuple(rank) if rank else None):
            return run_id
    return None


def _copy_run(source: sqlite3.Connection, conn: sqlite3.Connection, root: Path, source_root: Path,
              run_id: int, tables: list[_Table]) -> int:
    files_from = source_root / paths.run_dir(run_id)
    if not files_from.is_dir():
        raise StoreError(f"{files_from}: run {run_id}'s generated files are missing: that store is damaged "
                         "(its other runs can still be merged one store at a time)")
    _refuse_paths_leaving(source, source_root, run_id, files_from)

    def fill(staging: Path) -> int:
        ids: dict[str, dict[int, int]] = {}
        for table in tables:
            _copy_rows(source, conn, table, run_id, ids, source_root)
        shutil.copytree(files_from, staging, dirs_exist_ok=True)
        return ids["runs"][run_id]

    return writer.write_staged(conn, root, fill)


def _refuse_paths_leaving(source: sqlite3.Connection, source_root: Path, run_id: int, files_from: Path) -> None:
    """A run whose generated-file rows or files lead out of its store (a crafted or damaged
    store: `..`, an absolute path, a symlink out) is not merged, and nothing outside is read."""
    stored = [row[0] for row in source.execute(
        "SELECT path FROM files WHERE run_id = ? AND kind != 'source' UNION ALL "
        "SELECT path FROM asm_files WHERE run_id = ?", (run_id, run_id))]
    for directory, subdirectories, names in os.walk(files_from):
        for name in [*subdirectories, *names]:
            entry = Path(directory) / name
            if entry.is_symlink():
                stored.append(entry.relative_to(source_root).as_posix())
    for path in stored:
        why = paths.why_outside(source_root, path)
        if why is not None:
            raise StoreError(f"{source_root}: run {run_id} names a generated file {path!r} that {why}: "
                             "not merged (a crafted or damaged store; `kernelscope doctor --store "
                             f"{source_root}` lists such rows)")


def _copy_rows(source: sqlite3.Connection, conn: sqlite3.Connection, table: _Table, run_id: int,
               ids: dict[str, dict[int, int]], source_root: Path) -> None:
    """Copy `table`'s rows of run `run_id`, renumbering ids and the references to them."""
    if table.name == "runs":
        rows = source.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchall()
    elif "run_id" in table.columns:
        rows = source.execute(f"SELECT * FROM {table.name} WHERE run_id = ?", (run_id,)).fetchall()
    else:  # reached through a parent (node_links through nodes, kernel_nodes through kernels, ...)
        reference = next(((column, parent) for column, parent in table.references.items()
                          if parent in ids and column in table.required), None)
        if reference is None:
            return
        column, parent = reference
        rows = []
        parent_ids = sorted(ids[parent])
        for start in range(0, len(parent_ids), 500):
            chunk = parent_ids[start:start + 500]
            rows += source.execute(f"SELECT * FROM {table.name} WHERE {column} IN ({', '.join('?' * len(chunk))})",
                                   chunk).fetchall()
    mapping = ids.setdefault(table.name, {})
    old_prefix = f"{paths.run_dir(run_id)}/"
    columns = [column for column in table.columns if not (table.integer_id and column == "id")]
    insert = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    new_run = ids.get("runs", {}).get(run_id)
    generated: dict[str, bool] = {}  # a `runs/<old>/...` value that names one of the run's files

    def is_generated(value: str) -> bool:
        if value not in generated:
            generated[value] = paths.why_outside(source_root, value) is None and (source_root / value).is_file()
        return generated[value]

    for row in rows:
        values = []
        for column in columns:
            value = row[table.columns.index(column)]
            referenced = table.references.get(column)
            if table.name != "runs" and column == "run_id":
                value = new_run
            elif referenced is not None and value is not None:
                value = ids.get(referenced, {}).get(value)
            elif isinstance(value, str) and value.startswith(old_prefix) and new_run is not None \
                    and is_generated(value):
                value = f"{paths.run_dir(new_run)}/" + value[len(old_prefix):]
            values.append(value)
        cursor = conn.execute(insert, values)
        if table.integer_id:
            mapping[row[table.columns.index("id")]] = inserted_id(cursor)
        if table.name == "runs":
            new_run = mapping[run_id]
