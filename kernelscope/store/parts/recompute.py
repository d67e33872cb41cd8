"""Recomputed backward nodes as the store answers them: which backward post-grad nodes
compute a forward op again (activation checkpointing, or the partitioner's choice), which
forward node and line they recompute, and the backward kernels that do it.

Reads database/tables.py's RECOMPUTE_TABLES (recomputed_nodes), which the writer fills from
each backward FxNode's `recompute` / `recomputed_from` (engine/recompute.py). A store older
than schema 6, opened read-only, has no such table: its runs read as recomputing nothing.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from kernelscope.run_record import GraphRecord
from kernelscope.store.database.sql import rows_if_table as _rows
from kernelscope.store.database.sql import select_in
from kernelscope.store.reading.locate import graph_ref
from kernelscope.store.results import RecomputeRef, RecomputeSummary

NOT_RECOMPUTED = {"recompute": "", "recomputed_from": ""}


def write_recomputes(conn: sqlite3.Connection, run_id: int, graphs: list[GraphRecord],
                     post_node_ids: list[dict[str, int]]) -> None:
    """One row per recomputed backward node; its forward twin found in the forward graph of
    the same compile (`post_node_ids`: per graph, post-grad node name -> nodes.id)."""
    forwards = {(graph.frame_id, graph.frame_compile_id, graph.attempt): ids
                for graph, ids in zip(graphs, post_node_ids)
                if graph.kind == "forward" and graph.subgraph is None and graph.split is None}
    rows = []
    for graph, ids in zip(graphs, post_node_ids):
        forward_ids = forwards.get((graph.frame_id, graph.frame_compile_id, graph.attempt), {})
        rows += [(ids[node.name], run_id, node.recompute, forward_ids.get(node.recomputed_from),
                  node.recomputed_from)
                 for node in graph.post_grad_nodes if node.recompute and node.name in ids]
    conn.executemany(
        """INSERT INTO recomputed_nodes (node_id, run_id, why, forward_node_id, forward_node_name)
           VALUES (?, ?, ?, ?, ?)""", rows)


def recomputes_of(conn: sqlite3.Connection, node_ids: Iterable[int]) -> dict[int, RecomputeRef]:
    """Backward node id -> what it recomputes, for those of `node_ids` that recompute."""
    rows = _rows(conn, """SELECT r.node_id, r.why, r.forward_node_name, b.name, b.target, b.graph_id,
                                 f.graph_id AS forward_graph_id, f.source_file, f.source_line
                          FROM recomputed_nodes r JOIN nodes b ON b.id = r.node_id
                          LEFT JOIN nodes f ON f.id = r.forward_node_id
                          WHERE r.node_id IN ({})""", list(node_ids))
    if not rows:
        return {}
    kernels: dict[int, list[str]] = {}
    for row in select_in(conn, """SELECT kn.node_id, k.name FROM kernel_nodes kn JOIN kernels k ON k.id = kn.kernel_id
                                  WHERE kn.node_id IN ({}) ORDER BY k.position""", [row["node_id"] for row in rows]):
        kernels.setdefault(row["node_id"], []).append(row["name"])
    titles: dict[int, str] = {}

    def title(graph_id: int | None) -> str:
        if graph_id is None:
            return ""
        if graph_id not in titles:
            titles[graph_id] = graph_ref(conn, graph_id).title
        return titles[graph_id]

    return {row["node_id"]: RecomputeRef(
        graph=title(row["graph_id"]), node=row["name"], target=row["target"], why=row["why"],
        forward_graph=title(row["forward_graph_id"]), forward_node=row["forward_node_name"],
        forward_source=f"{row['source_file']}:{row['source_line']}" if row["source_file"] else "",
        kernels=kernels.get(row["node_id"], []))
        for row in rows}


def run_recomputes_anything(conn: sqlite3.Connection, run_id: int) -> bool:
    """Does the run recompute any node? (Most do not: one index probe.)"""
    return bool(_rows(conn, "SELECT 1 FROM recomputed_nodes WHERE run_id = ? LIMIT 1", [run_id]))


def recompute_summaries(conn: sqlite3.Connection, run_id: int) -> dict[int, RecomputeSummary]:
    """Backward graph id -> what it recomputes, for every graph of the run that recomputes."""
    rows = _rows(conn, """SELECT n.graph_id, r.node_id, r.why, f.source_file, f.source_line
                          FROM recomputed_nodes r JOIN nodes n ON n.id = r.node_id
                          LEFT JOIN nodes f ON f.id = r.forward_node_id
                          WHERE r.run_id = ? ORDER BY r.node_id""", [run_id])
    found: dict[int, RecomputeSummary] = {}
    graph_of: dict[int, int] = {}
    for row in rows:
        summary = found.setdefault(row["graph_id"], RecomputeSummary(nodes={}, forward_lines=[], kernels=[]))
        summary.nodes[row["why"]] = summary.nodes.get(row["why"], 0) + 1
        if row["source_file"] and f"{row['source_file']}:{row['source_line']}" not in summary.forward_lines:
            summary.forward_lines.append(f"{row['source_file']}:{row['source_line']}")
        graph_of[row["node_id"]] = row["graph_id"]
    for row in select_in(conn, """SELECT DISTINCT kn.node_id, k.name, k.position FROM kernel_nodes kn
                                  JOIN kernels k ON k.id = kn.kernel_id WHERE kn.node_id IN ({})""", graph_of):
        kernels = found[graph_of[row["node_id"]]].kernels
        if row["name"] not in kernels:
            kernels.append(row["name"])
    for summary in found.values():
        summary.forward_lines.sort(key=lambda text: (text.rpartition(":")[0], int(text.rpartition(":")[2])))
    return found


def dump_recomputes(conn: sqlite3.Connection, graph_id: int) -> dict[int, dict]:
    """Node id -> the dump's `recompute` and `recomputed_from` of a graph's recomputed nodes."""
    rows = _rows(conn, """SELECT r.node_id, r.why, r.forward_node_name FROM recomputed_nodes r
                          JOIN nodes n ON n.id = r.node_id WHERE n.graph_id = ?""", [graph_id])
    return {row["node_id"]: {"recompute": row["why"], "recomputed_from": row["forward_node_name"]} for row in rows}

