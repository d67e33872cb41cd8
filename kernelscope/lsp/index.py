"""Per-run summaries the Store API does not offer yet, read with plain SQL.

Read-only queries on `Store.conn`, each through the store's indexes. What is here
should move into `kernelscope.store` (see the LSP issue's report): the recorded
code of a file's lines, and per source line the kernels it reaches grouped by
graph with the lines fused with it, a kernel's source lines, and the fallbacks
to eager. Runs never change once written, so results are cached by run id.
"""
from __future__ import annotations

import gc
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

FALLBACK_PREFIXES = ("torch.ops.", "aten.")  # extern calls that run an ATen op eagerly (as `diff`)
_CHUNK = 500


@dataclass
class GraphInfo:
    id: int
    key: str
    compile_id: str
    kind: str  # forward | backward | inference
    files: dict[str, str]  # pre_grad / post_grad / wrapper -> stored path

    @property
    def title(self) -> str:
        return f"{self.kind} [{self.compile_id}]"


@dataclass
class KernelInfo:
    id: int
    name: str
    kind: str  # triton | template | extern
    file: str | None
    graph_id: int
    graph_key: str
    compile_id: str
    graph_kind: str  # forward | backward | inference

    @property
    def graph_label(self) -> str:
        return f"{self.compile_id} {self.graph_kind}"

    @property
    def is_fallback(self) -> bool:
        return self.kind == "extern" and self.name.startswith(FALLBACK_PREFIXES)


@dataclass
class SourceLineSummary:
    """What one line of a source file became in a run."""

    line: int
    kernels: list[KernelInfo] = field(default_factory=list)
    fused_with: list[int] = field(default_factory=list)  # other lines of the file sharing a generated kernel


class _Cache:
    """LRU of computed answers; a key being computed is computed once (others wait)."""

    def __init__(self, size: int = 256):
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict = {}  # key -> lock held while computing it
        self._size = size

    def get(self, key, compute):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._building.pop(key, None)
        if value is None:
            return None  # e.g. a run not written yet: ask again next time
        # Cached answers live long and hold many objects: keep them out of the cyclic
        # collector's scans, whose full passes over a big index stalled requests for ~1 s.
        gc.freeze()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


_cache = _Cache()


def db_key(conn: sqlite3.Connection) -> str:
    """The database file a connection reads (cache keys hold it: one server, one store)."""
    return conn.execute("PRAGMA database_list").fetchone()[2]


def cached(key, compute):
    return _cache.get(key, compute)


_db_key = db_key


def recorded_code(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, str]:
    """line -> its code as recorded, for every line of `path` the run's nodes point at."""
    def compute():
        code: dict[int, str] = {}
        for row in conn.execute(
            "SELECT source_line, source_code FROM nodes WHERE run_id = ? AND source_file = ?", (run_id, path)
        ):
            if row[0] is not None and (row[1] or row[0] not in code):
                code[row[0]] = row[1] or ""
        for row in conn.execute(
            "SELECT source_line, source_code FROM graph_breaks WHERE run_id = ? AND source_file = ?", (run_id, path)
        ):
            if row[0] is not None and row[0] not in code:
                code[row[0]] = row[1] or ""
        for line, text in optional_rows(conn, "SELECT line, code FROM stack_frames WHERE run_id = ? AND file = ?",
                                  (run_id, path)):
            if text or line not in code:
                code[line] = text or ""
        return code

    return _cache.get(("code", _db_key(conn), run_id, path), compute)


def run_summary(store, run_id: int):
    """The RunSummary of one run (cached: runs never change)."""
    def compute():
        return next((summary for summary in store.runs() if summary.id == run_id), None)

    return _cache.get(("summary", _db_key(store.conn), run_id), compute)


def run_details(store, run_id: int):
    """`Store.show(run_id)`, cached."""
    return _cache.get(("details", _db_key(store.conn), run_id), lambda: store.show(run_id))


def file_links(store, run_id: int, path: str):
    """`Store.lines_for_file` of a generated file, cached (generated files never change)."""
    return _cache.get(("links", _db_key(store.conn), run_id, path), lambda: store.lines_for_file(path, run_id))


def kernels_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, KernelInfo]:
    def compute():
        rows = conn.execute(
            """SELECT k.id, k.name, k.kind, k.file, g.id, g.key, g.compile_id, g.kind AS graph_kind
               FROM kernels k JOIN graphs g ON g.id = k.graph_id WHERE k.run_id = ? ORDER BY g.id, k.position""",
            (run_id,),
        )
        return {row[0]: KernelInfo(*row) for row in rows}

    return _cache.get(("kernels", _db_key(conn), run_id), compute)


def graphs_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, GraphInfo]:
    def compute():
        graphs = {row[0]: GraphInfo(row[0], row[1], row[2], row[3], {}) for row in conn.execute(
            "SELECT id, key, compile_id, kind FROM graphs WHERE run_id = ? ORDER BY id", (run_id,))}
        for graph_id, kind, path in conn.execute(
                "SELECT graph_id, kind, path FROM files WHERE run_id = ? AND kind IN ('pre_grad', 'post_grad', 'wrapper')",
                (run_id,)):
            graphs[graph_id].files[kind] = path
        return graphs

    return _cache.get(("graphs", _db_key(conn), run_id), compute)


def source_lines(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, SourceLineSummary]:
    """Every line of source file `path` that reached a kernel in the run (lenses, hints)."""
    from kernelscope.lsp import lines  # lines builds on this module

    return lines.line_summaries(conn, run_id, path)


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
                         WHERE kn.kernel_id IN ({}) AND n.source_file IS NOT NULL""", fallbacks):
            found.setdefault(file, set()).add((line, kernel_id))
        return {file: [(line, kernels[kernel_id]) for line, kernel_id in sorted(pairs)]
                for file, pairs in found.items()}

    return _cache.get(("fallbacks", _db_key(conn), run_id), compute)


def kernel_of_file(conn: sqlite3.Connection, run_id: int, path: str) -> KernelInfo | None:
    row = conn.execute("SELECT kernel_id FROM files WHERE path = ? AND run_id = ?", (path, run_id)).fetchone()
    if row is None or row[0] is None:
        return None
    return kernels_of_run(conn, run_id).get(row[0])


def all_kernel_sources(conn: sqlite3.Connection, run_id: int) -> dict[int, list[tuple[str, int]]]:
    """kernel id -> its source lines, for every kernel of a run (run overview)."""
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

    return _cache.get(("allksrc", _db_key(conn), run_id), compute)


def graph_source_lines(conn: sqlite3.Connection, run_id: int, frame_id: int) -> list[tuple[str, int]]:
    """The source lines of the graphs of one Dynamo frame (where a recompile is shown)."""
    rows = conn.execute(
        """SELECT DISTINCT n.source_file, n.source_line FROM graphs g JOIN nodes n ON n.graph_id = g.id
           WHERE g.run_id = ? AND g.frame_id = ? AND n.stage = 'pre' AND n.source_file IS NOT NULL""",
        (run_id, frame_id),
    ).fetchall()
    return sorted((row[0], row[1]) for row in rows)


def optional_rows(conn: sqlite3.Connection, sql: str, params: tuple) -> list[tuple]:
    """Rows of the call-stack tables (store schema 2); none from an older store."""
    try:
        return [tuple(row) for row in conn.execute(sql, params)]
    except sqlite3.OperationalError:
        return []


def select_in(conn: sqlite3.Connection, sql: str, ids) -> list[tuple]:
    ids = sorted(ids)
    rows: list[tuple] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        rows += [tuple(row) for row in conn.execute(sql.format(", ".join("?" * len(chunk))), chunk)]
    return rows
