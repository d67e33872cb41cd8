"""Values a store's rows hold that kernelscope never writes: the sign of a crafted or
damaged store (a CI artifact from elsewhere, a database edited by hand).

The store's readers trust the types they wrote. When one of them fails on a value
(`int("abc")`, `json.loads("{")`, a line number past any file), `value_problems` finds
the row that caused it, so the reader can say "the store holds a value kernelscope
never writes" instead of reporting a bug of its own; `kernelscope doctor` lists the
same problems. Nothing here runs on the happy path: a scan per table, on demand.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

# A line or position beyond this is no file's: the store was crafted or damaged.
MAX_LINE = 10**8
# The JSON kernelscope writes into these columns (readers take it apart by that shape).
_JSON_TYPES = {"config_json": "object", "timings_json": "object", "coverage_json": "object",
               "warnings_json": "array", "lineage_json": "array", "hints_json": "array", "stack_json": "array",
               "params_json": "array", "peers_json": "array", "candidates_json": "array"}
_LINE_COLUMNS = ("line", "line_count", "position", "depth", "graph_line", "wrapper_line", "kernel_line",
                 "source_line", "frame_line", "model_line")


@dataclass(frozen=True)
class ValueProblem:
    table: str
    column: str
    rowid: int
    what: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column} (row {self.rowid}): {self.what}"


def value_problems(conn: sqlite3.Connection, limit: int = 5) -> list[ValueProblem]:
    """Up to `limit` rows whose value does not fit its column: a type other than the
    column's, invalid JSON in a `*_json` column (or JSON of another shape than
    kernelscope writes there), a NULL where the schema forbids one, a
    negative line number or one past MAX_LINE."""
    found: list[ValueProblem] = []
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for table in tables:
        for column, declared, not_null in _columns(conn, table):
            condition = _bad_value(column, declared, not_null)
            if condition is None:
                continue
            for rowid, value in conn.execute(
                    f'SELECT rowid, "{column}" FROM "{table}" WHERE {condition} LIMIT ?', (limit - len(found),)):
                found.append(ValueProblem(table, column, rowid, _describe(value)))
            if len(found) >= limit:
                return found
    return found


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str, bool]]:
    return [(row[1], (row[2] or "").upper(), bool(row[3])) for row in conn.execute(f'PRAGMA table_info("{table}")')]


def _bad_value(column: str, declared: str, not_null: bool) -> str | None:
    """An SQL condition true for a value kernelscope never writes into this column."""
    quoted = f'"{column}"'
    checks = [f"{quoted} IS NULL"] if not_null else []
    if declared == "INTEGER":
        checks.append(f"typeof({quoted}) NOT IN ('integer', 'null')")
        if column in _LINE_COLUMNS or column.endswith("_line"):
            checks.append(f"(typeof({quoted}) = 'integer' AND ({quoted} < 0 OR {quoted} > {MAX_LINE}))")
    elif declared == "REAL":
        checks.append(f"typeof({quoted}) NOT IN ('real', 'integer', 'null')")
    elif declared == "TEXT":
        checks.append(f"typeof({quoted}) NOT IN ('text', 'null')")
        if column.endswith("_json"):
            checks.append(f"(typeof({quoted}) = 'text' AND NOT json_valid({quoted}))")
            if column in _JSON_TYPES:
                checks.append(f"(typeof({quoted}) = 'text' AND json_valid({quoted}) "
                              f"AND json_type({quoted}) != '{_JSON_TYPES[column]}')")
    return " OR ".join(checks) if checks else None


def _describe(value) -> str:
    if value is None:
        return "NULL where the schema allows none"
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{shown} ({type(value).__name__}) is not what kernelscope writes there"
