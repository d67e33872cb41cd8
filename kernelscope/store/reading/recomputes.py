"""What a line's answer says its backward recomputes: the recomputed backward nodes a model,
graph, kernel or wrapper line reaches (store/parts/recompute.py keeps the table and reads
nodes by id; this module finds a line's nodes through the query chain's reader)."""
from __future__ import annotations

import sqlite3

from kernelscope.store.parts.recompute import recomputes_of, run_recomputes_anything
from kernelscope.store.reading.chain_reader import ChainReader
from kernelscope.store.results import KERNEL, POST_GRAD, PRE_GRAD, SOURCE, WRAPPER, Location, RecomputeRef


def recomputes_at(conn: sqlite3.Connection, location: Location, line: int) -> list[RecomputeRef]:
    """The recomputed backward nodes a line reaches: a model source line's own nodes and
    those it calls (`x = checkpoint(block, x)` reaches the whole block), a post-grad
    graph's line, a pre-grad line's post-grad nodes, or a kernel or wrapper line's nodes."""
    if not run_recomputes_anything(conn, location.run_id):
        return []  # most runs recompute nothing: one index probe, not the line's nodes
    reader = ChainReader(conn)
    if location.kind == SOURCE:
        rows = reader.nodes_at_source_line(location, line, direct_only=False)
        node_ids = [row["id"] for row in rows if row["stage"] == "post"]
        node_ids += [row["id"] for row, _ in reader.post_nodes_from_pre([row for row in rows if row["stage"] == "pre"])]
    elif location.kind == POST_GRAD and location.graph is not None:
        node_ids = [row["id"] for row in reader.nodes_at_graph_line(location, "post", line)]
    elif location.kind == PRE_GRAD and location.graph is not None:
        pre = reader.nodes_at_graph_line(location, "pre", line)
        node_ids = [row["id"] for row, _ in reader.post_nodes_from_pre(pre)]
    elif location.kind in (KERNEL, WRAPPER):
        node_ids = [row[0] for row in conn.execute(
            "SELECT DISTINCT node_id FROM generated_lines WHERE file = ? AND line = ? AND node_id IS NOT NULL",
            (location.path, line))]
    else:
        return []
    found = recomputes_of(conn, set(node_ids))
    return [found[node_id] for node_id in sorted(found)]
