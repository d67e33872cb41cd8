"""A run's memory as the compile planned it (docs/memory.md): each graph's allocation timeline
read from its wrapper and sized from Inductor's IR (engine/memory.py), its peak and what is
live there, and what each forward saves for its backward — per model line and module instance.

Tables: database/tables.py's MEMORY_TABLES (graph_memory, memory_buffers), written with the
run; read back as `RunMemory` (RunView.memory), per source file for the editors
(`file_memory`, RunView.file_memory) and as the dump's `run.memory`. A store older than the
tables, opened read-only, reads as recording no memory.

Words: a line's `saved_for_backward_bytes` are the bytes of the tensors its forward nodes
leave for the backward; its `live_at_peak_bytes` the bytes of its tensors live at the peak of
the run's highest-peak graph (a saved activation, a backward input, counts for the forward
line that made it).
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from kernelscope.run_record import EagerMemory, GraphRecord
from kernelscope.store.database import connection
from kernelscope.store.parts import memory_measured, memory_step
from kernelscope.store.parts.memory_measured import MeasuredSummary
from kernelscope.store.parts.memory_step import StepPeak


@dataclass
class BufferMemory:
    """One tensor of a graph's timeline, with the model line of the node that made it."""

    name: str
    graph: str  # graph key
    kind: str  # "buffer" | "input"
    bytes: int
    dtype: str
    shape: str
    node: str  # post-grad node ("" for an input no forward node made)
    file: str | None  # stored source key of the node's model line
    line: int | None
    module: str  # module instance ("" outside any submodule)
    allocated_line: int
    freed_line: int
    reused_by: str
    live_at_peak: bool
    is_output: bool
    saved_for_backward: bool
    read_by: list[str] = field(default_factory=list)


@dataclass
class GraphMemoryInfo:
    graph_id: int
    key: str
    compile_id: str
    kind: str
    wrapper: str  # stored path of the wrapper the timeline's lines are lines of
    peak_bytes: int
    peak_line: int
    inputs_bytes: int
    timeline: list[dict] = field(default_factory=list)  # {line, action, buffer, bytes, live_bytes}
    buffers: list[BufferMemory] = field(default_factory=list)
    recomputed: list[tuple[str, str | None, int | None]] = field(default_factory=list)  # node, file, line
    wrapper_file: str = ""  # where Inductor wrote the wrapper and ran it from ("" if not recorded)
    subgraph: bool = False  # a higher-order op's subgraph (its timeline is not the step's)

    @property
    def saved_bytes(self) -> int:
        """Activations saved for the backward: tensors this graph made (not its inputs)."""
        return sum(buffer.bytes for buffer in self.buffers if buffer.saved_for_backward and buffer.kind == "buffer")

    @property
    def saved_inputs_bytes(self) -> int:
        """Inputs the backward keeps too (weights, the batch): no new memory while the caller holds them."""
        return sum(buffer.bytes for buffer in self.buffers if buffer.saved_for_backward and buffer.kind == "input")


@dataclass
class LineMemory:
    """One model line (in one module instance) and the memory its nodes hold."""

    file: str
    line: int
    module: str
    saved_for_backward_bytes: int = 0
    live_at_peak_bytes: int = 0
    saved: list[BufferMemory] = field(default_factory=list)  # what it saves for the backward
    recomputed: int = 0  # its nodes the backward recomputes instead of saving
    eager_saved_bytes: int | None = None  # --against-eager: what eager saves here (None: not measured)

    @property
    def more_than_eager(self) -> int | None:
        """Bytes the compiled graphs save here beyond eager (negative: fewer); None without eager."""
        return None if self.eager_saved_bytes is None else self.saved_for_backward_bytes - self.eager_saved_bytes


@dataclass
class EagerSummary:
    device: str
    saved_bytes: int
    saved_inputs_bytes: int


@dataclass
class RunMemory:
    peak_bytes: int
    peak_graph: str  # key of the graph with the highest peak
    graphs: list[GraphMemoryInfo] = field(default_factory=list)
    lines: list[LineMemory] = field(default_factory=list)  # most bytes first
    eager: EagerSummary | None = None  # --against-eager
    step: StepPeak | None = None  # the whole step's peak above what its caller held (memory_step.py)
    measured: MeasuredSummary | None = None  # --memory: the step measured, joined to wrapper lines

    @property
    def saved_for_backward_bytes(self) -> int:
        return sum(graph.saved_bytes for graph in self.graphs)


# -- writing -------------------------------------------------------------------------------


def write_memory(conn: sqlite3.Connection, run_id: int,
                 graphs: Sequence[tuple[GraphRecord, int, dict[str, int]]]) -> None:
    """`graphs`: each graph with its id and its post-grad node ids by name."""
    forwards = {(g.frame_id, g.frame_compile_id, g.attempt): nodes for g, _, nodes in graphs
                if g.kind == "forward" and g.subgraph is None}
    for graph, graph_id, post_nodes in graphs:
        memory = graph.memory
        if memory is None:
            continue
        conn.execute(
            """INSERT INTO graph_memory (graph_id, run_id, peak_bytes, peak_line, inputs_bytes, timeline_json,
                   recomputed_json) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (graph_id, run_id, memory.peak_bytes, memory.peak_line, memory.inputs_bytes,
             json.dumps([[e.line, e.action, e.buffer, e.bytes, e.live_bytes] for e in memory.timeline]),
             json.dumps(memory.recomputed)))
        forward_nodes = forwards.get((graph.frame_id, graph.frame_compile_id, graph.attempt), {})
        conn.executemany(
            """INSERT INTO memory_buffers (graph_id, run_id, node_id, name, kind, bytes, dtype, shape, allocated_line,
                   freed_line, reused_by, live_at_peak, is_output, saved_for_backward, read_by_json)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [(graph_id, run_id, (forward_nodes if b.from_forward else post_nodes).get(b.node), b.name, b.kind,
              b.bytes, b.dtype, b.shape, b.allocated_line, b.freed_line, b.reused_by, int(b.live_at_peak),
              int(b.is_output), int(b.saved_for_backward), json.dumps(b.read_by))
             for b in memory.buffers])


def write_eager(conn: sqlite3.Connection, run_id: int, eager: EagerMemory | None, source_columns) -> None:
    """`source_columns`: the writer's SourceLocation -> (stored file, line, function, code)."""
    if eager is None:
        return
    conn.execute("INSERT INTO eager_memory (run_id, device, saved_bytes, saved_inputs_bytes) VALUES (?, ?, ?, ?)",
                 (run_id, eager.device, eager.saved_bytes, eager.saved_inputs_bytes))
    conn.executemany(
        """INSERT INTO eager_memory_lines (run_id, source_file, source_line, source_function, source_code, module,
               bytes, tensors) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        [(run_id, *source_columns(entry.source), entry.module, entry.bytes, entry.tensors)
         for entry in eager.lines])


# -- reading -------------------------------------------------------------------------------


def read_run_memory(conn: sqlite3.Connection, run_id: int) -> RunMemory | None:
    """The run's memory, or None when it recorded none (an older recording, an import)."""
    if not connection.has_table(conn, "graph_memory"):
        return None
    rows = conn.execute(
        """SELECT m.*, g.key, g.compile_id, g.kind, f.path AS wrapper FROM graph_memory m
           JOIN graphs g ON g.id = m.graph_id
           LEFT JOIN files f ON f.graph_id = g.id AND f.kind = 'wrapper'
           WHERE m.run_id = ? ORDER BY g.id""", (run_id,)).fetchall()
    if not rows:
        return None
    buffers = _buffers(conn, "b.run_id = ?", (run_id,))
    files = memory_measured.wrapper_files(conn, run_id)
    subgraph_ids = _subgraph_ids(conn, run_id)
    graphs = []
    for row in rows:
        timeline = [dict(zip(("line", "action", "buffer", "bytes", "live_bytes"), event))
                    for event in json.loads(row["timeline_json"])]
        graphs.append(GraphMemoryInfo(row["graph_id"], row["key"], row["compile_id"], row["kind"], row["wrapper"] or "",
                                      row["peak_bytes"], row["peak_line"], row["inputs_bytes"], timeline,
                                      buffers.get(row["graph_id"], []),
                                      _recomputed(conn, row["graph_id"], json.loads(row["recomputed_json"])),
                                      files.get(row["key"], ""), row["graph_id"] in subgraph_ids))
    peak = max(graphs, key=lambda graph: graph.peak_bytes)
    memory = RunMemory(peak.peak_bytes, peak.key, graphs, _lines(graphs, peak))
    memory.step = memory_step.step_peak([memory_step.from_buffers(
        graph.key, graph.kind, graph.compile_id, [(e["line"], e["action"], e["bytes"]) for e in graph.timeline],
        graph.buffers) for graph in graphs if not graph.subgraph])
    memory.measured = memory_measured.read_measured(conn, run_id, graphs)
    _add_eager(conn, run_id, memory)
    return memory


def _subgraph_ids(conn: sqlite3.Connection, run_id: int) -> set[int]:
    if not connection.has_table(conn, "graph_subgraphs"):
        return set()
    return {row[0] for row in conn.execute("SELECT graph_id FROM graph_subgraphs WHERE run_id = ?", (run_id,))}


def _add_eager(conn: sqlite3.Connection, run_id: int, memory: RunMemory) -> None:
    """Set eager's saved bytes beside each line's (0 where eager saves nothing there)."""
    if not connection.has_table(conn, "eager_memory"):
        return
    row = conn.execute("SELECT * FROM eager_memory WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return
    memory.eager = EagerSummary(row["device"], row["saved_bytes"], row["saved_inputs_bytes"])
    by_key = {(entry.file, entry.line, entry.module): entry for entry in memory.lines}
    for entry in memory.lines:
        entry.eager_saved_bytes = 0
    for eager in conn.execute("SELECT * FROM eager_memory_lines WHERE run_id = ?", (run_id,)):
        key = (eager["source_file"], eager["source_line"], eager["module"])
        if key not in by_key:
            by_key[key] = LineMemory(*key, eager_saved_bytes=0)
            memory.lines.append(by_key[key])
        by_key[key].eager_saved_bytes += eager["bytes"]


def file_memory(memory: RunMemory | None, path: str) -> dict[int, LineMemory]:
    """Line -> its memory, summed over module instances, for one stored source file."""
    found: dict[int, LineMemory] = {}
    for entry in memory.lines if memory is not None else ():
        if entry.file != path:
            continue
        line = found.setdefault(entry.line, LineMemory(path, entry.line, ""))
        line.saved_for_backward_bytes += entry.saved_for_backward_bytes
        line.live_at_peak_bytes += entry.live_at_peak_bytes
        line.saved += entry.saved
        line.recomputed += entry.recomputed
        if entry.eager_saved_bytes is not None:
            line.eager_saved_bytes = (line.eager_saved_bytes or 0) + entry.eager_saved_bytes
    return found


def _buffers(conn: sqlite3.Connection, where: str, parameters: tuple) -> dict[int, list[BufferMemory]]:
    found: dict[int, list[BufferMemory]] = {}
    for row in conn.execute(
            f"""SELECT b.*, g.key, n.name AS node, n.source_file, n.source_line, n.module_path
                FROM memory_buffers b JOIN graphs g ON g.id = b.graph_id LEFT JOIN nodes n ON n.id = b.node_id
                WHERE {where} ORDER BY b.id""", parameters):
        found.setdefault(row["graph_id"], []).append(BufferMemory(
            row["name"], row["key"], row["kind"], row["bytes"], row["dtype"], row["shape"], row["node"] or "",
            row["source_file"], row["source_line"], row["module_path"] or "", row["allocated_line"],
            row["freed_line"], row["reused_by"], bool(row["live_at_peak"]), bool(row["is_output"]),
            bool(row["saved_for_backward"]), json.loads(row["read_by_json"])))
    return found


def _recomputed(conn: sqlite3.Connection, graph_id: int, names: list[str]) -> list[tuple[str, str | None, int | None]]:
    if not names:
        return []
    where = {row["name"]: (row["source_file"], row["source_line"]) for row in conn.execute(
        f"""SELECT name, source_file, source_line FROM nodes WHERE graph_id = ? AND stage = 'post'
            AND name IN ({', '.join('?' * len(names))})""", (graph_id, *names))}
    return [(name, *where.get(name, (None, None))) for name in names]


def _lines(graphs: list[GraphMemoryInfo], peak: GraphMemoryInfo) -> list[LineMemory]:
    lines: dict[tuple[str, int, str], LineMemory] = {}

    def line_of(buffer: BufferMemory) -> LineMemory | None:
        if buffer.file is None or buffer.line is None:
            return None
        key = (buffer.file, buffer.line, buffer.module)
        return lines.setdefault(key, LineMemory(*key))

    for graph in graphs:
        for buffer in graph.buffers:
            entry = line_of(buffer)
            if entry is None:
                continue
            if buffer.saved_for_backward:
                entry.saved_for_backward_bytes += buffer.bytes
                entry.saved.append(buffer)
            if graph is peak and buffer.live_at_peak:
                entry.live_at_peak_bytes += buffer.bytes
    recomputed: dict[tuple[str, int], int] = {}
    for graph in graphs:
        for _, file, line in graph.recomputed:
            if file is not None and line is not None:
                recomputed[(file, line)] = recomputed.get((file, line), 0) + 1
    for (file, line), count in recomputed.items():  # counted once per line, on its first module instance
        entry = next((e for (f, n, _), e in sorted(lines.items()) if (f, n) == (file, line)), None)
        if entry is None:
            entry = lines.setdefault((file, line, ""), LineMemory(file, line, ""))
        entry.recomputed = count
    return sorted(lines.values(), key=lambda e: (-(e.saved_for_backward_bytes + e.live_at_peak_bytes), e.file,
                                                 e.line, e.module))


# -- the dump ------------------------------------------------------------------------------


def dump_graph_memory(conn: sqlite3.Connection, graph_id: int) -> dict | None:
    """The dump's `graph.memory`: the GraphMemory as recorded (null: none recorded)."""
    if not connection.has_table(conn, "graph_memory"):
        return None
    row = conn.execute("SELECT * FROM graph_memory WHERE graph_id = ?", (graph_id,)).fetchone()
    if row is None:
        return None
    buffers = [{"name": b.name, "node": b.node, "kind": b.kind, "bytes": b.bytes, "dtype": b.dtype, "shape": b.shape,
                "allocated_line": b.allocated_line, "freed_line": b.freed_line, "reused_by": b.reused_by,
                "live_at_peak": b.live_at_peak, "is_output": b.is_output, "saved_for_backward": b.saved_for_backward,
                "read_by": sorted(b.read_by), "from_forward": b.kind == "input" and bool(b.node)}
               for b in _buffers(conn, "b.graph_id = ?", (graph_id,)).get(graph_id, [])]
    timeline = [dict(zip(("line", "action", "buffer", "bytes", "live_bytes"), event))
                for event in json.loads(row["timeline_json"])]
    return {"peak_bytes": row["peak_bytes"], "peak_line": row["peak_line"], "inputs_bytes": row["inputs_bytes"],
            "buffers": buffers, "timeline": timeline, "recomputed": sorted(json.loads(row["recomputed_json"]))}


def dump_eager_memory(conn: sqlite3.Connection, run_id: int, source) -> dict | None:
    """The dump's `run.eager_memory` (RunRecord.eager_memory; `source` writes a stored location)."""
    if not connection.has_table(conn, "eager_memory"):
        return None
    row = conn.execute("SELECT * FROM eager_memory WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    lines = [{"source": source(line["source_file"], line["source_line"], line["source_function"], line["source_code"]),
              "module": line["module"],
              "bytes": line["bytes"], "tensors": line["tensors"]}
             for line in conn.execute("SELECT * FROM eager_memory_lines WHERE run_id = ?", (run_id,))]
    return {"device": row["device"], "saved_bytes": row["saved_bytes"], "saved_inputs_bytes": row["saved_inputs_bytes"],
            "lines": sorted(lines, key=lambda line: (line["source"]["file"], line["source"]["line"], line["module"]))}


def dump_run_memory(conn: sqlite3.Connection, run_id: int, source_path) -> dict | None:
    """The dump's `run.memory`: the peak and the model lines (paths as `source_path` writes them)."""
    memory = read_run_memory(conn, run_id)
    if memory is None:
        return None
    lines = [{"file": source_path(entry.file), "line": entry.line, "module": entry.module,
              "saved_for_backward_bytes": entry.saved_for_backward_bytes,
              "live_at_peak_bytes": entry.live_at_peak_bytes, "recomputed_nodes": entry.recomputed,
              "eager_saved_for_backward_bytes": entry.eager_saved_bytes}
             for entry in memory.lines]
    return {"peak_bytes": memory.peak_bytes, "peak_graph": memory.peak_graph,
            "saved_for_backward_bytes": memory.saved_for_backward_bytes, **_step_json(memory),
            "measured": memory_measured.measured_json(memory.measured, source_path),
            "lines": sorted(lines, key=lambda line: (line["file"], line["line"], line["module"]))}


def _step_json(memory: RunMemory) -> dict:
    step = memory.step or StepPeak(0, "", 0)
    return {"step_peak_bytes": step.bytes, "step_peak_graph": step.graph, "step_peak_line": step.line}


def memory_json(memory: RunMemory) -> dict:
    """What `kernelscope memory --json` prints and the dump keeps (docs/memory.md)."""
    return {
        "peak_bytes": memory.peak_bytes,
        "peak_graph": memory.peak_graph,
        "saved_for_backward_bytes": memory.saved_for_backward_bytes,
        **_step_json(memory),
        "measured": memory_measured.measured_json(memory.measured),
        "graphs": [{
            "graph": graph.key,
            "compile_id": graph.compile_id,
            "kind": graph.kind,
            "wrapper": graph.wrapper,
            "wrapper_file": graph.wrapper_file,
            "peak_bytes": graph.peak_bytes,
            "peak_line": graph.peak_line,
            "inputs_bytes": graph.inputs_bytes,
            "saved_for_backward_bytes": graph.saved_bytes,
            "saved_inputs_bytes": graph.saved_inputs_bytes,
            "timeline": graph.timeline,
            "buffers": [_buffer_json(buffer) for buffer in graph.buffers],
            "recomputed": [{"node": node, "file": file, "line": line} for node, file, line in graph.recomputed],
        } for graph in memory.graphs],
        "lines": [{
            "file": entry.file,
            "line": entry.line,
            "module": entry.module,
            "saved_for_backward_bytes": entry.saved_for_backward_bytes,
            "live_at_peak_bytes": entry.live_at_peak_bytes,
            "recomputed_nodes": entry.recomputed,
            "eager_saved_for_backward_bytes": entry.eager_saved_bytes,
            "saved": [_buffer_json(buffer) for buffer in entry.saved],
        } for entry in memory.lines],
        "eager": None if memory.eager is None else {"device": memory.eager.device,
                                                    "saved_for_backward_bytes": memory.eager.saved_bytes,
                                                    "saved_inputs_bytes": memory.eager.saved_inputs_bytes},
    }


def _buffer_json(buffer: BufferMemory) -> dict:
    return {"graph": buffer.graph, "name": buffer.name, "kind": buffer.kind, "node": buffer.node,
            "bytes": buffer.bytes, "dtype": buffer.dtype, "shape": buffer.shape, "file": buffer.file,
            "line": buffer.line, "module": buffer.module, "allocated_line": buffer.allocated_line,
            "freed_line": buffer.freed_line, "reused_by": buffer.reused_by, "live_at_peak": buffer.live_at_peak,
            "is_output": buffer.is_output, "saved_for_backward": buffer.saved_for_backward,
            "read_by": buffer.read_by}
