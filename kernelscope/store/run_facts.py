"""A run's graphs and kernels as small records, read once per run (see run_cache).

What every front end lists and labels: a graph's kind, compile id and files, a
kernel's name, kind, file and graph; an extern call that runs an ATen op eagerly
is a fallback.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from kernelscope.store.run_cache import cached, db_key

FALLBACK_PREFIXES = ("torch.ops.", "aten.")  # extern calls that run an ATen op eagerly (as `diff`)


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


def kernels_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, KernelInfo]:
    def compute():
        rows = conn.execute(
            """SELECT k.id, k.name, k.kind, k.file, g.id, g.key, g.compile_id, g.kind AS graph_kind
               FROM kernels k JOIN graphs g ON g.id = k.graph_id WHERE k.run_id = ? ORDER BY g.id, k.position""",
            (run_id,),
        )
        return {row[0]: KernelInfo(*row) for row in rows}

    return cached(("kernels", db_key(conn), run_id), compute)


def graphs_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, GraphInfo]:
    def compute():
        graphs = {row[0]: GraphInfo(row[0], row[1], row[2], row[3], {}) for row in conn.execute(
            "SELECT id, key, compile_id, kind FROM graphs WHERE run_id = ? ORDER BY id", (run_id,))}
        for graph_id, kind, path in conn.execute(
                "SELECT graph_id, kind, path FROM files WHERE run_id = ? AND kind IN ('pre_grad', 'post_grad', 'wrapper')",
                (run_id,)):
            graphs[graph_id].files[kind] = path
        return graphs

    return cached(("graphs", db_key(conn), run_id), compute)
