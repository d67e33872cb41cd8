"""Line overviews kept in the store: every source line's answer, counted per graph and
module instance (GraphOverview), so that `kernelscope query FILE:LINE` answers an
outer line of a deep model with one index probe instead of re-deriving it from
tens of thousands of rows.

The writer counts every source file of a run in the run's own transaction
(`write_run`). Runs written before this table existed are counted on their first
read and kept when the store can be written (`read_line`); a read-only store
answers all the same, only without keeping the counts. One row per (run, file,
line) that has an answer, plus a row for line 0 that marks the file as counted
(a line without a row then has no answer).
"""
from __future__ import annotations

import contextlib
import gc
import json
import sqlite3

from kernelscope.store.reading import source_index
from kernelscope.store.reading.folding import fold_modules
from kernelscope.store.results import GraphOverview, GraphRef, ModuleSummary

TABLE = """CREATE TABLE IF NOT EXISTS line_overviews (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    file          TEXT NOT NULL,  -- a source file's stored key (as nodes.source_file)
    line          INTEGER NOT NULL,  -- 0: the file's marker (every line of it is counted)
    overview_json TEXT NOT NULL,
    PRIMARY KEY (run_id, file, line)
)"""
FILE_MARKER = 0


def write_run(conn: sqlite3.Connection, run_id: int) -> None:
    """Count every source file of run `run_id` (inside the caller's transaction: the
    writer's, so a run is never visible without its overviews)."""
    conn.execute(TABLE)
    files = [row[0] for row in conn.execute("SELECT path FROM files WHERE run_id = ? AND kind = 'source'", (run_id,))]
    with _collector_paused():
        for path in files:
            index = source_index.build(conn, run_id, path, cache=False, overviews=True, answers=False)
            _insert(conn, run_id, path, index.overviews)


@contextlib.contextmanager
def _collector_paused():
    """Counting makes many small objects that all live until it ends; in the process that
    just recorded the run (torch's objects, the RunRecord) each collector pass would scan
    that whole heap, which doubled the cost of counting a 48-block model."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_line(conn: sqlite3.Connection, run_id: int, path: str, line: int) -> list[GraphOverview]:
    """The overview of one line of a source file (empty when nothing was recorded there)."""
    rows = _rows(conn, run_id, path, (FILE_MARKER, line))
    if FILE_MARKER not in rows:
        return _count_now(conn, run_id, path).get(line, [])
    return decode(rows[line]) if line in rows else []


def read_file(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, list[GraphOverview]]:
    """The overviews of every line of a source file that has an answer."""
    try:
        rows = {row[0]: row[1] for row in conn.execute(
            "SELECT line, overview_json FROM line_overviews WHERE run_id = ? AND file = ?", (run_id, path))}
    except sqlite3.OperationalError:  # a store written before line overviews
        rows = {}
    if FILE_MARKER not in rows:
        return _count_now(conn, run_id, path)
    return {line: decode(text) for line, text in sorted(rows.items()) if line != FILE_MARKER}


def linked_lines(conn: sqlite3.Connection, run_id: int, path: str) -> list[int]:
    """The lines of a source file that have an answer, in order."""
    try:
        lines = [row[0] for row in conn.execute(
            "SELECT line FROM line_overviews WHERE run_id = ? AND file = ? ORDER BY line", (run_id, path))]
    except sqlite3.OperationalError:  # a store written before line overviews
        lines = []
    if FILE_MARKER not in lines:
        return sorted(_count_now(conn, run_id, path))
    return [line for line in lines if line != FILE_MARKER]


def _rows(conn: sqlite3.Connection, run_id: int, path: str, lines: tuple[int, ...]) -> dict[int, str]:
    try:
        return {row[0]: row[1] for row in conn.execute(
            f"SELECT line, overview_json FROM line_overviews WHERE run_id = ? AND file = ? "
            f"AND line IN ({', '.join('?' * len(lines))})", (run_id, path, *lines))}
    except sqlite3.OperationalError:  # no such table: a store written before line overviews
        return {}


def _count_now(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, list[GraphOverview]]:
    """Count a file of a run written before line overviews, and keep the counts when the
    store can be written (another writer holding the lock, or a read-only store: not kept)."""
    with _collector_paused():
        counted = source_index.build(conn, run_id, path, overviews=True, answers=False).overviews
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return counted
    try:
        conn.execute(TABLE)
        _insert(conn, run_id, path, counted)
        conn.execute("COMMIT")
    except sqlite3.Error:
        conn.execute("ROLLBACK")
    return counted


def _insert(conn: sqlite3.Connection, run_id: int, path: str, overviews: dict[int, list[GraphOverview]]) -> None:
    rows = [(run_id, path, line, encode(graphs)) for line, graphs in overviews.items() if line is not None]
    conn.executemany("INSERT OR REPLACE INTO line_overviews VALUES (?, ?, ?, ?)",
                     rows + [(run_id, path, FILE_MARKER, "[]")])


def encode(graphs: list[GraphOverview]) -> str:
    """Compact JSON: lists, not objects (the loop line of a 48-block model has 97 modules)."""
    return json.dumps([
        [graph.graph.id, graph.graph.key, graph.graph.compile_id, graph.graph.kind, graph.pre_nodes,
         graph.post_nodes, graph.called_nodes, graph.triton_kernels, graph.extern_calls, graph.generated_lines,
         [[module.module, module.module_class, module.via, module.post_nodes, module.triton_kernels,
           module.extern_calls, module.generated_lines, module.source_lines] for module in graph.modules],
         graph.graph.label]
        for graph in graphs
    ], separators=(",", ":"))


def decode(text: str) -> list[GraphOverview]:
    graphs = []
    for row in json.loads(text):  # a store older than subgraphs wrote no label (11 fields)
        graph_id, key, compile_id, kind, pre, post, called, triton, extern, generated, modules = row[:11]
        label = row[11] if len(row) > 11 else ""
        summaries = [ModuleSummary(*module) for module in modules]
        graphs.append(GraphOverview(graph=GraphRef(graph_id, key, compile_id, kind, label), pre_nodes=pre,
                                    post_nodes=post,
                                    called_nodes=called, triton_kernels=triton, extern_calls=extern,
                                    generated_lines=generated, modules=summaries, groups=fold_modules(summaries)))
    return graphs
