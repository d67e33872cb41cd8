"""Measured memory beside the predicted (docs/memory.md): where each graph's wrapper runs from
(Inductor's code cache, recorded at codegen) and, with `--memory`, the compiled step run
again with its allocations recorded and joined to wrapper lines (engine/memory_measure.py,
profile/memory_join.py).

Tables: database/tables.py's MEMORY_MEASURED_TABLES (graph_wrapper_files, memory_measured,
memory_measured_lines). Read back as `MeasuredSummary` (RunMemory.measured): the measured
peak of the step, and per wrapper line the bytes allocated there beside the bytes the
timeline predicts there, with the model line of the buffer allocated there.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from kernelscope.run_record import GraphRecord, MeasuredMemory
from kernelscope.store.database import connection


@dataclass
class MeasuredLineInfo:
    graph: str  # graph key
    wrapper: str  # stored path of the graph's wrapper
    wrapper_line: int
    allocations: int
    bytes: int  # measured (the allocator's blocks on a GPU)
    predicted_bytes: int | None  # the timeline's allocation at this line (None: it predicts none here)
    buffer: str  # the buffer the timeline allocates here ("" if none)
    file: str | None  # stored source key of the buffer's model line
    line: int | None
    module: str


@dataclass
class MeasuredSummary:
    device: str
    method: str
    before_bytes: int
    peak_bytes: int  # the step's, above before_bytes
    allocations: int
    joined: int
    joined_bytes: int
    lines: list[MeasuredLineInfo] = field(default_factory=list)  # by graph, then wrapper line


def write_measured(conn: sqlite3.Connection, run_id: int, graphs: Sequence[tuple[GraphRecord, int]],
                   measured: MeasuredMemory | None) -> None:
    """`graphs`: each graph with its id."""
    conn.executemany("INSERT INTO graph_wrapper_files (graph_id, run_id, path) VALUES (?, ?, ?)",
                     [(graph_id, run_id, graph.memory.wrapper_file) for graph, graph_id in graphs
                      if graph.memory is not None and graph.memory.wrapper_file])
    if measured is None:
        return
    conn.execute(
        """INSERT INTO memory_measured (run_id, device, method, before_bytes, peak_bytes, allocations, joined,
               joined_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        (run_id, measured.device, measured.method, measured.before_bytes, measured.peak_bytes, measured.allocations,
         measured.joined, measured.joined_bytes))
    ids = {graph.key: graph_id for graph, graph_id in graphs}
    conn.executemany(
        "INSERT INTO memory_measured_lines (run_id, graph_id, wrapper_line, allocations, bytes) VALUES (?, ?, ?, ?, ?)",
        [(run_id, ids[line.graph], line.line, line.allocations, line.bytes) for line in measured.lines
         if line.graph in ids])


def wrapper_files(conn: sqlite3.Connection, run_id: int) -> dict[str, str]:
    """graph key -> the file its wrapper ran from ({} for a store older than the table)."""
    if not connection.has_table(conn, "graph_wrapper_files"):
        return {}
    return {row["key"]: row["path"] for row in conn.execute(
        "SELECT g.key, w.path FROM graph_wrapper_files w JOIN graphs g ON g.id = w.graph_id WHERE w.run_id = ?",
        (run_id,))}


def read_measured(conn: sqlite3.Connection, run_id: int, graphs) -> MeasuredSummary | None:
    """`graphs`: the run's GraphMemoryInfo list (memory.py), for the predicted side of each line."""
    if not connection.has_table(conn, "memory_measured"):
        return None
    row = conn.execute("SELECT * FROM memory_measured WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    by_id = {graph.graph_id: graph for graph in graphs}
    summary = MeasuredSummary(row["device"], row["method"], row["before_bytes"], row["peak_bytes"],
                              row["allocations"], row["joined"], row["joined_bytes"])
    for line in conn.execute("""SELECT l.*, g.key FROM memory_measured_lines l JOIN graphs g ON g.id = l.graph_id
                                WHERE l.run_id = ? ORDER BY l.graph_id, l.wrapper_line""", (run_id,)):
        graph = by_id.get(line["graph_id"])
        event, buffer = _allocated_at(graph, line["wrapper_line"]) if graph is not None else (None, None)
        summary.lines.append(MeasuredLineInfo(
            line["key"], graph.wrapper if graph is not None else "", line["wrapper_line"], line["allocations"],
            line["bytes"], event["bytes"] if event else None, event["buffer"] if event else "",
            buffer.file if buffer else None, buffer.line if buffer else None, buffer.module if buffer else ""))
    return summary


def _allocated_at(graph, wrapper_line: int):
    """(the timeline's allocation at a wrapper line, the buffer it allocates), or Nones."""
    event = next((e for e in graph.timeline if e["line"] == wrapper_line and e["action"] == "allocate"), None)
    if event is None:
        return None, None
    return event, next((b for b in graph.buffers if b.name == event["buffer"]), None)


def measured_json(summary: MeasuredSummary | None, source_path=lambda path: path) -> dict | None:
    """`kernelscope memory --json`'s and the dump's `measured` (null: the run measured none)."""
    if summary is None:
        return None
    return {"device": summary.device, "method": summary.method, "before_bytes": summary.before_bytes,
            "peak_bytes": summary.peak_bytes, "allocations": summary.allocations, "joined": summary.joined,
            "joined_bytes": summary.joined_bytes,
            "lines": [{"graph": line.graph, "wrapper_line": line.wrapper_line, "allocations": line.allocations,
                       "bytes": line.bytes, "predicted_bytes": line.predicted_bytes, "buffer": line.buffer,
                       "file": source_path(line.file) if line.file is not None else None, "line": line.line,
                       "module": line.module}
                      for line in summary.lines]}
