"""What every line of one model source file became, answered at once for front ends.

`StoreBackend.query` builds the whole chain with every generated line's text, which on a
big model (a line reached by a hundred nodes, thousands of kernel lines) costs
seconds; a hover, a jump, a lens or a highlight needs only which kernels, which
lines of them and which wrapper lines. Same tables, same indexes, same rules as
the store's query (direct nodes and the nodes an outer frame calls into; pre-grad
nodes reach post-grad ones through node_links). One pass over a file's nodes
costs what a few single-line queries would; it is cached per run and file
(answer_cache), so afterwards every line of the file is a lookup.

The same pass counts each line's answer per graph and module group (GraphOverview:
what `kernelscope query` prints by default), with the rules of the store's query
(`detail=False, rollup=True`); the writer keeps those counts in the store
(line_overviews), so a one-shot CLI reads them without this pass.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import NamedTuple

from kernelscope.store.database.sql import select_in
from kernelscope.store.reading.answer_cache import cached, db_key
from kernelscope.store.reading.folding import fold_modules
from kernelscope.store.reading.graphs_and_kernels import (
    GraphInfo,
    KernelInfo,
    graphs_of_run,
    kernels_of_run,
    read_graphs,
    read_kernels,
)
from kernelscope.store.reading.rollup import KeyParts, count_keys, module_summaries, rollup_to_instances
from kernelscope.store.results import GraphOverview


@dataclass
class SourceLineSummary:
    """What one line of a source file became in a run."""

    line: int
    kernels: list[KernelInfo] = field(default_factory=list)
    fused_with: list[int] = field(default_factory=list)  # other lines of the file sharing a generated kernel


@dataclass
class KernelHit:
    kernel: KernelInfo
    lines: list[int] = field(default_factory=list)  # kernel lines of the line's nodes (1-based)
    first_value: int | None = None  # first `tmpN = ...` line of the nodes' own (not shared) lines
    first_own: int | None = None  # first line of the nodes' own
    calls: list[int] = field(default_factory=list)  # wrapper lines that launch or call it
    modules: set[str] = field(default_factory=set)


@dataclass
class GraphHit:
    graph: GraphInfo
    post_nodes: int = 0
    post_names: list[str] = field(default_factory=list)  # in graph order
    modules: set[str] = field(default_factory=set)  # module instances of the post-grad nodes
    called: bool = False  # some nodes are reached through an outer frame (`x = block(x)`)
    kernels: list[KernelHit] = field(default_factory=list)
    pre_lines: list[int] = field(default_factory=list)  # lines of pre_grad.py
    post_lines: list[int] = field(default_factory=list)  # lines of post_grad.py
    wrapper_lines: list[int] = field(default_factory=list)  # wrapper lines of the nodes (allocations, frees)
    module_class: dict[str, str] = field(default_factory=dict)  # module path -> class


@dataclass
class LineAnswer:
    run_id: int
    path: str
    line: int
    graphs: list[GraphHit] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(graph.post_nodes or graph.kernels for graph in self.graphs)


def source_line(conn: sqlite3.Connection, run_id: int, path: str, line: int) -> LineAnswer:
    """What line `line` of source file `path` became in the run."""
    answer = file_index(conn, run_id, path).answers.get(line)
    return answer if answer is not None else LineAnswer(run_id, path, line)


def line_summaries(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, SourceLineSummary]:
    """Per line of the file: its kernels and the lines fused with it (code lenses, inlay hints)."""
    return file_index(conn, run_id, path).summaries


@dataclass
class FileIndex:
    answers: dict[int, LineAnswer]
    summaries: dict[int, SourceLineSummary]
    # line -> its answer counted per graph and module group; built on request (build(overviews=True))
    overviews: dict[int, list[GraphOverview]] = field(default_factory=dict)


def file_index(conn: sqlite3.Connection, run_id: int, path: str) -> FileIndex:
    """Every line of one source file in one run, answered at once and cached: one pass
    over the file's nodes costs what a few single-line queries would, and afterwards
    a hover, jump or lens in that file is a lookup. Built when a file is opened."""
    return cached(("file", db_key(conn), run_id, path), lambda: build(conn, run_id, path))


class _Node(NamedTuple):
    id: int
    stage: str
    graph_id: int
    graph_line: int
    module: str
    module_class: str
    name: str
    source_file: str | None
    source_line: int | None


class _Source(NamedTuple):
    file: str
    line: int | None  # as stored (a node recorded with a source file has its line)


def build(conn: sqlite3.Connection, run_id: int, path: str, cache: bool = True, overviews: bool = False,
          answers: bool = True) -> FileIndex:
    """The index of one file, computed (file_index caches it). `overviews`: also count every
    line's answer (FileIndex.overviews; what the store keeps in line_overviews); without
    `answers` only those (no LineAnswers, no summaries). `cache=False` reads the run's graphs
    and kernels without the process cache: the writer builds the index of a run that is not
    committed yet."""
    graphs = graphs_of_run(conn, run_id) if cache else read_graphs(conn, run_id)
    kernels = kernels_of_run(conn, run_id) if cache else read_kernels(conn, run_id)
    columns = ("n.id, n.stage, n.graph_id, n.graph_line, n.module_path, n.module_class, n.name, "
               "n.source_file, n.source_line")
    info: dict[int, _Node] = {}
    direct_of: dict[int, set[int]] = {}  # source line -> nodes whose own line it is
    called_of: dict[int, set[int]] = {}  # source line -> nodes it calls into (an outer frame)
    for row in conn.execute(f"SELECT {columns} FROM nodes n WHERE n.run_id = ? AND n.source_file = ?",
                            (run_id, path)):
        info[row[0]] = _Node(*row)
        direct_of.setdefault(row[8], set()).add(row[0])
    for row in conn.execute(f"""SELECT {columns}, f.line FROM stack_frames f JOIN nodes n ON n.stack_id = f.stack_id
                                WHERE f.run_id = ? AND f.file = ?
                                AND f.depth < (SELECT size - 1 FROM stacks WHERE id = f.stack_id)""",
                            (run_id, path)):
        info[row[0]] = _Node(*row[:9])
        called_of.setdefault(row[9], set()).add(row[0])
    posts_of_pre: dict[int, set[int]] = {}
    for post_id, pre_id in select_in(conn, "SELECT post_node_id, pre_node_id FROM node_links WHERE pre_node_id IN ({})",
                                     [node_id for node_id, row in info.items() if row[1] == "pre"], plain=True):
        posts_of_pre.setdefault(pre_id, set()).add(post_id)
    missing = {post for posts in posts_of_pre.values() for post in posts} - set(info)
    for row in select_in(conn, f"SELECT {columns} FROM nodes n WHERE n.id IN ({{}})", missing, plain=True):
        info[row[0]] = _Node(*row)
    all_posts = [node_id for node_id, row in info.items() if row[1] == "post"]
    kernels_of_node: dict[int, list[int]] = {}
    for kernel_id, node_id in select_in(conn, "SELECT kernel_id, node_id FROM kernel_nodes WHERE node_id IN ({})",
                                        all_posts, plain=True):
        kernels_of_node.setdefault(node_id, []).append(kernel_id)
    kernel_rows: dict[int, list[tuple]] = {}  # node -> (kernel, line, shared, computes a value)
    wrapper_rows: dict[int, list[tuple]] = {}  # node -> (graph, line)
    if answers:
        for node_id, kernel_id, graph_id, number, shared, value in select_in(
                conn, """SELECT node_id, kernel_id, graph_id, line, reason LIKE 'shared:%', text LIKE 'tmp%'
                         FROM generated_lines WHERE node_id IN ({})""", all_posts, plain=True):
            if kernel_id is None:
                wrapper_rows.setdefault(node_id, []).append((graph_id, number))
            else:
                kernel_rows.setdefault(node_id, []).append((kernel_id, number, shared, value))
    calls: dict[int, list[int]] = {}
    for kernel_id, wrapper_line in select_in(conn,
                                             "SELECT kernel_id, wrapper_line FROM kernel_calls WHERE kernel_id IN ({})",
                                             {k for ids in kernels_of_node.values() for k in ids}, plain=True):
        calls.setdefault(kernel_id, []).append(wrapper_line)
    order = {kernel_id: position for position, kernel_id in enumerate(kernels)}
    line_keys = _line_keys(conn, all_posts, kernels_of_node, calls, kernels, graphs) if overviews else {}

    answered: dict[int, LineAnswer] = {}
    counted: dict[int, list[GraphOverview]] = {}
    overview_nodes = _OverviewNodes(info)
    for line in sorted(set(direct_of) | set(called_of)):
        if line is None:
            continue
        nodes = direct_of.get(line, set()) | called_of.get(line, set())
        via_call = called_of.get(line, set()) - direct_of.get(line, set())
        posts, called_posts = set(), set()
        for node_id in nodes:
            targets = {node_id} if info[node_id][1] == "post" else posts_of_pre.get(node_id, set())
            posts |= targets
            if node_id in via_call:
                called_posts |= targets
        if answers:
            answered[line] = _answer(run_id, path, line, posts, called_posts, info, graphs, kernels, order,
                                     kernels_of_node, kernel_rows, wrapper_rows, calls,
                                     pre_lines=[(info[n][2], info[n][3]) for n in nodes if info[n][1] == "pre"])
        if overviews:
            direct = direct_of.get(line, set())
            direct_posts = {n for n in direct if info[n].stage == "post"}
            for node_id in direct:
                if info[node_id].stage == "pre":
                    direct_posts |= posts_of_pre.get(node_id, set())
            counted[line] = _overview(posts, direct_posts, [n for n in nodes if info[n].stage == "pre"], direct,
                                      info, overview_nodes, graphs, kernels, order, kernels_of_node, line_keys)
    return FileIndex(answered, _summaries(answered, set(direct_of)), counted)


class _OverviewNodes:
    """A node as module_summaries reads it, reached directly or via call: made once per
    node and shared by every line that reaches it (an outer line reaches thousands)."""

    def __init__(self, info: dict[int, _Node]):
        self._info = info
        self._made: dict[tuple[int, str], SimpleNamespace] = {}

    def get(self, node_id: int, via: str) -> SimpleNamespace:
        made = self._made.get((node_id, via))
        if made is None:
            row = self._info[node_id]
            source = None if row.source_file is None else _Source(row.source_file, row.source_line)
            made = self._made[(node_id, via)] = SimpleNamespace(
                name=row.name, module=row.module, module_class=row.module_class, via=via, stage=row.stage,
                source=source)
        return made


_LINE_BITS = 24  # a generated line's number in its key: files are far shorter than 2**24 lines


def _line_keys(conn: sqlite3.Connection, posts: list[int], kernels_of_node: dict[int, list[int]],
               calls: dict[int, list[int]], kernels: dict[int, KernelInfo],
               graphs: dict[int, GraphInfo]) -> dict[int, KeyParts]:
    """Post-grad node -> its generated lines (from the covering index alone) and the wrapper
    lines that launch its kernels, as the store's query counts them; a line is one number
    (its file's and its own)."""
    file_ids: dict[str, int] = {}
    own: dict[int, set[int]] = {}
    for node_id, file, number in select_in(conn,
                                           "SELECT node_id, file, line FROM generated_lines WHERE node_id IN ({})",
                                           posts, plain=True):
        file_id = file_ids.get(file)
        if file_id is None:
            file_id = file_ids[file] = len(file_ids)
        keys = own.get(node_id)
        if keys is None:
            keys = own[node_id] = set()
        keys.add((file_id << _LINE_BITS) | number)
    launches: dict[int, set[int]] = {}
    for kernel_id, lines in calls.items():
        wrapper = graphs[kernels[kernel_id].graph_id].files.get("wrapper") or ""
        file_id = file_ids.setdefault(wrapper, len(file_ids))
        launches[kernel_id] = {(file_id << _LINE_BITS) | line for line in lines}
    empty: set[int] = set()
    return {node_id: KeyParts([own.get(node_id, empty), *(launches[k] for k in kernels_of_node.get(node_id, ())
                                                          if k in launches)])
            for node_id in posts}


def _overview(posts: set[int], direct_posts: set[int], pres: list[int], direct: set[int], info: dict[int, _Node],
              nodes: _OverviewNodes, graphs: dict[int, GraphInfo], kernels: dict[int, KernelInfo],
              order: dict[int, int], kernels_of_node: dict[int, list[int]],
              line_keys: dict[int, KeyParts]) -> list[GraphOverview]:
    """One line's answer counted per graph and module instance, as `StoreBackend.query(...,
    detail=False, rollup=True)` counts it (kernelscope.store.reading.rollup): a post-grad node is
    reached directly when it or a pre-grad node it came from is on the line, else via call."""
    by_graph: dict[int, SimpleNamespace] = {}

    def chain(graph_id: int) -> SimpleNamespace:
        if graph_id not in by_graph:
            by_graph[graph_id] = SimpleNamespace(post_nodes=[], pre_nodes=[], kernels=[], keys={})
        return by_graph[graph_id]

    reached: dict[int, list[str]] = {}  # kernel -> the names of its reached nodes
    for node_id in sorted(posts, key=lambda n: (info[n].graph_line, info[n].name)):
        row = info[node_id]
        found = chain(row.graph_id)
        found.post_nodes.append(nodes.get(node_id, "direct" if node_id in direct_posts else "call"))
        found.keys[row.name] = line_keys[node_id]
        for kernel_id in kernels_of_node.get(node_id, ()):
            reached.setdefault(kernel_id, []).append(row.name)
    for node_id in sorted(pres, key=lambda n: (info[n].graph_line, info[n].name)):
        chain(info[node_id].graph_id).pre_nodes.append(nodes.get(node_id, "direct" if node_id in direct else "call"))
    for kernel_id in sorted(reached, key=lambda k: order.get(k, k)):
        kernel = kernels[kernel_id]
        chain(kernel.graph_id).kernels.append(SimpleNamespace(name=kernel.name, kind=kernel.kind,
                                                              nodes=reached[kernel_id]))
    found_overviews = []
    for graph_id in sorted(by_graph):
        found = by_graph[graph_id]
        instances = rollup_to_instances(n.module for n in found.pre_nodes + found.post_nodes)
        modules = module_summaries(found, found.keys, instances)
        graph = graphs[graph_id]
        externs = sum(1 for kernel in found.kernels if kernel.kind == "extern")
        found_overviews.append(GraphOverview(
            graph=graph.ref, pre_nodes=len(found.pre_nodes),
            post_nodes=len(found.post_nodes), called_nodes=sum(1 for n in found.post_nodes if n.via == "call"),
            triton_kernels=len(found.kernels) - externs, extern_calls=externs,
            generated_lines=count_keys(found.keys), modules=modules, groups=fold_modules(modules)))
    return found_overviews


def _answer(run_id, path, line, posts, called_posts, info, graphs, kernels, order, kernels_of_node, kernel_rows,
            wrapper_rows, calls, pre_lines) -> LineAnswer:
    hits: dict[int, GraphHit] = {}

    def hit(graph_id: int) -> GraphHit:
        if graph_id not in hits:
            hits[graph_id] = GraphHit(graphs[graph_id])
        return hits[graph_id]

    for graph_id, graph_line in pre_lines:
        hit(graph_id).pre_lines.append(graph_line)
    kernel_hits: dict[int, KernelHit] = {}
    seen_lines: set[tuple[int, int]] = set()
    for node_id in sorted(posts, key=lambda node_id: (info[node_id][3], info[node_id][6])):  # graph order
        _, _, graph_id, graph_line, module, module_class, name, _, _ = info[node_id]
        graph = hit(graph_id)
        graph.post_nodes += 1
        graph.post_names.append(name)
        if module:
            graph.modules.add(module)
        graph.called |= node_id in called_posts
        graph.post_lines.append(graph_line)
        if module and module_class:
            graph.module_class.setdefault(module, module_class)
        for kernel_id in kernels_of_node.get(node_id, ()):
            if kernel_id not in kernel_hits:
                kernel_hits[kernel_id] = KernelHit(kernels[kernel_id], calls=sorted(calls.get(kernel_id, [])))
            kernel_hits[kernel_id].modules.add(module or "")
        for kernel_id, number, shared, value in kernel_rows.get(node_id, ()):
            kernel_hit = kernel_hits.get(kernel_id)
            if kernel_hit is None:
                kernel_hits[kernel_id] = kernel_hit = KernelHit(kernels[kernel_id],
                                                                calls=sorted(calls.get(kernel_id, [])))
            if (kernel_id, number) not in seen_lines:
                seen_lines.add((kernel_id, number))
                kernel_hit.lines.append(number)
            if not shared:
                kernel_hit.first_own = min(number, kernel_hit.first_own or number)
                if value:
                    kernel_hit.first_value = min(number, kernel_hit.first_value or number)
        for graph_id_, number in wrapper_rows.get(node_id, ()):
            hit(graph_id_).wrapper_lines.append(number)
    for kernel_id in sorted(kernel_hits, key=lambda k: order.get(k, k)):
        kernel_hit = kernel_hits[kernel_id]
        kernel_hit.lines.sort()
        hit(kernel_hit.kernel.graph_id).kernels.append(kernel_hit)
    for graph in hits.values():
        graph.pre_lines = sorted(set(graph.pre_lines))
        graph.post_lines = sorted(set(graph.post_lines))
        graph.wrapper_lines = sorted(set(graph.wrapper_lines))
    answer = LineAnswer(run_id, path, line)
    answer.graphs = [hits[graph_id] for graph_id in sorted(hits)]
    return answer


def _summaries(answers: dict[int, LineAnswer], direct_lines: set[int]) -> dict[int, SourceLineSummary]:
    summaries: dict[int, SourceLineSummary] = {}
    lines_of_kernel: dict[int, set[int]] = {}
    for line, answer in answers.items():
        kernels = [hit.kernel for graph in answer.graphs for hit in graph.kernels]
        if not kernels:
            continue
        summaries[line] = SourceLineSummary(line, kernels)
        if line in direct_lines:
            for kernel in kernels:
                if kernel.kind != "extern":
                    lines_of_kernel.setdefault(kernel.id, set()).add(line)
    for line, summary in summaries.items():
        if line not in direct_lines:
            continue  # an outer line calls into many lines; "fused with" is about its own ops
        fused = set()
        for kernel in summary.kernels:
            fused |= lines_of_kernel.get(kernel.id, set())
        fused.discard(line)
        summary.fused_with = sorted(fused)
    return summaries
