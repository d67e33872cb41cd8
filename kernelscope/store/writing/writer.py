"""Writing one RunRecord into the store, all or nothing.

Order of work, so that a reader sees the old store or the new run, never half:
1. BEGIN IMMEDIATE (the write lock; the new run id is ours);
2. write the generated files into `runs/.incoming-XXXX/`, insert every row, count
   every source line's answer (kernelscope.store.reading.line_overviews);
3. rename the staging dir to `runs/<id>/`;
4. COMMIT.
Any failure rolls the transaction back and removes the staging (or renamed)
dir. Rows are inserted before the rename, so a run's files exist whenever its
rows are visible; a crash between rename and commit leaves a dir no row points
to, which the next write of that id replaces.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import StoreError
from kernelscope.run_record import FxNode, GraphRecord, LineOrigin, RunRecord, SourceLocation
from kernelscope.store import paths, places
from kernelscope.store.database import connection
from kernelscope.store.database.sql import inserted_id
from kernelscope.store.parts import (
    decisions,
    kernel_parts,
    memory,
    memory_measured,
    numerics,
    recompute,
    subgraphs,
    user_kernels,
    why,
)
from kernelscope.store.parts.distributed import code_digest
from kernelscope.store.reading import line_overviews
from kernelscope.store.writing.coverage import compute_coverage


def write_run(conn: sqlite3.Connection, root: Path, record: RunRecord) -> int:
    """Store `record`; return the new run id."""

    def fill(staging: Path) -> int:
        run_id = _insert_run(conn, record, root)
        _RunWriter(conn, run_id, record, staging).write()
        line_overviews.write_run(conn, run_id)  # every source line's answer, counted (query's default)
        return run_id

    with connection.write_errors(root):
        return write_staged(conn, root, fill)


def write_staged(conn: sqlite3.Connection, root: Path, fill: Callable[[Path], int]) -> int:
    """Write one run as every run is written: under the store's write lock, `fill(staging)`
    inserts its rows and its files into a fresh staging folder and returns the run's id;
    the folder then becomes `runs/<id>` and the transaction commits. On any failure the
    rows roll back and neither folder is left."""
    runs_root = root / paths.RUNS_DIR
    runs_root.mkdir(parents=True, exist_ok=True)
    final_dir: Path | None = None
    staging: Path | None = None
    connection.begin_write(conn)
    try:
        # Staged under the write lock: while a writer holds it, any other staging dir is a leftover.
        staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=runs_root))
        run_id = fill(staging)
        final_dir = runs_root / str(run_id)
        if final_dir.exists():
            shutil.rmtree(final_dir)  # left by a write that crashed before its COMMIT
        os.replace(staging, final_dir)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if final_dir is not None and final_dir.exists() and staging is not None and not staging.exists():
            shutil.rmtree(final_dir, ignore_errors=True)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    return run_id


def _insert_run(conn: sqlite3.Connection, record: RunRecord, root: Path) -> int:
    cursor = conn.execute(
        """INSERT INTO runs (target, device, mode, dynamic, torch_version, triton_version,
               provenance, created, workspace, workspace_from_store, peak_memory_mb, execute_max_error,
               timings_json, config_json, warnings_json, coverage_json, graph_count, kernel_count)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            record.target,
            record.device,
            record.mode,
            int(record.dynamic),
            record.torch_version,
            record.triton_version,
            record.provenance,
            record.created,
            record.workspace,
            places.relative_to_store(record.workspace, root),
            record.peak_memory_mb,
            record.execute_max_error,
            _json(record.timings),
            _json(record.config),
            _json(record.warnings),
            _json(compute_coverage(record)),
            len(record.graphs),
            sum(len(graph.kernels) for graph in record.graphs),
        ),
    )
    return inserted_id(cursor)


@dataclass
class _GraphIds:
    graph_id: int
    pre_nodes: dict[str, int] = field(default_factory=dict)  # name -> nodes.id
    post_nodes: dict[str, int] = field(default_factory=dict)
    # this graph's subgraphs by name (`sdpa_mask0`): a line of its FlexAttention template
    # names a node of one as `sdpa_mask0.ge` (engine/template_mods.py)
    subgraphs: dict[str, _GraphIds] = field(default_factory=dict)

    def post_node(self, name: str) -> int | None:
        """The id of a post-grad node of this graph, or of a subgraph's (`sdpa_mask0.ge`)."""
        if name in self.post_nodes:
            return self.post_nodes[name]
        subgraph, _, node = name.partition(".")  # run_record.subgraph_node
        child = self.subgraphs.get(subgraph)
        return child.post_nodes.get(node) if child is not None and node else None


class _RunWriter:
    """Inserts the rows of one run and writes its files into the staging dir."""

    def __init__(self, conn: sqlite3.Connection, run_id: int, record: RunRecord, staging: Path):
        self.conn = conn
        self.run_id = run_id
        self.record = record
        self.staging = staging
        self.source_files: set[str] = set()
        self.stack_ids: dict[tuple, int] = {}  # interned call stacks of this run
        self.source_keys: dict[str, str] = {}  # recorded path -> stored key
        self.kernel_ids: dict[tuple[str, str], int] = {}  # (graph key, kernel name) -> kernels.id

    def write(self) -> None:
        graph_ids = [self._insert_graph(graph) for graph in self.record.graphs]
        by_key = {graph.key: ids for graph, ids in zip(self.record.graphs, graph_ids)}
        for graph, ids in zip(self.record.graphs, graph_ids):
            if graph.subgraph is not None and graph.subgraph.parent in by_key:
                by_key[graph.subgraph.parent].subgraphs[graph.subgraph.name] = ids
        for graph, ids in zip(self.record.graphs, graph_ids):
            self._insert_node_links(graph, ids, graph_ids)
            self._insert_kernels(graph, ids)
            if graph.wrapper_lines:
                wrapper = self._require_file(graph, "wrapper", graph.wrapper_text)
                self._insert_lines(graph.wrapper_lines, wrapper, ids, kernel_id=None)
        self._insert_graph_breaks_and_recompiles()
        self._insert_distributed(graph_ids)
        subgraphs.write_subgraphs(self.conn, self.run_id, self.record.graphs, [ids.graph_id for ids in graph_ids])
        recompute.write_recomputes(self.conn, self.run_id, self.record.graphs, [ids.post_nodes for ids in graph_ids])
        decisions.write_run_decisions(self.conn, self.run_id, self.record, self.kernel_ids)
        why.write_run_why(self.conn, self.run_id, self.record, [ids.graph_id for ids in graph_ids],
                          self._source_columns)
        memory.write_memory(self.conn, self.run_id, [(graph, ids.graph_id, ids.post_nodes)
                                                     for graph, ids in zip(self.record.graphs, graph_ids)])
        memory.write_eager(self.conn, self.run_id, self.record.eager_memory, self._source_columns)
        memory_measured.write_measured(self.conn, self.run_id, [(graph, ids.graph_id) for graph, ids
                                                                in zip(self.record.graphs, graph_ids)],
                                       self.record.measured_memory)
        numerics.write_numerics(self.conn, self.run_id, self.record)
        self._copy_aot_package()
        self.conn.executemany(
            "INSERT INTO files (run_id, path, kind) VALUES (?, ?, 'source')",
            [(self.run_id, path) for path in sorted(self.source_files)],
        )

    # -- graphs and nodes --------------------------------------------------

    def _insert_graph(self, graph: GraphRecord) -> _GraphIds:
        cursor = self.conn.execute(
            """INSERT INTO graphs (run_id, key, compile_id, frame_id, frame_compile_id, attempt,
                   kind, wrapper_attributable, inductor_mapping_json)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                self.run_id,
                graph.key,
                graph.compile_id,
                graph.frame_id,
                graph.frame_compile_id,
                graph.attempt,
                graph.kind,
                graph.wrapper_attributable,
                None if graph.inductor_mapping is None else _json(graph.inductor_mapping),
            ),
        )
        ids = _GraphIds(graph_id=inserted_id(cursor))
        for kind, text in (
            ("pre_grad", graph.pre_grad_text),
            ("post_grad", graph.post_grad_text),
            ("wrapper", graph.wrapper_text),
        ):
            if text:
                language = graph.wrapper_language if kind == "wrapper" else "python"
                self._write_file(paths.graph_file(self.run_id, graph.key, kind, language), kind, text, ids.graph_id)
        ids.pre_nodes = self._insert_nodes(graph.pre_grad_nodes, "pre", ids.graph_id)
        ids.post_nodes = self._insert_nodes(graph.post_grad_nodes, "post", ids.graph_id)
        return ids

    def _insert_nodes(self, nodes: list[FxNode], stage: str, graph_id: int) -> dict[str, int]:
        by_name: dict[str, int] = {}
        for position, node in enumerate(nodes):
            source = self._source_columns(node.source)
            stack = node.stack or ([node.source] if node.source is not None else [])
            lineage = [[step.pass_name, step.action, step.node] for step in node.lineage]
            cursor = self.conn.execute(
                """INSERT INTO nodes (run_id, graph_id, stage, position, name, op, target,
                       source_file, source_line, source_function, source_code, source_via, graph_line,
                       stack_id, module_path, module_class, lineage_json)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (self.run_id, graph_id, stage, position, node.name, node.op, node.target,
                 *source, node.source_via, node.graph_line, self._stack_id(stack),
                 node.module_path, node.module_class, _json(lineage) if lineage else None),
            )
            by_name[node.name] = inserted_id(cursor)
        return by_name

    def _stack_id(self, stack: list[SourceLocation]) -> int | None:
        """The id of this call stack in the run, inserting it the first time it is seen."""
        if not stack:
            return None
        frames = tuple(map(self._source_columns, stack))
        if frames not in self.stack_ids:
            stack_id = inserted_id(self.conn.execute(
                "INSERT INTO stacks (run_id, size) VALUES (?, ?)", (self.run_id, len(frames))
            ))
            self.conn.executemany(
                """INSERT INTO stack_frames (stack_id, depth, run_id, file, line, function, code)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [(stack_id, depth, self.run_id, *frame) for depth, frame in enumerate(frames)],
            )
            self.stack_ids[frames] = stack_id
        return self.stack_ids[frames]

    def _insert_node_links(self, graph: GraphRecord, ids: _GraphIds, all_ids: list[_GraphIds]) -> None:
        """Link post-grad nodes to the pre-grad nodes they came from.

        A backward graph usually has no pre-grad graph of its own; its nodes come
        from the pre-grad graph of the forward graph with the same compile id.
        """
        same_compile = [
            other_ids
            for other, other_ids in zip(self.record.graphs, all_ids)
            if other.compile_id == graph.compile_id and other_ids is not ids
        ]
        rows = []
        for node in graph.post_grad_nodes:
            for position, pre_name in enumerate(node.from_pre_grad):
                pre_id = ids.pre_nodes.get(pre_name)
                for other_ids in same_compile:
                    if pre_id is None:
                        pre_id = other_ids.pre_nodes.get(pre_name)
                rows.append((ids.post_nodes[node.name], position, pre_name, pre_id))
        self.conn.executemany(
            "INSERT INTO node_links (post_node_id, position, pre_node_name, pre_node_id) VALUES (?, ?, ?, ?)",
            rows,
        )

    # -- kernels and generated lines ----------------------------------------

    def _insert_kernels(self, graph: GraphRecord, ids: _GraphIds) -> None:
        seen_files: set[str] = set()
        for position, kernel in enumerate(graph.kernels):
            file = None
            if kernel.source:
                file = paths.kernel_file(self.run_id, graph.key, kernel.name, kernel.kind)
                if file in seen_files:
                    raise StoreError(f"graph {graph.key} has two kernels named {kernel.name!r}")
                seen_files.add(file)
            elif kernel.lines:
                raise StoreError(
                    f"kernel {kernel.name!r} of graph {graph.key} has line provenance but no "
                    "source text (engine bug: Kernel.source is empty)"
                )
            cursor = self.conn.execute(
                """INSERT INTO kernels (run_id, graph_id, position, name, kind, file, inductor_nodes_json)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                (self.run_id, ids.graph_id, position, kernel.name, kernel.kind, file,
                 None if kernel.inductor_nodes is None else _json(kernel.inductor_nodes)),
            )
            kernel_id = inserted_id(cursor)
            self.kernel_ids.setdefault((graph.key, kernel.name), kernel_id)
            if file is not None:
                self._write_file(file, "kernel", kernel.source, ids.graph_id, kernel_id)
            self.conn.executemany(
                "INSERT INTO kernel_nodes (kernel_id, position, node_name, node_id) VALUES (?, ?, ?, ?)",
                [(kernel_id, index, name, ids.post_node(name)) for index, name in enumerate(kernel.nodes)],
            )
            self.conn.executemany(
                "INSERT OR IGNORE INTO kernel_calls (kernel_id, graph_id, wrapper_line) VALUES (?, ?, ?)",
                [(kernel_id, ids.graph_id, line) for line in kernel.wrapper_lines],
            )
            if file is not None:
                self._insert_lines(kernel.lines, file, ids, kernel_id)
            user_kernels.write_user_kernel(self.conn, self.run_id, kernel_id, kernel, self._source_columns)
            kernel_parts.write_parts(self.conn, self.run_id, kernel_id, kernel)
            if kernel.launch is not None:
                self.conn.execute(
                    """INSERT INTO kernel_launches (kernel_id, config_json, candidates_json, registers, spills,
                           shared_bytes) VALUES (?, ?, ?, ?, ?, ?)""",
                    (kernel_id, _json(kernel.launch["config"]), _json(kernel.launch.get("candidates") or []),
                     kernel.launch.get("registers"), kernel.launch.get("spills"), kernel.launch.get("shared_bytes")),
                )

    def _insert_lines(self, origins: list[LineOrigin], file: str, ids: _GraphIds, kernel_id: int | None) -> None:
        rows = []
        for origin_index, origin in enumerate(origins):
            for name in origin.nodes if origin.nodes else (None,):
                rows.append((
                    self.run_id, ids.graph_id, kernel_id, file, origin.line, origin.text,
                    origin.reason, origin_index, name, None if name is None else ids.post_node(name),
                ))
        self.conn.executemany(
            """INSERT INTO generated_lines (run_id, graph_id, kernel_id, file, line, text, reason,
                   origin_index, node_name, node_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            rows,
        )

    def _require_file(self, graph: GraphRecord, kind: str, text: str) -> str:
        if not text:
            raise StoreError(
                f"graph {graph.key} has {kind} line provenance but no {kind} text "
                f"(engine bug: GraphRecord.{kind}_text is empty)"
            )
        return paths.graph_file(self.run_id, graph.key, kind, graph.wrapper_language if kind == "wrapper" else "python")

    def _copy_aot_package(self) -> None:
        """`--aot`: the package the engine built, kept in the run's folder (paths.AOT_PACKAGE;
        the run's config says what it holds)."""
        package = self.record.aot_package
        if package is None:
            return
        target = self.staging / paths.AOT_PACKAGE
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package.local_path, target)

    # -- the rest ---------------------------------------------------------------

    def _insert_graph_breaks_and_recompiles(self) -> None:
        self.conn.executemany(
            """INSERT INTO graph_breaks (run_id, reason, compile_id, source_file, source_line,
                   source_function, source_code, explanation, hints_json, url, stack_json)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [
                (self.run_id, brk.reason, brk.compile_id, *self._source_columns(brk.source),
                 brk.explanation, _json(brk.hints), brk.url,
                 _json([list(self._source_columns(frame)) for frame in brk.stack]))
                for brk in self.record.graph_breaks
            ],
        )
        self.conn.executemany(
            "INSERT INTO recompiles (run_id, compile_id, reason) VALUES (?, ?, ?)",
            [(self.run_id, recompile.compile_id, recompile.reason) for recompile in self.record.recompiles],
        )

    def _insert_distributed(self, graph_ids: list[_GraphIds]) -> None:
        """The run's rank, each graph's split part and collectives (tables.DISTRIBUTED_TABLES)."""
        rank = self.record.rank
        if rank is not None:
            self.conn.execute(
                """INSERT INTO run_ranks (run_id, rank, world_size, job, backend, local_rank)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (self.run_id, rank.rank, rank.world_size, rank.job, rank.backend, rank.local_rank),
            )
        for graph, ids in zip(self.record.graphs, graph_ids):
            self.conn.execute("INSERT INTO graph_code (graph_id, run_id, digest) VALUES (?, ?, ?)",
                              (ids.graph_id, self.run_id, code_digest(graph.wrapper_text, self.record.workspace)))
            split = graph.split
            if split is not None:
                self.conn.execute(
                    """INSERT INTO graph_splits (graph_id, run_id, splitter, part, parts, params_json,
                           bucket_bytes, cap_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                    (ids.graph_id, self.run_id, split.splitter, split.part, split.parts, _json(split.params),
                     split.bucket_bytes, split.cap_bytes),
                )
            self.conn.executemany(
                """INSERT INTO collectives (run_id, graph_id, node_id, node_name, op, role, peers_json,
                       group_name, group_size, reduce_op, bytes, issued_by, style, frame_file, frame_line,
                       frame_function, frame_code, redistribute, model_file, model_line, model_function,
                       model_code)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [(self.run_id, ids.graph_id, ids.post_nodes.get(c.node), c.node, c.op, c.role, _json(c.peers),
                  c.group, c.group_size, c.reduce_op, c.bytes, c.issued_by, c.style, *self._frame_columns(c.frame),
                  c.redistribute, *self._source_columns(c.model_line))
                 for c in graph.collectives],
            )

    def _frame_columns(self, frame: SourceLocation | None) -> tuple:
        """A frame of torch's or a library's code (not one of the run's source files)."""
        if frame is None:
            return (None, None, "", "")
        return (paths.source_key(frame.file, self.record.workspace), frame.line, frame.function, frame.code)

    def _source_columns(self, source: SourceLocation | None) -> tuple:
        if source is None:
            return (None, None, "", "")
        file = self.source_keys.get(source.file)
        if file is None:  # every frame of every stack names a file: normalize each path once
            file = self.source_keys[source.file] = paths.source_key(source.file, self.record.workspace)
            self.source_files.add(file)
        return (file, source.line, source.function, source.code)

    def _write_file(self, key: str, kind: str, text: str, graph_id: int, kernel_id: int | None = None) -> None:
        """Write a generated file under the staging dir and record it in `files`."""
        data = text.encode("utf-8")
        inside_run = key[len(paths.run_dir(self.run_id)) + 1:]
        target = self.staging / inside_run
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.conn.execute(
            """INSERT INTO files (run_id, path, kind, graph_id, kernel_id, sha256, line_count)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (self.run_id, key, kind, graph_id, kernel_id, hashlib.sha256(data).hexdigest(),
             len(text.splitlines())),
        )


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)
