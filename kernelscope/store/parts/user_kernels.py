"""A program's own Triton kernels as the store answers them: each generated copy's lines
linked to the lines of the user's kernel source (both ways), and the autotune configs with
the one the run launched and how it was chosen.

Reads database/tables.py's USER_KERNEL_TABLES, which the writer fills from each Kernel's
`user` (engine/user_kernels.py); looked up by kernel (primary keys) or by the user's source
line (user_kernel_lines_by_source). A store older than schema 6, opened read-only, has no
such tables: its runs read as having no user kernel lines (`_rows`).
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from kernelscope.run_record import Kernel
from kernelscope.store.database.sql import rows_if_table as _rows
from kernelscope.store.results import (
    KERNEL,
    SOURCE,
    GraphRef,
    Location,
    UserKernelCopy,
    UserKernelLineRef,
    UserKernelRef,
)

# user_kernel_lines rows with the copy's text (from generated_lines, through lines_by_file_line)
_LINE_ROWS = """SELECT l.*, (SELECT g.text FROM generated_lines g JOIN kernels k ON k.id = l.kernel_id
                             WHERE g.file = k.file AND g.line = l.line LIMIT 1) AS text
                FROM user_kernel_lines l """


def write_user_kernel(conn: sqlite3.Connection, run_id: int, kernel_id: int, kernel: Kernel,
                      source_columns: Callable) -> None:
    """The rows of one user kernel; `source_columns` stores a SourceLocation as the
    writer stores a node's source (file key, line, function, code) and makes its file
    one of the run's source files."""
    user = kernel.user
    if user is None:
        return
    file, line, _, code = source_columns(user.source)
    conn.execute(
        """INSERT INTO user_kernels (kernel_id, run_id, function, source_file, source_line, source_code, configs_json,
               chosen_json, chosen_by, heuristics_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (kernel_id, run_id, user.function, file, line, code, json.dumps(user.configs),
         None if user.chosen is None else json.dumps(user.chosen), user.chosen_by, json.dumps(user.heuristics)),
    )
    rows = []
    for row in user.lines:
        source_file, source_line, function, code = source_columns(row.source)
        rows.append((kernel_id, run_id, row.line, source_file, source_line, function, code, row.reason))
    conn.executemany(
        """INSERT OR IGNORE INTO user_kernel_lines (kernel_id, run_id, line, source_file, source_line,
               source_function, source_code, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        rows,
    )


def user_kernel_copies(conn: sqlite3.Connection, location: Location, line: int,
                       graph_of: Callable[[int], GraphRef]) -> list[UserKernelCopy]:
    """What a query of `location:line` adds for user kernels: a source line's generated
    copies, or a kernel line's user kernel and the user's line it was copied from."""
    if location.kind == SOURCE:
        return copies_of_source_line(conn, location.run_id, location.path, line, graph_of)
    if location.kind == KERNEL:
        return copy_of_kernel_line(conn, location.path, line, graph_of)
    return []


def copies_of_source_line(conn: sqlite3.Connection, run_id: int, file: str, line: int,
                          graph_of: Callable[[int], GraphRef]) -> list[UserKernelCopy]:
    """Every generated copy of the user's kernel line `file:line` in the run, one entry per
    kernel (a kernel compiled into the forward and the backward has a copy in each)."""
    rows = _rows(conn, _LINE_ROWS + "WHERE l.run_id = ? AND l.source_file = ? AND l.source_line = ? "
                                    "ORDER BY l.kernel_id, l.line", (run_id, file, line))
    return _copies(conn, rows, graph_of)


def copy_of_kernel_line(conn: sqlite3.Connection, kernel_file: str, line: int,
                        graph_of: Callable[[int], GraphRef]) -> list[UserKernelCopy]:
    """The user kernel the kernel file `kernel_file` is a copy of, with the user's line
    `line` was copied from (no line where it is Inductor's own: its imports); [] when the
    file is no user kernel's."""
    kernel = _rows(conn, "SELECT kernel_id FROM files WHERE path = ? AND kind = 'kernel'", (kernel_file,))
    if not kernel or kernel[0]["kernel_id"] is None:
        return []
    kernel_id = kernel[0]["kernel_id"]
    ref = _kernel_ref(conn, kernel_id, graph_of)
    if ref is None:
        return []
    rows = _rows(conn, _LINE_ROWS + "WHERE l.kernel_id = ? AND l.line = ?", (kernel_id, line))
    return [UserKernelCopy(kernel=ref, lines=[_line_ref(row) for row in rows])]


def user_kernels_of_run(conn: sqlite3.Connection, run_id: int,
                        graph_of: Callable[[int], GraphRef]) -> list[UserKernelRef]:
    """Every user kernel of the run, in graph and kernel order (for `kernelscope show`)."""
    rows = _rows(conn, "SELECT u.kernel_id FROM user_kernels u JOIN kernels k ON k.id = u.kernel_id "
                       "WHERE u.run_id = ? ORDER BY k.graph_id, k.position", (run_id,))
    return [ref for row in rows if (ref := _kernel_ref(conn, row["kernel_id"], graph_of)) is not None]


def kernels_by_line(conn: sqlite3.Connection, run_id: int, file: str,
                    graph_of: Callable[[int], GraphRef]) -> tuple[dict[int, list[UserKernelRef]],
                                                                   dict[int, list[UserKernelRef]]]:
    """The user kernels of a source file, by line: ({`def` line: its copies}, {call line: the
    copies it launches}) — a call line is the line of the node that launches the copy."""
    defined: dict[int, list[UserKernelRef]] = {}
    called: dict[int, list[UserKernelRef]] = {}
    rows = _rows(conn, "SELECT kernel_id, source_line FROM user_kernels WHERE run_id = ? AND source_file = ?",
                 (run_id, file))
    calls = _rows(conn, """SELECT DISTINCT u.kernel_id, n.source_line FROM user_kernels u
                           JOIN kernel_nodes kn ON kn.kernel_id = u.kernel_id JOIN nodes n ON n.id = kn.node_id
                           WHERE u.run_id = ? AND n.source_file = ? AND n.source_line IS NOT NULL""", (run_id, file))
    for found, table in ((rows, defined), (calls, called)):
        for row in found:
            ref = _kernel_ref(conn, row["kernel_id"], graph_of)
            if ref is not None:
                table.setdefault(row["source_line"], []).append(ref)
    return defined, called


def line_counts(conn: sqlite3.Connection, run_id: int) -> tuple[int, int]:
    """(body lines of the run's user kernels linked to the user's source, their body lines):
    the kernel lines the coverage counts (those after the kernel's `def`)."""
    rows = _rows(conn, """SELECT COUNT(DISTINCT g.kernel_id || ':' || g.line) AS total,
                                 COUNT(DISTINCT CASE WHEN l.line IS NOT NULL THEN g.kernel_id || ':' || g.line END)
                                     AS linked
                          FROM generated_lines g JOIN user_kernels u ON u.kernel_id = g.kernel_id
                          LEFT JOIN user_kernel_lines l ON l.kernel_id = g.kernel_id AND l.line = g.line
                          WHERE u.run_id = ?""", (run_id,))
    return (rows[0]["linked"], rows[0]["total"]) if rows else (0, 0)


def dump_user_kernel(conn: sqlite3.Connection, kernel_id: int,
                     source: Callable[[sqlite3.Row], dict | None]) -> dict | None:
    """The dump's `kernel.user` (record.UserKernel): null for a kernel Inductor generated.
    `source` turns a row's source_* columns into the dump's source location."""
    rows = _rows(conn, "SELECT *, function AS source_function FROM user_kernels WHERE kernel_id = ?", (kernel_id,))
    if not rows:
        return None
    row = rows[0]
    lines = [{"line": line["line"], "source": source(line), "reason": line["reason"]}
             for line in _rows(conn, "SELECT * FROM user_kernel_lines WHERE kernel_id = ? ORDER BY line",
                               (kernel_id,))]
    return {"function": row["function"], "source": source(row), "lines": lines,
            "configs": json.loads(row["configs_json"]),
            "chosen": None if row["chosen_json"] is None else json.loads(row["chosen_json"]),
            "chosen_by": row["chosen_by"], "heuristics": json.loads(row["heuristics_json"])}


def _copies(conn, rows, graph_of) -> list[UserKernelCopy]:
    copies: dict[int, UserKernelCopy] = {}
    for row in rows:
        if row["kernel_id"] not in copies:
            ref = _kernel_ref(conn, row["kernel_id"], graph_of)
            if ref is None:
                continue
            copies[row["kernel_id"]] = UserKernelCopy(kernel=ref, lines=[])
        copies[row["kernel_id"]].lines.append(_line_ref(row))
    return list(copies.values())


def _kernel_ref(conn, kernel_id: int, graph_of) -> UserKernelRef | None:
    rows = _rows(conn, """SELECT u.*, k.name, k.file, k.graph_id FROM user_kernels u
                          JOIN kernels k ON k.id = u.kernel_id WHERE u.kernel_id = ?""", (kernel_id,))
    if not rows:
        return None
    row = rows[0]
    calls = [call[0] for call in conn.execute(
        "SELECT wrapper_line FROM kernel_calls WHERE kernel_id = ? ORDER BY wrapper_line", (kernel_id,))]
    return UserKernelRef(
        kernel=row["name"], graph=graph_of(row["graph_id"]), file=row["file"], function=row["function"],
        source_file=row["source_file"], source_line=row["source_line"], configs=json.loads(row["configs_json"]),
        chosen=None if row["chosen_json"] is None else json.loads(row["chosen_json"]), chosen_by=row["chosen_by"],
        heuristics=json.loads(row["heuristics_json"]), launch_lines=calls,
    )


def _line_ref(row) -> UserKernelLineRef:
    return UserKernelLineRef(line=row["line"], text=row["text"] or "", source_file=row["source_file"],
                             source_line=row["source_line"], source_code=row["source_code"], reason=row["reason"])

