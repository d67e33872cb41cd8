"""SQL helpers shared by the store's readers and writers."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_CHUNK = 500  # ids per `IN (...)`, well under SQLite's variable limit


def select_in(conn: sqlite3.Connection, sql: str, ids: Iterable[int], plain: bool = False) -> list:
    """Run `sql` (with one `IN ({})`) over `ids` in chunks; `plain` rows are tuples
    (no sqlite3.Row per row: for the many narrow rows of line counts)."""
    ids = sorted(ids)
    rows: list = []
    cursor = conn.cursor()
    if plain:
        cursor.row_factory = None
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        rows += cursor.execute(sql.format(", ".join("?" * len(chunk))), chunk).fetchall()
    return rows


def rows_if_table(conn: sqlite3.Connection, sql: str, parameters) -> list:
    """The rows of a read of a table a later store version added (`{}` in `sql`: `parameters`
    are ids, read through select_in); none in a read-only store older than the table, which
    cannot gain it."""
    try:
        if "{}" in sql:
            return select_in(conn, sql, parameters)
        return conn.execute(sql, parameters).fetchall()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return []
        raise


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid of the row `cursor`'s INSERT just made (sqlite3 types `lastrowid` as
    `int | None`: None only before any INSERT)."""
    rowid = cursor.lastrowid
    if rowid is None:
        raise sqlite3.InterfaceError("no row was inserted")
    return rowid
