"""ChainReader: the index lookups a line's chain is assembled from (nodes at a source or
graph line, their pre/post-grad links, kernels, kernel and wrapper lines, call stacks),
with per-answer caches; and the small list types answers are built with.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from kernelscope.store.database.sql import select_in
from kernelscope.store.reading.locate import graph_ref
from kernelscope.store.results import (
    POST_GRAD,
    PRE_GRAD,
    WRAPPER,
    FrameRef,
    GraphChain,
    GraphRef,
    KernelRef,
    LineRef,
    Location,
    NodeRef,
    RecomputeRef,
    SourceRef,
)


class ChainReader:
    """Index lookups shared by `query` and `lines_for_file`, with per-call caches."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._graphs: dict[int, GraphRef] = {}
        self._graph_files: dict[tuple[int, str], str | None] = {}
        self._stacks: dict[int, list[FrameRef]] = {}
        self.via: dict[int, str] = {}  # node id -> "direct" | "call" (source-line queries)
        self.recomputed: dict[int, RecomputeRef] = {}  # backward node id -> the forward op it recomputes
        # graph id -> post-grad node -> its generated lines, when lines are counted, not listed
        self.line_keys: dict[int, dict[str, set[tuple[str, int]]]] = {}

    def graph(self, graph_id: int) -> GraphRef:
        if graph_id not in self._graphs:
            self._graphs[graph_id] = graph_ref(self.conn, graph_id)
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
        return [(row, line) for row in sorted(rows, key=lambda row: row["id"])
                for line in lines_of_stack[row["stack_id"]]]

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
            (location.require_graph().id, stage, line),
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
            recomputed_from=self.recomputed[row["id"]].text if row["id"] in self.recomputed else "",
        )

    def chains(self, pre: list, post: list) -> dict[int, GraphChain]:
        """Group (node row, reason) pairs by graph; a node reached twice keeps both reasons."""
        chains: dict[int, GraphChain] = {}
        refs: dict[int, NodeRef] = {}
        self.stacks(row["stack_id"] for rows in (pre, post) for row, _ in rows)
        from kernelscope.store.parts.recompute import recomputes_of  # parts/recompute reads through this module

        self.recomputed = recomputes_of(self.conn, [row["id"] for row, _ in post])
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
            add_unique(ref.nodes, node.name)
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
        # A FlexAttention template computes nodes of its graph's score_mod/mask_mod subgraphs too:
        # reached from those nodes alone, it is listed in their graph's chain, by their names.
        node_of = {row["id"]: (row["graph_id"], row["name"]) for row in post_rows}
        reached_by: dict[int, dict[int, None]] = {}  # kernel -> the nodes that reach it
        for row in select_in(self.conn, "SELECT kernel_id, node_id, node_name FROM kernel_nodes WHERE node_id IN ({})",
                             post_ids):
            kernel_nodes.setdefault(row["kernel_id"], {})[row["node_name"]] = None
            reached_by.setdefault(row["kernel_id"], {})[row["node_id"]] = None
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
        refs: dict[int, list[KernelRef]] = {}  # one per graph whose chain lists the kernel
        homes: dict[int, list[int]] = {}
        for kernel_id in sorted(kernels, key=lambda k: (kernels[k]["graph_id"], kernels[k]["position"])):
            kernel = kernels[kernel_id]
            graphs = list(dict.fromkeys(node_of[node][0] for node in reached_by.get(kernel_id, ())))
            homes[kernel_id] = [kernel["graph_id"]] if kernel["graph_id"] in graphs or not graphs else graphs
            for home in homes[kernel_id]:
                names = kernel_nodes[kernel_id] if home == kernel["graph_id"] else {
                    node_of[node][1]: None for node in reached_by[kernel_id] if node_of[node][0] == home}
                ref = KernelRef(name=kernel["name"], kind=kernel["kind"], file=kernel["file"], nodes=sorted(names),
                                reason=_kernel_reason(kernel["kind"]))
                refs.setdefault(kernel_id, []).append(ref)
                self._chain(chains, home).kernels.append(ref)
        if not detail:
            for node_id, file, line in line_rows:
                graph_id, name = node_of[node_id]
                self.line_keys.setdefault(graph_id, {}).setdefault(name, set()).add((file, line))
            for call in calls:
                kernel = kernels[call["kernel_id"]]
                key = (self.graph_file(kernel["graph_id"], WRAPPER) or "", call["wrapper_line"])
                for home, ref in zip(homes[call["kernel_id"]], refs[call["kernel_id"]]):
                    keys = self.line_keys.setdefault(home, {})
                    for name in ref.nodes:
                        keys.setdefault(name, set()).add(key)
            return
        kernel_lines = [row for row in line_rows if row["kernel_id"] is not None]
        for line_ref in line_refs(kernel_lines, self):
            if line_ref.kernel_id is None:  # never: these are kernel lines
                continue
            for ref in refs.get(line_ref.kernel_id, ()):
                ref.lines.append(line_ref.ref)
        for call in sorted(calls, key=lambda row: row["wrapper_line"]):
            kernel = kernels[call["kernel_id"]]
            reason = "calls extern kernel" if kernel["kind"] == "extern" else "launches kernel"
            for ref in refs[call["kernel_id"]]:
                ref.calls.append(self.wrapper_line(kernel["graph_id"], call["wrapper_line"], reason))
        wrapper_lines = [row for row in line_rows if row["kernel_id"] is None]
        for line_ref in line_refs(wrapper_lines, self):
            self._chain(chains, line_ref.graph_id).wrapper_lines.append(line_ref.ref)

    def _chain(self, chains: dict[int, GraphChain], graph_id: int) -> GraphChain:
        """The chain through a graph, begun where the nodes' lines are in another graph's code."""
        if graph_id not in chains:
            chains[graph_id] = GraphChain(graph=self.graph(graph_id))
        return chains[graph_id]

    def add_launched_kernels(self, chains: dict[int, GraphChain], location: Location, line: int) -> None:
        """Down from a wrapper line: the kernels it launches or calls."""
        graph = location.require_graph()
        rows = self.conn.execute(
            "SELECT k.* FROM kernel_calls kc JOIN kernels k ON k.id = kc.kernel_id "
            "WHERE kc.graph_id = ? AND kc.wrapper_line = ? ORDER BY k.position",
            (graph.id, line),
        ).fetchall()
        if rows and graph.id not in chains:
            chains[graph.id] = GraphChain(graph=graph)
        for row in rows:
            nodes = [node["node_name"] for node in self.conn.execute(
                "SELECT node_name FROM kernel_nodes WHERE kernel_id = ? ORDER BY position", (row["id"],))]
            chains[graph.id].kernels.append(
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


def line_refs(rows: list[sqlite3.Row], reader: ChainReader) -> list[_GroupedLine]:
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
                          nodes=UniqueList(), kernel=kernel)
            grouped[key] = _GroupedLine(ref, row["graph_id"], row["kernel_id"])
        if row["node_name"] is not None:
            add_unique(grouped[key].ref.nodes, row["node_name"])
    ordered = [grouped[key] for key in sorted(grouped)]
    for item in ordered:
        item.ref.nodes.sort()
    return ordered


def in_module(path: str, module: str) -> bool:
    """Is module instance `path` the instance `module` or inside it (dotted prefix)?"""
    module = module.strip(".")
    return not module or path == module or path.startswith(module + ".")


def _lineage_text(pass_name: str, action: str, node: str) -> str:
    made = {"create": "created", "replace": "replaced", "replace+create": "replaced"}.get(action, action or "made")
    return f"{pass_name} ({made})" + (f" from {node}" if node else "")


def line_keys_of(chain: GraphChain) -> dict[str, set[tuple[str, int]]]:
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


def _source_ref(row: sqlite3.Row, nodes: list[str]) -> SourceRef | None:
    if row["source_file"] is None:
        return None
    return SourceRef(file=row["source_file"], line=row["source_line"], function=row["source_function"],
                     code=row["source_code"], nodes=nodes, reason=row["source_via"])


def _kernel_reason(kind: str) -> str:
    return {"triton": "fused into triton kernel", "template": "lowered to template kernel",
            "extern": "calls extern kernel"}.get(kind, f"lowered to {kind} kernel")


class UniqueList(list):
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


def add_unique(items: list, item) -> None:
    if isinstance(items, UniqueList):
        items.add(item)
    elif item not in items:
        items.append(item)
