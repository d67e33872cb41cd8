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

import itertools
import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernelscope.errors import StoreError, UserError
from kernelscope.store import paths
from kernelscope.store.folding import fold_modules
from kernelscope.store.rollup import module_summaries, rollup_to_instances
from kernelscope.store.sql import select_in
from kernelscope.store.results import (
    ASM,
    KERNEL,
    POST_GRAD,
    PRE_GRAD,
    SOURCE,
    WRAPPER,
    FileLinks,
    FrameRef,
    GraphChain,
    GraphRef,
    KernelRef,
    LineLinks,
    LineRef,
    Location,
    NodeRef,
    QueryResult,
    SourceRef,
)

DIRECTIONS = ("up", "down", "both")


def locate(conn: sqlite3.Connection, root: Path, key: str, run_id: int | None = None) -> Location:
    """Which run has the file `key` (the latest, unless `run_id` is given) and what it is there."""
    sql = """SELECT f.path, f.kind, f.run_id, f.graph_id, f.line_count, k.name AS kernel_name,
                    r.workspace
             FROM files f JOIN runs r ON r.id = f.run_id
             LEFT JOIN kernels k ON k.id = f.kernel_id
             WHERE f.path = ?"""
    row = _latest_file_row(conn, sql, key, run_id)
    if row is None:
        stage_file = _locate_stage_file(conn, root, key, run_id)
        if stage_file is not None:
            return stage_file
        raise _not_found(conn, key, run_id)
    if row["kind"] == SOURCE:
        absolute = key if Path(key).is_absolute() else str(Path(row["workspace"]) / key)
    else:
        absolute = str(paths.generated_path(root, key))
    return Location(
        path=key,
        kind=row["kind"],
        run_id=row["run_id"],
        absolute_path=absolute,
        graph=None if row["graph_id"] is None else _graph_ref(conn, row["graph_id"]),
        kernel=row["kernel_name"],
        line_count=row["line_count"],
    )


def _latest_file_row(conn: sqlite3.Connection, sql: str, key: str, run_id: int | None):
    """The row of `sql` (a query of files `f` by `f.path = ?`) for `key` in run `run_id`, or
    in the latest run that has it."""
    params: tuple = (key,)
    if run_id is not None:
        sql += " AND f.run_id = ?"
        params += (run_id,)
    return conn.execute(sql + " ORDER BY f.run_id DESC LIMIT 1", params).fetchone()


def _locate_stage_file(conn: sqlite3.Connection, root: Path, key: str, run_id: int | None) -> Location | None:
    """A kernel's stage file (`runs/3/asm/<graph>/<kernel>/<kernel>.sass`), built below Triton."""
    sql = """SELECT f.run_id, f.line_count, k.name, k.graph_id FROM asm_files f JOIN kernels k ON k.id = f.kernel_id
             WHERE f.path = ?"""
    row = _latest_file_row(conn, sql, key, run_id)
    if row is None:
        return None
    return Location(path=key, kind=ASM, run_id=row["run_id"], absolute_path=str(paths.generated_path(root, key)),
                    graph=_graph_ref(conn, row["graph_id"]), kernel=row["name"], line_count=row["line_count"])


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
    reader = _Reader(conn)
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
        result.origins = [grouped.ref for grouped in _line_refs(origin_rows, reader)]
        if origin_rows and not text:
            result.text = origin_rows[0]["text"]
        node_ids = [row["node_id"] for row in origin_rows if row["node_id"] is not None]
        reasons = {}
        for row in origin_rows:
            if row["node_id"] is not None:
                reasons.setdefault(row["node_id"], []).append(row["reason"])
        post = [(row, "; ".join(dict.fromkeys(reasons[row["id"]]))) for row in reader.nodes_by_id(node_ids)]
        pre = reader.pre_nodes_of_post([row for row, _ in post])

    if lines is None and not result.text:
        result.text = _one_line(location, line)
    if module is not None:
        modules = [module] if isinstance(module, str) else list(module)
        pre = [(row, reason) for row, reason in pre if any(_in_module(row["module_path"], m) for m in modules)]
        post = [(row, reason) for row, reason in post if any(_in_module(row["module_path"], m) for m in modules)]
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
        line_keys = _line_keys_of(chain) if detail else reader.line_keys.get(graph_id, {})
        instances = rollup_to_instances(node.module for node in chain.pre_nodes + chain.post_nodes)
        chain.modules = module_summaries(chain, line_keys, instances if rollup else None)
        chain.groups = fold_modules(chain.modules if rollup else module_summaries(chain, line_keys, instances))
        chain.generated_lines = len({key for keys in line_keys.values() for key in keys})
    result.graphs = [chains[graph_id] for graph_id in sorted(chains)]
    return result


def lines_for_file(conn: sqlite3.Connection, location: Location) -> FileLinks:
    """Every linked line of the located file, in one call (for code lenses / inlay hints)."""
    reader = _Reader(conn)
    per_line: dict[int, LineLinks] = {}

    def entry(line: int) -> LineLinks:
        if line not in per_line:
            per_line[line] = LineLinks(line=line, graphs=_UniqueList(), kernels=_UniqueList(),
                                       nodes=_UniqueList(), reasons=_UniqueList())
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
                (location.graph.id, stage),
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
                _add_unique(links.graphs, f"{graph.compile_id} {graph.kind}")
                _add_unique(links.nodes, row["name"])
                direct = location.kind != SOURCE or (row["source_file"], row["source_line"]) == (location.path, line)
                _add_unique(links.reasons, reason_of[row["id"]] if direct else "via call")
                for post_id in post_of[row["id"]]:
                    for name in sorted(kernels_of_post.get(post_id, ())):
                        _add_unique(links.kernels, name)
    else:
        graph = location.graph
        for row in conn.execute(
            "SELECT line, node_name, reason FROM generated_lines WHERE file = ? ORDER BY line, origin_index, id",
            (location.path,),
        ):
            links = entry(row["line"])
            _add_unique(links.graphs, f"{graph.compile_id} {graph.kind}")
            if row["node_name"] is not None:
                _add_unique(links.nodes, row["node_name"])
            _add_unique(links.reasons, row["reason"])
            if location.kind == KERNEL:
                _add_unique(links.kernels, location.kernel)
        if location.kind == WRAPPER:
            for row in conn.execute(
                "SELECT kc.wrapper_line, k.name FROM kernel_calls kc JOIN kernels k ON k.id = kc.kernel_id "
                "WHERE kc.graph_id = ? ORDER BY kc.wrapper_line, k.position",
                (graph.id,),
            ):
                links = entry(row["wrapper_line"])
                _add_unique(links.graphs, f"{graph.compile_id} {graph.kind}")
                _add_unique(links.kernels, row["name"])
    return FileLinks(location=location, lines=[per_line[line] for line in sorted(per_line)])


# -- helpers ---------------------------------------------------------------------


class _Reader:
    """Index lookups shared by `query` and `lines_for_file`, with per-call caches."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._graphs: dict[int, GraphRef] = {}
        self._graph_files: dict[tuple[int, str], str | None] = {}
        self._stacks: dict[int, list[FrameRef]] = {}
        self.via: dict[int, str] = {}  # node id -> "direct" | "call" (source-line queries)
        # graph id -> post-grad node -> its generated lines, when lines are counted, not listed
        self.line_keys: dict[int, dict[str, set[tuple[str, int]]]] = {}

    def graph(self, graph_id: int) -> GraphRef:
        if graph_id not in self._graphs:
            self._graphs[graph_id] = _graph_ref(self.conn, graph_id)
        return self._graphs[graph_id]

    def graph_file(self, graph_id: int, kind: str) -> str | None:
        if (graph_id, kind) not in self._graph_files:
            row = self.conn.execute(
                "SELECT path FROM files WHERE graph_id = ? AND kind = ?", (graph_id, kind)
            ).fetchone()
            self._graph_files[(graph_id, kind)] = None if row is None else row["path"]
        return self._graph_files[(graph_id, kind)]

    def nodes_at_source_line(self, location: Location, line: int, direct_only: bool) -> list[sqlite3.Row]:
        """The nodes whose direct line this is, then (unless direct_only) those that
        reach it through an outer frame of their call stack; `self.via` remembers which."""
        rows = self.conn.execute(
            "SELECT * FROM nodes WHERE source_file = ? AND source_line = ? AND run_id = ? ORDER BY id",
            (location.path, line, location.run_id),
        ).fetchall()
        for row in rows:
            self.via[row["id"]] = "direct"
        if direct_only:
            return rows
        outer_stacks = [frame["stack_id"] for frame in self.conn.execute(
            "SELECT f.stack_id FROM stack_frames f JOIN stacks s ON s.id = f.stack_id "
            "WHERE f.run_id = ? AND f.file = ? AND f.line = ? AND f.depth < s.size - 1",
            (location.run_id, location.path, line),
        )]
        called = [row for row in select_in(self.conn, "SELECT * FROM nodes WHERE stack_id IN ({})", outer_stacks)
                  if row["id"] not in self.via]
        for row in called:
            self.via[row["id"]] = "call"
        return sorted(rows + called, key=lambda row: row["id"])

    def nodes_called_from_file(self, location: Location) -> list[tuple[sqlite3.Row, int]]:
        """(node, line) for every node that one of the file's lines calls into (an
        outer frame of the node's stack): what code lenses show on `x = block(x)`."""
        frames = self.conn.execute(
            "SELECT f.stack_id, f.line FROM stack_frames f JOIN stacks s ON s.id = f.stack_id "
            "WHERE f.run_id = ? AND f.file = ? AND f.depth < s.size - 1",
            (location.run_id, location.path),
        ).fetchall()
        lines_of_stack: dict[int, list[int]] = {}
        for frame in frames:
            lines_of_stack.setdefault(frame["stack_id"], []).append(frame["line"])
        rows = select_in(self.conn, "SELECT * FROM nodes WHERE stack_id IN ({})", lines_of_stack)
        return [(row, line) for row in sorted(rows, key=lambda row: row["id"]) for line in lines_of_stack[row["stack_id"]]]

    def reason_at_source(self, row: sqlite3.Row) -> str:
        if self.via.get(row["id"]) == "call":
            return "via call"
        return row["source_via"] or "source line"

    def stacks(self, stack_ids: Iterable[int | None]) -> dict[int, list[FrameRef]]:
        """The frames of these call stacks, outermost first (cached per query)."""
        wanted = {stack_id for stack_id in stack_ids if stack_id is not None and stack_id not in self._stacks}
        for frame in select_in(self.conn, "SELECT * FROM stack_frames WHERE stack_id IN ({}) ORDER BY depth",
                               wanted):
            self._stacks.setdefault(frame["stack_id"], []).append(
                FrameRef(file=frame["file"], line=frame["line"], function=frame["function"], code=frame["code"]))
        return self._stacks

    def nodes_by_id(self, node_ids: Iterable[int]) -> list[sqlite3.Row]:
        rows = select_in(self.conn, "SELECT * FROM nodes WHERE id IN ({})", set(node_ids))
        return sorted(rows, key=lambda row: row["id"])

    def nodes_at_graph_line(self, location: Location, stage: str, line: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM nodes WHERE graph_id = ? AND stage = ? AND graph_line = ? ORDER BY id",
            (location.graph.id, stage, line),
        ).fetchall()

    def post_nodes_from_pre(self, pre_rows: list[sqlite3.Row]) -> list[tuple[sqlite3.Row, str]]:
        """The post-grad nodes each pre-grad node became, with the reason."""
        name_of = {row["id"]: row["name"] for row in pre_rows}
        links = select_in(self.conn, "SELECT post_node_id, pre_node_id FROM node_links WHERE pre_node_id IN ({})",
                          name_of)
        reasons: dict[int, list[str]] = {}
        for link in links:
            reasons.setdefault(link["post_node_id"], []).append(f"from pre-grad {name_of[link['pre_node_id']]}")
            pre_via = self.via.get(link["pre_node_id"])
            if pre_via and self.via.get(link["post_node_id"]) != "direct":
                self.via[link["post_node_id"]] = pre_via
        return [(row, "; ".join(reasons[row["id"]])) for row in self.nodes_by_id(reasons)]

    def pre_nodes_of_post(self, post_rows: list[sqlite3.Row]) -> list[tuple[sqlite3.Row, str]]:
        """The pre-grad nodes the post-grad nodes came from, with the reason."""
        name_of = {row["id"]: row["name"] for row in post_rows}
        links = select_in(
            self.conn,
            "SELECT post_node_id, pre_node_id FROM node_links WHERE pre_node_id IS NOT NULL AND post_node_id IN ({})",
            name_of,
        )
        reasons: dict[int, list[str]] = {}
        for link in links:
            reasons.setdefault(link["pre_node_id"], []).append(f"became post-grad {name_of[link['post_node_id']]}")
        return [(row, "; ".join(reasons[row["id"]])) for row in self.nodes_by_id(reasons)]

    def node_ref(self, row: sqlite3.Row, reason: str) -> NodeRef:
        kind = PRE_GRAD if row["stage"] == "pre" else POST_GRAD
        lineage = json.loads(row["lineage_json"]) if row["lineage_json"] else []
        return NodeRef(
            stage=row["stage"],
            name=row["name"],
            op=row["op"],
            target=row["target"],
            graph_file=self.graph_file(row["graph_id"], kind),
            graph_line=row["graph_line"],
            source=_source_ref(row, [row["name"]]),
            reason=reason,
            stack=list(self._stacks.get(row["stack_id"], [])),  # loaded for all nodes by chains()
            module=row["module_path"],
            module_class=row["module_class"],
            via=self.via.get(row["id"], ""),
            lineage=[_lineage_text(*step) for step in lineage],
        )

    def chains(self, pre: list, post: list) -> dict[int, GraphChain]:
        """Group (node row, reason) pairs by graph; a node reached twice keeps both reasons."""
        chains: dict[int, GraphChain] = {}
        refs: dict[int, NodeRef] = {}
        self.stacks(row["stack_id"] for rows in (pre, post) for row, _ in rows)
        for rows, stage in ((pre, "pre"), (post, "post")):
            for row, reason in rows:
                if row["id"] in refs:
                    ref = refs[row["id"]]
                    if reason not in ref.reason.split("; "):
                        ref.reason = f"{ref.reason}; {reason}"
                    continue
                graph_id = row["graph_id"]
                if graph_id not in chains:
                    chains[graph_id] = GraphChain(graph=self.graph(graph_id))
                refs[row["id"]] = ref = self.node_ref(row, reason)
                target = chains[graph_id].pre_nodes if stage == "pre" else chains[graph_id].post_nodes
                target.append(ref)
        for chain in chains.values():
            chain.pre_nodes.sort(key=lambda node: (node.graph_line, node.name))
            chain.post_nodes.sort(key=lambda node: (node.graph_line, node.name))
        return chains

    def sources(self, chain: GraphChain) -> list[SourceRef]:
        """The distinct source lines the chain's nodes point at."""
        by_line: dict[tuple[str, int], SourceRef] = {}
        for node in chain.pre_nodes + chain.post_nodes:
            if node.source is None:
                continue
            source = node.source
            key = (source.file, source.line)
            if key not in by_line:
                by_line[key] = SourceRef(file=source.file, line=source.line, function=source.function,
                                         code=source.code, nodes=[], reason="")
            ref = by_line[key]
            _add_unique(ref.nodes, node.name)
            reasons = [reason for reason in ref.reason.split("; ") if reason]
            if source.reason and source.reason not in reasons:
                ref.reason = "; ".join(reasons + [source.reason])
        return [by_line[key] for key in sorted(by_line)]

    def add_down(self, chains: dict[int, GraphChain], post_rows: list[sqlite3.Row], detail: bool = True) -> None:
        """Add the kernels of the post-grad nodes to their chains, with their kernel and
        wrapper lines (`detail`), or only the lines' keys per node (`self.line_keys`)."""
        post_ids = {row["id"] for row in post_rows}
        if not post_ids:
            return
        kernel_nodes: dict[int, dict[str, None]] = {}
        for row in select_in(self.conn, "SELECT kernel_id, node_name FROM kernel_nodes WHERE node_id IN ({})",
                             post_ids):
            kernel_nodes.setdefault(row["kernel_id"], {})[row["node_name"]] = None
        if detail:
            line_rows = select_in(self.conn, "SELECT * FROM generated_lines WHERE node_id IN ({})", post_ids)
            for row in line_rows:
                if row["kernel_id"] is not None:
                    kernel_nodes.setdefault(row["kernel_id"], {})
        else:  # from the covering index alone: (node, file, line) of every line below the nodes
            line_rows = select_in(self.conn, "SELECT node_id, file, line FROM generated_lines WHERE node_id IN ({})",
                                  post_ids, plain=True)
        kernels = {row["id"]: row for row in select_in(self.conn, "SELECT * FROM kernels WHERE id IN ({})",
                                                       kernel_nodes)}
        calls = select_in(self.conn, "SELECT kernel_id, wrapper_line FROM kernel_calls WHERE kernel_id IN ({})",
                          kernel_nodes)
        refs: dict[int, KernelRef] = {}
        for kernel_id in sorted(kernels, key=lambda k: (kernels[k]["graph_id"], kernels[k]["position"])):
            kernel = kernels[kernel_id]
            refs[kernel_id] = ref = KernelRef(
                name=kernel["name"],
                kind=kernel["kind"],
                file=kernel["file"],
                nodes=sorted(kernel_nodes[kernel_id]),
                reason=_kernel_reason(kernel["kind"]),
            )
            chains[kernel["graph_id"]].kernels.append(ref)
        if not detail:
            node_of = {row["id"]: (row["graph_id"], row["name"]) for row in post_rows}
            for node_id, file, line in line_rows:
                graph_id, name = node_of[node_id]
                self.line_keys.setdefault(graph_id, {}).setdefault(name, set()).add((file, line))
            for call in calls:
                kernel = kernels[call["kernel_id"]]
                keys = self.line_keys.setdefault(kernel["graph_id"], {})
                key = (self.graph_file(kernel["graph_id"], WRAPPER) or "", call["wrapper_line"])
                for name in refs[call["kernel_id"]].nodes:
                    keys.setdefault(name, set()).add(key)
            return
        kernel_lines = [row for row in line_rows if row["kernel_id"] is not None]
        for line_ref in _line_refs(kernel_lines, self):
            refs[line_ref.kernel_id].lines.append(line_ref.ref)
        for call in sorted(calls, key=lambda row: row["wrapper_line"]):
            kernel = kernels[call["kernel_id"]]
            reason = "calls extern kernel" if kernel["kind"] == "extern" else "launches kernel"
            refs[call["kernel_id"]].calls.append(self.wrapper_line(kernel["graph_id"], call["wrapper_line"], reason))
        wrapper_lines = [row for row in line_rows if row["kernel_id"] is None]
        for line_ref in _line_refs(wrapper_lines, self):
            chains[line_ref.graph_id].wrapper_lines.append(line_ref.ref)

    def add_launched_kernels(self, chains: dict[int, GraphChain], location: Location, line: int) -> None:
        """Down from a wrapper line: the kernels it launches or calls."""
        rows = self.conn.execute(
            "SELECT k.* FROM kernel_calls kc JOIN kernels k ON k.id = kc.kernel_id "
            "WHERE kc.graph_id = ? AND kc.wrapper_line = ? ORDER BY k.position",
            (location.graph.id, line),
        ).fetchall()
        if rows and location.graph.id not in chains:
            chains[location.graph.id] = GraphChain(graph=location.graph)
        for row in rows:
            nodes = [node["node_name"] for node in self.conn.execute(
                "SELECT node_name FROM kernel_nodes WHERE kernel_id = ? ORDER BY position", (row["id"],))]
            chains[location.graph.id].kernels.append(
                KernelRef(name=row["name"], kind=row["kind"], file=row["file"], nodes=sorted(set(nodes)),
                          reason="launched here")
            )

    def wrapper_line(self, graph_id: int, line: int, reason: str) -> LineRef:
        file = self.graph_file(graph_id, WRAPPER) or ""
        row = self.conn.execute(
            "SELECT text FROM generated_lines WHERE file = ? AND line = ? LIMIT 1", (file, line)
        ).fetchone()
        return LineRef(file=file, line=line, text="" if row is None else row["text"], reason=reason, nodes=[])


class _GroupedLine:
    """A LineRef with the graph and kernel its rows belong to."""

    def __init__(self, ref: LineRef, graph_id: int, kernel_id: int | None):
        self.ref, self.graph_id, self.kernel_id = ref, graph_id, kernel_id


def _line_refs(rows: list[sqlite3.Row], reader: _Reader) -> list[_GroupedLine]:
    """Group generated_lines rows (one per node) back into one line per recorded LineOrigin."""
    grouped: dict[tuple, _GroupedLine] = {}
    kernel_names: dict[int, str] = {}
    for row in rows:
        key = (row["file"], row["line"], row["origin_index"])
        if key not in grouped:
            kernel = None
            if row["kernel_id"] is not None:
                if row["kernel_id"] not in kernel_names:
                    kernel_names[row["kernel_id"]] = reader.conn.execute(
                        "SELECT name FROM kernels WHERE id = ?", (row["kernel_id"],)
                    ).fetchone()["name"]
                kernel = kernel_names[row["kernel_id"]]
            ref = LineRef(file=row["file"], line=row["line"], text=row["text"], reason=row["reason"],
                          nodes=_UniqueList(), kernel=kernel)
            grouped[key] = _GroupedLine(ref, row["graph_id"], row["kernel_id"])
        if row["node_name"] is not None:
            _add_unique(grouped[key].ref.nodes, row["node_name"])
    ordered = [grouped[key] for key in sorted(grouped)]
    for item in ordered:
        item.ref.nodes.sort()
    return ordered


def _in_module(path: str, module: str) -> bool:
    """Is module instance `path` the instance `module` or inside it (dotted prefix)?"""
    module = module.strip(".")
    return not module or path == module or path.startswith(module + ".")


def _lineage_text(pass_name: str, action: str, node: str) -> str:
    made = {"create": "created", "replace": "replaced", "replace+create": "replaced"}.get(action, action or "made")
    return f"{pass_name} ({made})" + (f" from {node}" if node else "")


def _line_keys_of(chain: GraphChain) -> dict[str, set[tuple[str, int]]]:
    """Post-grad node -> the (file, line) of every kernel and wrapper line listed for it;
    a kernel's launch lines count for every node of the kernel."""
    keys: dict[str, set[tuple[str, int]]] = {}
    for kernel in chain.kernels:
        for line in kernel.lines + kernel.calls:
            for name in line.nodes or kernel.nodes:
                keys.setdefault(name, set()).add((line.file, line.line))
    for line in chain.wrapper_lines:
        for name in line.nodes:
            keys.setdefault(name, set()).add((line.file, line.line))
    return keys


def _graph_ref(conn: sqlite3.Connection, graph_id: int) -> GraphRef:
    row = conn.execute("SELECT id, key, compile_id, kind FROM graphs WHERE id = ?", (graph_id,)).fetchone()
    return GraphRef(id=row["id"], key=row["key"], compile_id=row["compile_id"], kind=row["kind"])


def _source_ref(row: sqlite3.Row, nodes: list[str]) -> SourceRef | None:
    if row["source_file"] is None:
        return None
    return SourceRef(file=row["source_file"], line=row["source_line"], function=row["source_function"],
                     code=row["source_code"], nodes=nodes, reason=row["source_via"])


def _kernel_reason(kind: str) -> str:
    return {"triton": "fused into triton kernel", "template": "lowered to template kernel",
            "extern": "calls extern kernel"}.get(kind, f"lowered to {kind} kernel")


def file_lines(location: Location) -> list[str] | None:
    """The located file's lines, or None when it is not on this machine."""
    try:
        with open(location.absolute_path, encoding="utf-8", errors="replace") as file:
            return file.read().splitlines()
    except OSError:
        return None


def _one_line(location: Location, line: int) -> str:
    """Line `line` of the located file ("" when it is not on this machine)."""
    try:
        with open(location.absolute_path, encoding="utf-8", errors="replace") as file:
            return next(itertools.islice(file, line - 1, None), "").rstrip("\r\n")
    except OSError:
        return ""


def check_line(location: Location, line: int, lines: list[str] | None) -> None:
    count = location.line_count if location.line_count is not None else (None if lines is None else len(lines))
    if line < 1 or (count is not None and line > count):
        valid = f"1-{count}" if count is not None else "from 1"
        raise UserError(f"line {line} is out of range for {location.path}: give a line {valid}")


def _not_found(conn: sqlite3.Connection, key: str, run_id: int | None) -> StoreError:
    if run_id is not None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return StoreError(f"there is no run {run_id} in this store — `kernelscope runs` lists the runs")
        others = [row[0] for row in conn.execute(
            "SELECT run_id FROM files WHERE path = ? ORDER BY run_id DESC LIMIT 5", (key,))]
        hint = f"runs that have it: {', '.join(map(str, others))}" if others else "no run has it"
        return StoreError(f"run {run_id} has no record of {key} ({hint})")
    if key.startswith("runs/"):
        return StoreError(f"no run in this store generated {key} (was the run deleted?) — "
                          "`kernelscope runs` lists the runs")
    compiled = conn.execute(
        "SELECT id, target FROM runs WHERE target = ? OR target LIKE ? ESCAPE '\\' ORDER BY id DESC LIMIT 1",
        (key, _escape_like(key) + ":%"),
    ).fetchone()
    if compiled is not None:
        return StoreError(f"run {compiled['id']} compiled {compiled['target']} but recorded no FX node "
                          f"from {key}: no line of it reached a compiled graph")
    return StoreError(f"no run has recorded {key} — run `kernelscope compile {key}:FACTORY` (or "
                      f"`kernelscope run SCRIPT.py`) for a model that uses it first")


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _UniqueList(list):
    """A list that keeps each item once, in first-seen order, with O(1) membership
    (the lists of an answer's lines grow to thousands on outer lines of deep models)."""

    def __init__(self, items=()):
        super().__init__()
        self._seen: set = set()
        for item in items:
            self.add(item)

    def add(self, item) -> None:
        if item not in self._seen:
            self._seen.add(item)
            self.append(item)


def _add_unique(items: list, item) -> None:
    if isinstance(items, _UniqueList):
        items.add(item)
    elif item not in items:
        items.append(item)
