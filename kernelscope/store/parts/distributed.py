"""Distributed jobs as the store answers them: a run's rank and job, which ranks
compiled identical code, the collectives of each graph with why they are there, and
the order of compute and communication in each wrapper.

Reads database/tables.py's DISTRIBUTED_TABLES (run_ranks, graph_splits, collectives),
which the writer fills (each graph's `code_digest` too), with the core tables; every
lookup goes through an index (run_ranks_by_job, collectives_by_graph, collectives_by_node,
lines_by_file_line, lines_by_node, nodes_by_graph_line, nodes_by_run_source). Ranks'
code is compared as `comparable_code` gives it (no GPU index, no cache paths).
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.store import paths
from kernelscope.store.database.sql import select_in
from kernelscope.store.export.dump import portable_text
from kernelscope.store.results import POST_GRAD, SOURCE, WRAPPER, FrameRef, Location


@dataclass
class RankRef:
    run_id: int
    rank: int
    world_size: int
    job: str
    backend: str
    local_rank: int | None
    created: float
    target: str


@dataclass
class SplitRef:
    """A graph that is one part of a graph DDP's optimizer split at bucket boundaries."""

    part: int
    parts: int
    splitter: str  # "DDPOptimizer" ("" when no probe named the split)
    params: list[str]
    bucket_bytes: int
    cap_bytes: int

    @property
    def label(self) -> str:
        who = f"{self.splitter} " if self.splitter else ""
        return f"{who}part {self.part + 1} of {self.parts}"


@dataclass
class CollectiveRef:
    """One communicating node and everything that says why it is there."""

    graph: str  # "0/0 forward"
    graph_key: str
    node: str
    op: str
    role: str  # issue | wait | fused
    peers: list[str]
    group: str
    group_size: int | None
    reduce_op: str
    bytes: int | None
    issued_by: str  # "RowwiseParallel output", "DTensor.redistribute", "implicit: DTensor sharding of ..."
    style: str  # the ParallelStyle class, "" if none
    frame: FrameRef | None  # the torch frame that issued it
    redistribute: str  # "P(sum) -> R"
    module: str  # the node's module instance (the parallelized layer)
    module_class: str
    source: FrameRef | None  # the node's direct line
    model_line: FrameRef | None  # the model line whose op needed it (see record.Collective.model_line)
    stack: list[FrameRef] = field(default_factory=list)  # its whole user call stack, outermost first
    lineage: list[str] = field(default_factory=list)  # passes that made, moved or fused it, latest first
    wrapper_file: str = ""
    wrapper_lines: list[int] = field(default_factory=list)  # the lines that issue or wait on it
    peer_lines: dict[str, list[int]] = field(default_factory=dict)  # each peer's wrapper lines

    @property
    def what(self) -> str:
        size = f" over {self.group_size} ranks" if self.group_size else ""
        reduce = f" ({self.reduce_op})" if self.reduce_op and self.role != "wait" else ""
        group = f" group {self.group}" if self.group else ""
        return f"{self.role} {self.op}{reduce}{group}{size}"


@dataclass
class OrderStep:
    """One launch or call in a wrapper, in order."""

    line: int
    kind: str  # compute | issue | wait | fused
    name: str  # kernel name, or the collective op
    node: str = ""  # the collective node (communication steps)


@dataclass
class GraphComm:
    graph: str  # "0/0 forward"
    graph_key: str
    wrapper_file: str
    split: SplitRef | None
    collectives: list[CollectiveRef]
    order: list[OrderStep]
    overlap: dict[str, int]  # issue node -> compute steps between it and its wait


@dataclass
class LineDifference:
    """Where a graph's wrapper first differs between the first group's rank and another's,
    compared as the digest compares them (without cache paths, workspace, GPU index)."""

    graph_key: str
    line: int  # 1-based, the same in both files' numbering
    reference_text: str  # the first group's line ("" past its end)
    text: str  # this group's line ("" past its end)
    reference_file: str  # the wrappers, store-relative
    file: str


@dataclass
class CodeGroup:
    """Ranks of one job whose generated code is identical, graph by graph."""

    ranks: list[int]
    runs: list[int]
    differs: list[str] = field(default_factory=list)  # graphs that differ from the first group's
    first_differences: list[LineDifference] = field(default_factory=list)  # one per graph in `differs`


@dataclass
class DistributedRun:
    run_id: int
    rank: RankRef | None
    job_ranks: list[RankRef]  # the latest run of each rank of this run's job
    code_groups: list[CodeGroup]
    graphs: list[GraphComm]

    @property
    def collective_count(self) -> int:
        return sum(1 for graph in self.graphs for collective in graph.collectives if collective.role != "wait")


def rank_of(conn: sqlite3.Connection, run_id: int) -> RankRef | None:
    row = conn.execute(
        """SELECT rr.*, r.created, r.target FROM run_ranks rr JOIN runs r ON r.id = rr.run_id
           WHERE rr.run_id = ?""", (run_id,)).fetchone()
    return _rank_ref(row) if row is not None else None


def ranks_of_runs(conn: sqlite3.Connection, run_ids: list[int]) -> dict[int, RankRef]:
    """run id -> its rank, for the runs that have one (run lists)."""
    return {row["run_id"]: _rank_ref(row) for row in select_in(
        conn, "SELECT rr.*, r.created, r.target FROM run_ranks rr JOIN runs r ON r.id = rr.run_id "
              "WHERE rr.run_id IN ({})", run_ids)}


def job_ranks(conn: sqlite3.Connection, job: str) -> list[RankRef]:
    """The latest run of each rank of `job`, by rank."""
    latest: dict[int, RankRef] = {}
    for row in conn.execute(
            """SELECT rr.*, r.created, r.target FROM run_ranks rr JOIN runs r ON r.id = rr.run_id
               WHERE rr.job = ? ORDER BY rr.rank, rr.run_id""", (job,)):
        latest[row["rank"]] = _rank_ref(row)
    return [latest[rank] for rank in sorted(latest)]


def latest_run_of_rank(conn: sqlite3.Connection, rank: int, job: str | None = None) -> int | None:
    """The newest run of `rank` (in `job`, else in the job of the newest run that has ranks)."""
    if job is None:
        row = conn.execute("SELECT job FROM run_ranks ORDER BY run_id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        job = row["job"]
    row = conn.execute("SELECT MAX(run_id) FROM run_ranks WHERE job = ? AND rank = ?", (job, rank)).fetchone()
    return row[0]


def code_groups(conn: sqlite3.Connection, ranks: list[RankRef], root: Path | None = None) -> list[CodeGroup]:
    """Group ranks by their generated code: each graph's wrapper (which embeds its
    kernels' source) compared by its digest (graph_code: cache paths left out). With the
    store's `root`, each group after the first names the first line where each of its
    differing graphs' wrappers parts from the first group's."""
    digests: dict[int, dict[str, str]] = {rank.run_id: {} for rank in ranks}
    for row in select_in(conn, "SELECT c.run_id, g.key, c.digest FROM graph_code c JOIN graphs g ON g.id = c.graph_id "
                               "WHERE c.run_id IN ({})", list(digests)):
        digests[row["run_id"]][row["key"]] = row["digest"]
    groups: dict[tuple, CodeGroup] = {}
    for rank in ranks:
        code = tuple(sorted(digests[rank.run_id].items()))
        group = groups.setdefault(code, CodeGroup([], []))
        group.ranks.append(rank.rank)
        group.runs.append(rank.run_id)
    ordered = list(groups.items())
    if ordered:
        reference = dict(ordered[0][0])
        for code, group in ordered[1:]:
            mine = dict(code)
            group.differs = sorted(key for key in set(reference) | set(mine) if reference.get(key) != mine.get(key))
            if root is not None:
                group.first_differences = [difference for key in group.differs if (difference := _first_difference(
                    conn, root, ordered[0][1].runs[0], group.runs[0], key)) is not None]
    return [group for _code, group in ordered]


def _first_difference(conn: sqlite3.Connection, root: Path, reference_run: int, run_id: int,
                      graph_key: str) -> LineDifference | None:
    """The first line where run `run_id`'s wrapper of `graph_key` differs from
    `reference_run`'s; None when either has no such graph or its file is not readable."""
    sides = []
    for run in (reference_run, run_id):
        row = conn.execute(
            """SELECT f.path, r.workspace FROM files f JOIN graphs g ON g.id = f.graph_id JOIN runs r ON r.id = g.run_id
               WHERE g.run_id = ? AND g.key = ? AND f.kind = 'wrapper'""", (run, graph_key)).fetchone()
        text = paths.read_generated(root, row["path"]) if row is not None else None
        if text is None:
            return None
        sides.append((row["path"], comparable_code(text, row["workspace"]).splitlines()))
    (reference_file, reference_lines), (file, lines) = sides
    for index in range(max(len(reference_lines), len(lines))):
        one = reference_lines[index] if index < len(reference_lines) else ""
        other = lines[index] if index < len(lines) else ""
        if one != other or index >= min(len(reference_lines), len(lines)):
            return LineDifference(graph_key, index + 1, one, other, reference_file, file)
    return None


def distributed_run(conn: sqlite3.Connection, run_id: int, root: Path | None = None) -> DistributedRun:
    """`root`: the store's directory, to name where ranks' code differs (code_groups)."""
    rank = rank_of(conn, run_id)
    ranks = job_ranks(conn, rank.job) if rank is not None else []
    graphs = [graph_comm(conn, row) for row in conn.execute(
        "SELECT id, key, compile_id, kind FROM graphs WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()]
    return DistributedRun(run_id=run_id, rank=rank, job_ranks=ranks,
                          code_groups=code_groups(conn, ranks, root) if len(ranks) > 1 else [], graphs=graphs)


def graph_comm(conn: sqlite3.Connection, graph_row) -> GraphComm:
    """One graph's split part, collectives, and compute/communication order."""
    graph_id = graph_row["id"]
    label = f"{graph_row['compile_id']} {graph_row['kind']}"
    split_row = conn.execute("SELECT * FROM graph_splits WHERE graph_id = ?", (graph_id,)).fetchone()
    split = None
    if split_row is not None:
        split = SplitRef(split_row["part"], split_row["parts"], split_row["splitter"],
                         json.loads(split_row["params_json"]), split_row["bucket_bytes"], split_row["cap_bytes"])
    wrapper = conn.execute("SELECT path FROM files WHERE graph_id = ? AND kind = 'wrapper'", (graph_id,)).fetchone()
    rows = conn.execute("SELECT * FROM collectives WHERE graph_id = ? ORDER BY id", (graph_id,)).fetchall()
    collectives = _collective_refs(conn, rows)
    # the order of a graph without communication is left out (a large run's show stays fast)
    order = _order(conn, graph_id, {row["node_id"]: row for row in rows if row["node_id"] is not None}) if rows else []
    return GraphComm(graph=label, graph_key=graph_row["key"], wrapper_file=wrapper["path"] if wrapper else "",
                     split=split, collectives=collectives, order=order, overlap=_overlap(order, collectives))


def collectives_at(conn: sqlite3.Connection, location: Location, line: int) -> list[CollectiveRef]:
    """The collectives a line issues, waits on or was written for: a wrapper line, a
    post-grad graph line, or a model source line (its own nodes)."""
    if location.kind == WRAPPER:
        node_ids = [row[0] for row in conn.execute(
            "SELECT DISTINCT node_id FROM generated_lines WHERE file = ? AND line = ? AND node_id IS NOT NULL",
            (location.path, line))]
    elif location.kind == POST_GRAD and location.graph is not None:
        node_ids = [row[0] for row in conn.execute(
            "SELECT id FROM nodes WHERE graph_id = ? AND stage = 'post' AND graph_line = ?",
            (location.graph.id, line))]
    elif location.kind == SOURCE:
        node_ids = [row[0] for row in conn.execute(
            "SELECT id FROM nodes WHERE run_id = ? AND source_file = ? AND source_line = ? AND stage = 'post'",
            (location.run_id, location.path, line))]
    else:
        return []
    rows = list(select_in(conn, "SELECT * FROM collectives WHERE node_id IN ({}) ORDER BY id", node_ids))
    return _collective_refs(conn, rows)


def has_collectives(conn: sqlite3.Connection, run_id: int) -> bool:
    return conn.execute("SELECT 1 FROM collectives WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is not None


def file_collectives(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, list[CollectiveRef]]:
    """Line -> the collectives a model source file's line issues, waits on or needed: the
    collectives of the nodes whose own line it is, and those whose model line it is (the
    line whose op needed the communication, when a helper's frame is the node's own line).
    A run's collectives are few (a handful per graph): they are read whole."""
    rows = conn.execute("SELECT * FROM collectives WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
    found: dict[int, list[CollectiveRef]] = {}
    for ref in _collective_refs(conn, rows):
        lines = {frame.line for frame in (ref.source, ref.model_line) if frame is not None and frame.file == path}
        for line in sorted(lines):
            found.setdefault(line, []).append(ref)
    return found


# -- reading rows ----------------------------------------------------------------------------


def _rank_ref(row) -> RankRef:
    return RankRef(run_id=row["run_id"], rank=row["rank"], world_size=row["world_size"], job=row["job"],
                   backend=row["backend"], local_rank=row["local_rank"], created=row["created"],
                   target=row["target"])


def _collective_refs(conn: sqlite3.Connection, rows: list) -> list[CollectiveRef]:
    if not rows:
        return []
    nodes = {row["id"]: row for row in select_in(conn, "SELECT * FROM nodes WHERE id IN ({})",
                                                 [row["node_id"] for row in rows if row["node_id"] is not None])}
    stacks: dict[int, list[FrameRef]] = {}
    for frame in select_in(conn, "SELECT * FROM stack_frames WHERE stack_id IN ({}) ORDER BY depth",
                           {node["stack_id"] for node in nodes.values() if node["stack_id"] is not None}):
        stacks.setdefault(frame["stack_id"], []).append(
            FrameRef(frame["file"], frame["line"], frame["function"], frame["code"]))
    graphs = {row["id"]: row for row in select_in(conn, "SELECT id, key, compile_id, kind FROM graphs WHERE id IN ({})",
                                                  {row["graph_id"] for row in rows})}
    wrappers = {row["graph_id"]: row["path"] for row in select_in(
        conn, "SELECT graph_id, path FROM files WHERE kind = 'wrapper' AND graph_id IN ({})", list(graphs))}
    peer_ids = {(row["graph_id"], row["node_name"]): row["node_id"] for row in select_in(
        conn, "SELECT graph_id, node_name, node_id FROM collectives WHERE graph_id IN ({})", list(graphs))}
    call_lines: dict[int, list[int]] = {}
    for line in select_in(conn, "SELECT node_id, line FROM generated_lines WHERE node_id IN ({}) "
                                "AND reason LIKE 'calls extern kernel%' ORDER BY line",
                          {node_id for node_id in [*nodes, *peer_ids.values()] if node_id is not None}):
        call_lines.setdefault(line["node_id"], []).append(line["line"])

    def calls_of(node_id: int | None) -> list[int]:
        return call_lines.get(node_id, []) if node_id is not None else []

    refs = []
    for row in rows:
        node = nodes.get(row["node_id"])
        graph = graphs[row["graph_id"]]
        source = None
        if node is not None and node["source_file"] is not None:
            source = FrameRef(node["source_file"], node["source_line"], node["source_function"], node["source_code"])
        lineage = []
        if node is not None and node["lineage_json"]:
            lineage = [f"{name} ({action})" + (f" from {made_from}" if made_from else "")
                       for name, action, made_from in json.loads(node["lineage_json"])]
        frame = model_line = None
        if row["frame_file"] is not None:
            frame = FrameRef(row["frame_file"], row["frame_line"], row["frame_function"], row["frame_code"])
        if row["model_file"] is not None:
            model_line = FrameRef(row["model_file"], row["model_line"], row["model_function"], row["model_code"])
        refs.append(CollectiveRef(
            graph=f"{graph['compile_id']} {graph['kind']}", graph_key=graph["key"], node=row["node_name"],
            op=row["op"], role=row["role"], peers=json.loads(row["peers_json"]), group=row["group_name"],
            group_size=row["group_size"], reduce_op=row["reduce_op"], bytes=row["bytes"],
            issued_by=row["issued_by"], style=row["style"], frame=frame, redistribute=row["redistribute"],
            module=node["module_path"] if node is not None else "",
            module_class=node["module_class"] if node is not None else "",
            source=source, model_line=model_line or source,
            stack=stacks.get(node["stack_id"], []) if node is not None else [],
            lineage=lineage, wrapper_file=wrappers.get(row["graph_id"], ""),
            wrapper_lines=call_lines.get(row["node_id"], []),
            peer_lines={peer: calls_of(peer_ids.get((row["graph_id"], peer)))
                        for peer in json.loads(row["peers_json"])},
        ))
    return refs


def _order(conn: sqlite3.Connection, graph_id: int, collective_of_node: dict[int, sqlite3.Row]) -> list[OrderStep]:
    calls = conn.execute(
        """SELECT kc.wrapper_line, k.id, k.name, k.kind FROM kernel_calls kc JOIN kernels k ON k.id = kc.kernel_id
           WHERE kc.graph_id = ? ORDER BY kc.wrapper_line""", (graph_id,)).fetchall()
    nodes_of: dict[int, list[int]] = {}
    for row in select_in(conn, "SELECT kernel_id, node_id FROM kernel_nodes WHERE kernel_id IN ({}) "
                               "AND node_id IS NOT NULL ORDER BY position", {call["id"] for call in calls}):
        nodes_of.setdefault(row["kernel_id"], []).append(row["node_id"])
    steps = []
    for call in calls:
        collective = next((collective_of_node[node_id] for node_id in nodes_of.get(call["id"], ())
                           if node_id in collective_of_node), None) if call["kind"] == "extern" else None
        if collective is not None:
            steps.append(OrderStep(call["wrapper_line"], collective["role"], collective["op"], collective["node_name"]))
        else:
            steps.append(OrderStep(call["wrapper_line"], "compute", call["name"].split("#")[0]))
    return steps


def _overlap(order: list[OrderStep], collectives: list[CollectiveRef]) -> dict[str, int]:
    line_of = {step.node: step.line for step in order if step.node}
    found = {}
    for collective in collectives:
        if collective.role != "issue" or collective.node not in line_of:
            continue
        waits = [line_of[peer] for peer in collective.peers if peer in line_of]
        if not waits:
            continue
        start, end = line_of[collective.node], min(waits)
        found[collective.node] = sum(1 for step in order if step.kind == "compute" and start < step.line < end)
    return found


# Where a rank's generated code names its own GPU: `_DeviceGuard(1)`, `set_device(1)`,
# `get_raw_stream(1)`, `stream1` (torch 2.11) and `raw_stream1` (torch 2.13), `index=1` (the
# kernels' device properties), 'cuda:1'.
_DEVICE_INDEX = re.compile(r"(?<=_DeviceGuard\()\d+|(?<=set_device\()\d+|(?<=get_raw_stream\()\d+"
                           r"|(?<=\bstream)\d+|(?<=\braw_stream)\d+|(?<=\bindex=)\d+|(?<=\bcuda:)\d+")
# `# kernel path: <cache>/ab/cabcd....py`: the file is named by a hash of the kernel's source,
# which holds the GPU index (`DeviceProperties(..., index=1, ...)`), so the same kernel compiled
# for GPU 1 has another name. The wrapper embeds the kernel's source itself: the name adds nothing.
_KERNEL_PATH_NAME = re.compile(r"^(\s*# kernel path: ).*$", re.MULTILINE)


def comparable_code(wrapper_text: str, workspace: str) -> str:
    """Generated code as ranks are compared: as its dump hashes it (export.dump.portable_text: no
    cache directories, no workspace path), without the GPU index each rank compiled for and
    without the kernel files' names (hashes of sources that hold that index)."""
    text = _DEVICE_INDEX.sub("N", portable_text(wrapper_text, workspace))
    return _KERNEL_PATH_NAME.sub(r"\1<kernel>", text)


def code_digest(wrapper_text: str, workspace: str) -> str:
    """sha256 of `comparable_code`: equal for ranks that compiled the same code."""
    return hashlib.sha256(comparable_code(wrapper_text, workspace).encode("utf-8")).hexdigest()
