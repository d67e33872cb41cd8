"""Higher-order ops' subgraphs as the store answers them: which graph is a subgraph
(`torch.cond`'s true branch, a nested compile region), of which parent graph, called from
which of the parent's nodes, and its label.

Reads database/tables.py's SUBGRAPH_TABLES (graph_subgraphs), which the writer fills from
each GraphRecord's `subgraph` (engine/subgraphs.py); looked up by run (subgraphs_by_run) or
by graph (its primary key). A store older than schema 5, opened read-only, has no such
table: its runs read as having no subgraph (`_rows`: no lookup of the schema per query).
"""
from __future__ import annotations

import json
import sqlite3

from kernelscope.run_record import GraphRecord
from kernelscope.store.database.sql import rows_if_table as _rows
from kernelscope.store.results import SubgraphRef


def write_subgraphs(conn: sqlite3.Connection, run_id: int, graphs: list[GraphRecord], graph_ids: list[int]) -> None:
    """One row per subgraph of the run, its parent found by key among the run's graphs."""
    id_of = {graph.key: graph_id for graph, graph_id in zip(graphs, graph_ids)}
    conn.executemany(
        """INSERT INTO graph_subgraphs (graph_id, run_id, parent_graph_id, name, op, role, call_sites_json, label)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        [(graph_id, run_id, id_of.get(graph.subgraph.parent), graph.subgraph.name, graph.subgraph.op,
          graph.subgraph.role, json.dumps(graph.subgraph.call_sites), graph.subgraph.label)
         for graph, graph_id in zip(graphs, graph_ids) if graph.subgraph is not None],
    )


def subgraphs_of_run(conn: sqlite3.Connection, run_id: int) -> dict[int, SubgraphRef]:
    """Graph id -> what it is a subgraph of, for every subgraph of the run."""
    rows = _rows(conn, """SELECT s.graph_id, s.name, s.op, s.role, s.call_sites_json, s.label, p.key AS parent_key
                          FROM graph_subgraphs s LEFT JOIN graphs p ON p.id = s.parent_graph_id
                          WHERE s.run_id = ?""", (run_id,))
    return {row["graph_id"]: SubgraphRef(name=row["name"], op=row["op"], role=row["role"],
                                         parent=row["parent_key"] or "", call_sites=json.loads(row["call_sites_json"]),
                                         label=row["label"])
            for row in rows}


def subgraph_labels(conn: sqlite3.Connection, run_id: int) -> dict[int, str]:
    """Graph id -> label, for every subgraph of the run."""
    return {row[0]: row[1] for row in _rows(conn, "SELECT graph_id, label FROM graph_subgraphs WHERE run_id = ?",
                                            (run_id,))}


def graph_label(conn: sqlite3.Connection, graph_id: int) -> str:
    """A subgraph's label; '' for a graph that is no subgraph."""
    rows = _rows(conn, "SELECT label FROM graph_subgraphs WHERE graph_id = ?", (graph_id,))
    return rows[0][0] if rows else ""


def dump_subgraph(conn: sqlite3.Connection, graph_id: int) -> dict | None:
    """The dump's `graph.subgraph`: null for a graph that is no subgraph."""
    rows = _rows(conn, """SELECT s.*, p.key AS parent_key FROM graph_subgraphs s
                          LEFT JOIN graphs p ON p.id = s.parent_graph_id WHERE s.graph_id = ?""", (graph_id,))
    if not rows:
        return None
    row = rows[0]
    return {"name": row["name"], "op": row["op"], "role": row["role"], "parent": row["parent_key"] or "",
            "call_sites": sorted(json.loads(row["call_sites_json"])), "label": row["label"]}

