"""Answering "what is this file, and what is this line linked to?".

Every lookup goes through an index (see tables.INDEXES): from a file key to the
run that has it (`files`), from a source line to its nodes (`nodes_by_source`),
from nodes to kernels and generated lines (`kernel_nodes_by_node`,
`lines_by_node`) and back (`lines_by_file_line`, `node_links`). So an answer
costs a handful of index probes, however many kernels the model has.

The chain, top to bottom: source line -> pre-grad node -> post-grad node ->
kernel lines / wrapper lines. A query starts at any of them; its nodes are the
pivot, `up` adds the source lines above them, `down` the kernels and wrapper
lines below them.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from kernelscope.errors import UserError
from kernelscope.store.database.sql import select_in
from kernelscope.store.parts.user_kernels import user_kernel_copies
from kernelscope.store.reading.chain_reader import (
    ChainReader,
    UniqueList,
    add_unique,
    in_module,
    line_keys_of,
    line_refs,
)
from kernelscope.store.reading.folding import fold_modules
from kernelscope.store.reading.locate import check_line, file_lines, one_line
from kernelscope.store.reading.rollup import module_summaries, rollup_to_instances
from kernelscope.store.results import (
    ASM,
    KERNEL,
    POST_GRAD,
    PRE_GRAD,
    SOURCE,
    WRAPPER,
    FileLinks,
    LineLinks,
    Location,
    QueryResult,
)

DIRECTIONS = ("up", "down", "both")


def query(conn: sqlite3.Connection, location: Location, line: int, direction: str = "both",
          module: str | Sequence[str] | None = None, direct_only: bool = False, detail: bool = True,
          rollup: bool = False) -> QueryResult:
    """The chain through `line` of the located file (see the module docstring).

    A source line reaches the nodes it is the direct line of, and (unless
    `direct_only`) the nodes whose call stack passes through it ("via call": the
    line `x = block(x)` reaches every op of the block). `module` keeps only the
    nodes of that module instance and the instances inside it (prefix match on
    the dotted path: `blocks.1` keeps `blocks.1.attn.qkv`, not `blocks.10`); a
    sequence of paths keeps the nodes of any of them (a folded group's members).
    Without `detail`, kernel and wrapper lines are counted, not listed (an outer
    line of a deep model reaches tens of thousands); `rollup` summarizes module
    instances one level below what they share (see rollup_to_instances). Every chain
    also gets those instances folded by shape (`GraphChain.groups`, see folding)."""
    if direction not in DIRECTIONS:
        raise UserError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if location.kind == ASM:
        raise UserError(f"{location.path} is a {location.path.rsplit('.', 1)[-1].upper()} file of kernel "
                        f"{location.kernel}: its lines are answered through their kernel lines (RunView.asm_line)")
    # A generated file's size is stored and its lines' texts are in generated_lines:
    # reading a 200,000-line wrapper on every query cost more than the query.
    lines = file_lines(location) if location.kind == SOURCE or location.line_count is None else None
    check_line(location, line, lines)
    text = lines[line - 1] if lines is not None and line <= len(lines) else ""
    reader = ChainReader(conn)
    result = QueryResult(location=location, line=line, text=text, direction=direction)

    if location.kind == SOURCE:
        rows = reader.nodes_at_source_line(location, line, direct_only)
        pre = [(row, reader.reason_at_source(row)) for row in rows if row["stage"] == "pre"]
        post = [(row, reader.reason_at_source(row)) for row in rows if row["stage"] == "post"]
        post += reader.post_nodes_from_pre([row for row, _ in pre])
    elif location.kind == PRE_GRAD:
        pre = [(row, "defined at this line") for row in reader.nodes_at_graph_line(location, "pre", line)]
        post = reader.post_nodes_from_pre([row for row, _ in pre])
    elif location.kind == POST_GRAD:
        post = [(row, "defined at this line") for row in reader.nodes_at_graph_line(location, "post", line)]
        pre = reader.pre_nodes_of_post([row for row, _ in post])
    else:
        origin_rows = conn.execute(
            "SELECT * FROM generated_lines WHERE file = ? AND line = ? ORDER BY origin_index, id",
            (location.path, line),  # a generated file's key names its run
        ).fetchall()
        result.origins = [grouped.ref for grouped in line_refs(origin_rows, reader)]
        if origin_rows and not text:
            result.text = origin_rows[0]["text"]
        node_ids = [row["node_id"] for row in origin_rows if row["node_id"] is not None]
        reasons: dict[int, list[str]] = {}
        for row in origin_rows:
            if row["node_id"] is not None:
                reasons.setdefault(row["node_id"], []).append(row["reason"])
        post = [(row, "; ".join(dict.fromkeys(reasons[row["id"]]))) for row in reader.nodes_by_id(node_ids)]
        pre = reader.pre_nodes_of_post([row for row, _ in post])

    if lines is None and not result.text:
        result.text = one_line(location, line)
    result.user_kernels = user_kernel_copies(conn, location, line, reader.graph)
    if module is not None:
        modules = [module] if isinstance(module, str) else list(module)
        pre = [(row, reason) for row, reason in pre if any(in_module(row["module_path"], m) for m in modules)]
        post = [(row, reason) for row, reason in post if any(in_module(row["module_path"], m) for m in modules)]
    chains = reader.chains(pre, post)
    if direction in ("up", "both"):
        for chain in chains.values():
            chain.sources = reader.sources(chain)
    if direction in ("down", "both"):
        if location.kind in (SOURCE, PRE_GRAD, POST_GRAD):
            reader.add_down(chains, [row for row, _ in post], detail)
        elif location.kind == WRAPPER:
            reader.add_launched_kernels(chains, location, line)
    for graph_id, chain in chains.items():
        line_keys = line_keys_of(chain) if detail else reader.line_keys.get(graph_id, {})
        instances = rollup_to_instances(node.module for node in chain.pre_nodes + chain.post_nodes)
        chain.modules = module_summaries(chain, line_keys, instances if rollup else None)
        chain.groups = fold_modules(chain.modules if rollup else module_summaries(chain, line_keys, instances))
        chain.generated_lines = len({key for keys in line_keys.values() for key in keys})
    result.graphs = [chains[graph_id] for graph_id in sorted(chains)]
    return result


def lines_for_file(conn: sqlite3.Connection, location: Location) -> FileLinks:
    """Every linked line of the located file, in one call (for code lenses / inlay hints)."""
    reader = ChainReader(conn)
    per_line: dict[int, LineLinks] = {}

    def entry(line: int) -> LineLinks:
        if line not in per_line:
            per_line[line] = LineLinks(line=line, graphs=UniqueList(), kernels=UniqueList(),
                                       nodes=UniqueList(), reasons=UniqueList())
        return per_line[line]

    if location.kind in (SOURCE, PRE_GRAD, POST_GRAD):
        if location.kind == SOURCE:
            rows = conn.execute(
                "SELECT * FROM nodes WHERE source_file = ? AND run_id = ? ORDER BY id",
                (location.path, location.run_id),
            ).fetchall()
            line_of = {row["id"]: [row["source_line"]] for row in rows}
            reason_of = {row["id"]: row["source_via"] for row in rows}
            for row, outer_line in reader.nodes_called_from_file(location):
                if row["id"] not in line_of:
                    rows.append(row)
                    line_of[row["id"]] = []
                if outer_line not in line_of[row["id"]]:
                    line_of[row["id"]].append(outer_line)
        else:
            stage = "pre" if location.kind == PRE_GRAD else "post"
            rows = conn.execute(
                "SELECT * FROM nodes WHERE graph_id = ? AND stage = ? AND graph_line > 0 ORDER BY id",
                (location.require_graph().id, stage),
            ).fetchall()
            line_of = {row["id"]: [row["graph_line"]] for row in rows}
            reason_of = {row["id"]: "defined at this line" for row in rows}
        pre_rows = [row for row in rows if row["stage"] == "pre"]
        post_of: dict[int, set[int]] = {row["id"]: {row["id"]} for row in rows if row["stage"] == "post"}
        for row in pre_rows:
            post_of[row["id"]] = set()
        for link in select_in(conn, "SELECT post_node_id, pre_node_id FROM node_links WHERE pre_node_id IN ({})",
                              [row["id"] for row in pre_rows]):
            post_of[link["pre_node_id"]].add(link["post_node_id"])
        all_post = {post_id for post_ids in post_of.values() for post_id in post_ids}
        kernels_of_post: dict[int, set[str]] = {}
        for row in select_in(conn, "SELECT kn.node_id, k.name FROM kernel_nodes kn JOIN kernels k "
                                    "ON k.id = kn.kernel_id WHERE kn.node_id IN ({})", all_post):
            kernels_of_post.setdefault(row["node_id"], set()).add(row["name"])
        for row in rows:
            graph = reader.graph(row["graph_id"])
            for line in line_of[row["id"]]:
                links = entry(line)
                add_unique(links.graphs, graph.title)
                add_unique(links.nodes, row["name"])
                direct = location.kind != SOURCE or (row["source_file"], row["source_line"]) == (location.path, line)
                add_unique(links.reasons, reason_of[row["id"]] if direct else "via call")
                for post_id in post_of[row["id"]]:
                    for name in sorted(kernels_of_post.get(post_id, ())):
                        add_unique(links.kernels, name)
    else:
        graph = location.require_graph()
        for row in conn.execute(
            "SELECT line, node_name, reason FROM generated_lines WHERE file = ? ORDER BY line, origin_index, id",
            (location.path,),
        ):
            links = entry(row["line"])
            add_unique(links.graphs, graph.title)
            if row["node_name"] is not None:
                add_unique(links.nodes, row["node_name"])
            add_unique(links.reasons, row["reason"])
            if location.kind == KERNEL:
                add_unique(links.kernels, location.kernel)
        if location.kind == WRAPPER:
            for row in conn.execute(
                "SELECT kc.wrapper_line, k.name FROM kernel_calls kc JOIN kernels k ON k.id = kc.kernel_id "
                "WHERE kc.graph_id = ? ORDER BY kc.wrapper_line, k.position",
                (graph.id,),
            ):
                links = entry(row["wrapper_line"])
                add_unique(links.graphs, graph.title)
                add_unique(links.kernels, row["name"])
    return FileLinks(location=location, lines=[per_line[line] for line in sorted(per_line)])
