"""Small per-run reads the front ends need beside the answers: the recorded code of
a file's lines, a kernel's source lines, the fallbacks to eager, the source lines of
a Dynamo frame's graphs. Each goes through the store's indexes; what covers a whole
run is cached per run (run_cache: runs never change once written)."""
from __future__ import annotations

import sqlite3

from kernelscope.store.run_cache import cached, db_key
from kernelscope.store.run_facts import KernelInfo, kernels_of_run
from kernelscope.store.sql import select_in


def recorded_code(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, str]:
    """line -> its code as recorded, for every line of `path` the run's nodes, graph breaks
    and call stacks point at (what an editor matches against the text as it is now)."""
    def compute():
        code: dict[int, str] = {}
        for line, text in conn.execute(
            "SELECT source_line, source_code FROM nodes WHERE run_id = ? AND source_file = ?", (run_id, path)
        ):
            if line is not None and (text or line not in code):
                code[line] = text or ""
        for line, text in conn.execute(
            "SELECT source_line, source_code FROM graph_breaks WHERE run_id = ? AND source_file = ?", (run_id, path)
        ):
            if line is not None and line not in code:
                code[line] = text or ""
        for line, text in conn.execute("SELECT line, code FROM stack_frames WHERE run_id = ? AND file = ?",
                                       (run_id, path)):
            if text or line not in code:
                code[line] = text or ""
        return code

    return cached(("code", db_key(conn), run_id, path), compute)


def source_code(conn: sqlite3.Connection, run_id: int, file: str, line: int) -> str:
    """The recorded code of one source line ("" when no node of the run recorded any)."""
    row = conn.execute(
        "SELECT source_code FROM nodes WHERE run_id = ? AND source_file = ? AND source_line = ? AND source_code != '' "
        "LIMIT 1", (run_id, file, line)).fetchone()
    return row[0].strip() if row else ""


def kernel_sources(conn: sqlite3.Connection, kernel_id: int) -> list[tuple[str, int]]:
    """The (source file, line) pairs a kernel's nodes point at, in file/line order: one
    index probe, not cached (a thousand per-kernel entries would push the file indexes
    out of the shared cache)."""
    rows = conn.execute(
        """SELECT DISTINCT n.source_file, n.source_line FROM kernel_nodes kn JOIN nodes n ON n.id = kn.node_id
           WHERE kn.kernel_id = ? AND n.source_file IS NOT NULL""",
        (kernel_id,),
    ).fetchall()
    return sorted((row[0], row[1]) for row in rows)


def all_kernel_sources(conn: sqlite3.Connection, run_id: int) -> dict[int, list[tuple[str, int]]]:
    """kernel id -> its source lines, for every kernel of a run (a run overview)."""
    def compute():
        result: dict[int, set[tuple[str, int]]] = {}
        for kernel_id, file, line in conn.execute(
            """SELECT kn.kernel_id, n.source_file, n.source_line FROM kernels k
               JOIN kernel_nodes kn ON kn.kernel_id = k.id JOIN nodes n ON n.id = kn.node_id
               WHERE k.run_id = ? AND n.source_file IS NOT NULL""",
            (run_id,),
        ):
            result.setdefault(kernel_id, set()).add((file, line))
        return {kernel_id: sorted(pairs) for kernel_id, pairs in result.items()}

    return cached(("allksrc", db_key(conn), run_id), compute)


def fallback_sources(conn: sqlite3.Connection, run_id: int) -> dict[str, list[tuple[int, KernelInfo]]]:
    """source file -> (line, kernel) for every ATen fallback of the run (eager ops: a
    diagnostic at each line), read once per run."""
    def compute():
        kernels = kernels_of_run(conn, run_id)
        fallbacks = [kernel.id for kernel in kernels.values() if kernel.is_fallback]
        found: dict[str, set[tuple[int, int]]] = {}
        for kernel_id, file, line in select_in(
                conn, """SELECT DISTINCT kn.kernel_id, n.source_file, n.source_line FROM kernel_nodes kn
                         JOIN nodes n ON n.id = kn.node_id
                         WHERE kn.kernel_id IN ({}) AND n.source_file IS NOT NULL""", fallbacks, plain=True):
            found.setdefault(file, set()).add((line, kernel_id))
        return {file: [(line, kernels[kernel_id]) for line, kernel_id in sorted(pairs)]
                for file, pairs in found.items()}

    return cached(("fallbacks", db_key(conn), run_id), compute)


def kernel_of_file(conn: sqlite3.Connection, run_id: int, path: str) -> KernelInfo | None:
    """The kernel whose file `path` is (None for other files)."""
    row = conn.execute("SELECT kernel_id FROM files WHERE path = ? AND run_id = ?", (path, run_id)).fetchone()
    if row is None or row[0] is None:
        return None
    return kernels_of_run(conn, run_id).get(row[0])


def frame_source_lines(conn: sqlite3.Connection, run_id: int, frame_id: int) -> list[tuple[str, int]]:
    """The source lines of the graphs of one Dynamo frame (where a recompile is shown)."""
    rows = conn.execute(
        """SELECT DISTINCT n.source_file, n.source_line FROM graphs g JOIN nodes n ON n.graph_id = g.id
           WHERE g.run_id = ? AND g.frame_id = ? AND n.stage = 'pre' AND n.source_file IS NOT NULL""",
        (run_id, frame_id),
    ).fetchall()
    return sorted((row[0], row[1]) for row in rows)
