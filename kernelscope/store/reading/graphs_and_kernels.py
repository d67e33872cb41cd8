"""A run's graphs and kernels, as every front end lists and labels them.

Small records read once per run (cached: answer_cache): a graph's kind, compile id and
files (GraphInfo), a kernel's name, kind, file and graph (KernelInfo; an extern call
that runs an ATen op eagerly is a fallback). Beside them, per kernel: its facts for a
kernel list (KernelFacts: model lines, wrapper lines, module instances), its model lines,
the fallbacks to eager per source file, the kernel a stored kernel file belongs to, and
the model lines of a Dynamo frame's graphs (where a recompile shows). Each read goes
through the store's indexes.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from kernelscope.store.database.sql import select_in
from kernelscope.store.parts.subgraphs import subgraph_labels
from kernelscope.store.reading.answer_cache import cached, db_key
from kernelscope.store.results import GraphRef

FALLBACK_PREFIXES = ("torch.ops.", "aten.")  # extern calls that run an ATen op eagerly (as `diff`)


@dataclass
class GraphInfo:
    id: int
    key: str
    compile_id: str
    kind: str  # forward | backward | inference
    files: dict[str, str]  # pre_grad / post_grad / wrapper -> stored path
    label: str = ""  # a higher-order op's subgraph: its label (parts/subgraphs.py)

    @property
    def title(self) -> str:
        return self.label or f"{self.kind} [{self.compile_id}]"

    @property
    def ref(self) -> GraphRef:
        return GraphRef(self.id, self.key, self.compile_id, self.kind, self.label)


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
    """Kernel id -> KernelInfo, in graph and kernel order (cached per run)."""
    return cached(("kernels", db_key(conn), run_id), lambda: read_kernels(conn, run_id))


def read_kernels(conn: sqlite3.Connection, run_id: int) -> dict[int, KernelInfo]:
    rows = conn.execute(
        """SELECT k.id, k.name, k.kind, k.file, g.id, g.key, g.compile_id, g.kind AS graph_kind
           FROM kernels k JOIN graphs g ON g.id = k.graph_id WHERE k.run_id = ? ORDER BY g.id, k.position""",
        (run_id,),
    )
    return {row[0]: KernelInfo(*row) for row in rows}


def graphs_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, GraphInfo]:
    """Graph id -> GraphInfo with its files (cached per run)."""
    return cached(("graphs", db_key(conn), run_id), lambda: read_graphs(conn, run_id))


def read_graphs(conn: sqlite3.Connection, run_id: int) -> dict[int, GraphInfo]:
    labels = subgraph_labels(conn, run_id)
    graphs = {row[0]: GraphInfo(row[0], row[1], row[2], row[3], {}, labels.get(row[0], "")) for row in conn.execute(
        "SELECT id, key, compile_id, kind FROM graphs WHERE run_id = ? ORDER BY id", (run_id,))}
    for graph_id, kind, path in conn.execute(
            "SELECT graph_id, kind, path FROM files WHERE run_id = ? AND kind IN ('pre_grad', 'post_grad', 'wrapper')",
            (run_id,)):
        graphs[graph_id].files[kind] = path
    return graphs


@dataclass
class KernelFacts:
    """What a kernel list shows beside a kernel's name: the model lines its nodes come
    from, the wrapper lines that launch or call it, the module instances of its nodes."""

    source_lines: list[tuple[str, int]]
    wrapper_lines: list[int]
    modules: list[str]


def kernel_facts(conn: sqlite3.Connection, run_id: int) -> dict[str, KernelFacts]:
    """`graph key/kernel name` -> KernelFacts for every kernel of the run, in three
    queries over the run's indexes (not the whole-run dump)."""
    keys = {kernel_id: f"{graph_key}/{name}" for kernel_id, graph_key, name in conn.execute(
        "SELECT k.id, g.key, k.name FROM kernels k JOIN graphs g ON g.id = k.graph_id WHERE k.run_id = ?",
        (run_id,))}
    sources: dict[int, set[tuple[str, int]]] = {kernel_id: set() for kernel_id in keys}
    modules: dict[int, set[str]] = {kernel_id: set() for kernel_id in keys}
    for kernel_id, file, line, module in conn.execute(
            """SELECT kn.kernel_id, n.source_file, n.source_line, n.module_path
               FROM kernels k JOIN kernel_nodes kn ON kn.kernel_id = k.id JOIN nodes n ON n.id = kn.node_id
               WHERE k.run_id = ?""", (run_id,)):
        if file is not None:
            sources[kernel_id].add((file, line))
        if module:
            modules[kernel_id].add(module)
    calls: dict[int, list[int]] = {kernel_id: [] for kernel_id in keys}
    for kernel_id, wrapper_line in conn.execute(
            """SELECT kc.kernel_id, kc.wrapper_line FROM kernels k JOIN kernel_calls kc ON kc.kernel_id = k.id
               WHERE k.run_id = ? ORDER BY kc.wrapper_line""", (run_id,)):
        calls[kernel_id].append(wrapper_line)
    return {key: KernelFacts(sorted(sources[kernel_id]), calls[kernel_id], sorted(modules[kernel_id]))
            for kernel_id, key in keys.items()}


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
