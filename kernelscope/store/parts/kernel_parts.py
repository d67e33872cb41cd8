"""A foreach/combo kernel's sub-kernels as the store answers them: each sub-kernel's block
of lines, its nodes, their lines (the optimizer's, e.g. torch/optim/sgd.py's) and the
outermost user lines that called them (the script's `opt.step()`), and the optimizer
parameters it updates (`param_groups[i]`, the parameter's name or index and shape).

Reads database/tables.py's KERNEL_PART_TABLES, which the writer fills from each Kernel's
`parts` (engine/kernel_parts.py). A kernel line finds its sub-kernel by kernel and line
(primary key); a source line the sub-kernels whose nodes come from it, directly or up
their call stack (nodes_by_run_source, frames_by_line). A store older than schema 7,
opened read-only, has no such table: its runs read as having no sub-kernels (`_rows`).
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict

from kernelscope.run_record import Kernel
from kernelscope.store.database.sql import rows_if_table as _rows
from kernelscope.store.results import KERNEL, SOURCE, GraphRef, KernelPartRef, Location

_PART_ROWS = """SELECT p.*, k.name AS kernel, k.file, k.graph_id FROM kernel_parts p
                JOIN kernels k ON k.id = p.kernel_id """


def write_parts(conn: sqlite3.Connection, run_id: int, kernel_id: int, kernel: Kernel) -> None:
    conn.executemany(
        """INSERT INTO kernel_parts (kernel_id, run_id, part, first_line, last_line, nodes_json, params_json)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        [(kernel_id, run_id, part.index, part.first_line, part.last_line, json.dumps(part.nodes),
          json.dumps([asdict(param) for param in part.params])) for part in kernel.parts],
    )


def parts_at(conn: sqlite3.Connection, location: Location, line: int,
             graph_of: Callable[[int], GraphRef]) -> list[KernelPartRef]:
    """A kernel line of a foreach/combo kernel: the sub-kernel whose block holds it. A source
    line: the sub-kernels updating optimizer parameters whose nodes come from it (its own ops
    or, up the stack, the calls it made: a script's `opt.step()` line reaches every one)."""
    if location.kind == KERNEL:
        kernel = conn.execute("SELECT kernel_id FROM files WHERE path = ? AND kind = 'kernel'",
                              (location.path,)).fetchone()
        if kernel is None or kernel["kernel_id"] is None:
            return []
        rows = _rows(conn, _PART_ROWS + "WHERE p.kernel_id = ? AND p.first_line <= ? AND p.last_line >= ?",
                     (kernel["kernel_id"], line, line))
        return [_ref(conn, row, graph_of) for row in rows]
    if location.kind != SOURCE:
        return []
    if not _rows(conn, "SELECT 1 FROM kernel_parts WHERE run_id = ? AND params_json != '[]' LIMIT 1",
                 (location.run_id,)):
        return []  # most runs have no optimizer step: one index probe
    nodes = conn.execute(
        """SELECT graph_id, name FROM nodes WHERE run_id = ? AND stage = 'post' AND source_file = ? AND source_line = ?
           UNION SELECT n.graph_id, n.name FROM stack_frames f JOIN nodes n ON n.stack_id = f.stack_id
           WHERE f.run_id = ? AND f.file = ? AND f.line = ? AND n.stage = 'post'""",
        (location.run_id, location.path, line, location.run_id, location.path, line)).fetchall()
    by_graph: dict[int, set[str]] = {}
    for graph_id, name in nodes:
        by_graph.setdefault(graph_id, set()).add(name)
    found = []
    lines: dict[tuple[int, str], tuple[str, str]] = {}
    for graph_id, names in by_graph.items():
        rows = _rows(conn, _PART_ROWS + "WHERE k.graph_id = ? AND p.params_json != '[]' ORDER BY k.position, p.part",
                     (graph_id,))
        found += [_ref(conn, row, graph_of, lines) for row in rows if names & set(json.loads(row["nodes_json"]))]
    return found


def parts_of_run(conn: sqlite3.Connection, run_id: int,
                 graph_of: Callable[[int], GraphRef]) -> list[KernelPartRef]:
    """Every foreach sub-kernel of the run, in graph, kernel and block order (for `kernelscope show`)."""
    rows = _rows(conn, _PART_ROWS + "WHERE p.run_id = ? ORDER BY k.graph_id, k.position, p.part", (run_id,))
    lines: dict[tuple[int, str], tuple[str, str]] = {}
    return [_ref(conn, row, graph_of, lines) for row in rows]


def dump_parts(conn: sqlite3.Connection, kernel_id: int) -> list[dict]:
    """The dump's `kernel.parts`: [] for a kernel that is no foreach/combo kernel."""
    rows = _rows(conn, "SELECT * FROM kernel_parts WHERE kernel_id = ? ORDER BY part", (kernel_id,))
    return [{"index": row["part"], "first_line": row["first_line"], "last_line": row["last_line"],
             "nodes": json.loads(row["nodes_json"]), "params": json.loads(row["params_json"])} for row in rows]


def _ref(conn: sqlite3.Connection, row: sqlite3.Row, graph_of: Callable[[int], GraphRef],
         lines: dict[tuple[int, str], tuple[str, str]] | None = None) -> KernelPartRef:
    """`lines`: the (own line, caller line) of each (graph id, node) already read — the
    sub-kernels of one foreach kernel share most of their nodes."""
    lines = {} if lines is None else lines
    nodes = json.loads(row["nodes_json"])
    sources: dict[str, None] = {}
    callers: dict[str, None] = {}
    for name in nodes:
        key = (row["graph_id"], name)
        if key not in lines:
            lines[key] = _node_lines(conn, *key)
        source, caller = lines[key]
        if source:
            sources[source] = None
        if caller:
            callers[caller] = None
    return KernelPartRef(kernel=row["kernel"], graph=graph_of(row["graph_id"]), file=row["file"] or "",
                         part=row["part"], first_line=row["first_line"], last_line=row["last_line"], nodes=nodes,
                         params=json.loads(row["params_json"]), sources=list(sources), called_from=list(callers))


def _node_lines(conn: sqlite3.Connection, graph_id: int, name: str) -> tuple[str, str]:
    """A post-grad node's own line and the user's line that called into torch.optim, as
    `file:line function` ("" where there is none)."""
    node = conn.execute("""SELECT source_file, source_line, source_function, stack_id FROM nodes
                           WHERE graph_id = ? AND stage = 'post' AND name = ?""", (graph_id, name)).fetchone()
    if node is None or node["source_file"] is None:
        return "", ""
    source = f"{node['source_file']}:{node['source_line']} {node['source_function']}".strip()
    caller = _caller(conn, node["stack_id"]) if node["stack_id"] is not None else None
    return source, f"{caller['file']}:{caller['line']} {caller['function']}".strip() if caller is not None else ""


def _caller(conn: sqlite3.Connection, stack_id: int) -> sqlite3.Row | None:
    """The frame that called into torch.optim (the user's `opt.step()`): the one before the
    stack's first frame in a `torch/optim/` file; the outermost frame when none is."""
    frames = conn.execute("SELECT file, line, function FROM stack_frames WHERE stack_id = ? ORDER BY depth",
                          (stack_id,)).fetchall()
    for depth, frame in enumerate(frames):
        if "torch/optim/" in frame["file"]:
            return frames[depth - 1] if depth else None
    return frames[0] if frames else None

