"""The recorded code of a run's source lines: what the run saw at each line its nodes,
graph breaks and call stacks point at, so an editor can match a stored line against the
text as it is now (stale positions) and show the code a line had when it was recorded.
What covers a whole file is cached per run (answer_cache: runs never change once written)."""
from __future__ import annotations

import sqlite3

from kernelscope.store.reading.answer_cache import cached, db_key


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
