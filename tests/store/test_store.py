"""Writing runs: files, rows, paths, coverage, atomicity, and broken stores."""
from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from synthetic_runs import (  # noqa: F401  (fixtures)
    BW_GELU_KERNEL,
    FW_GELU_KERNEL,
    FW_POST_GRAD,
    FW_PRE_GRAD,
    FW_WRAPPER,
    LIBRARY_FILE,
    make_mlp_run,
    mlp_store,
    workspace,
)

from kernelscope.errors import StoreError
from kernelscope.store import StoreBackend
from kernelscope.store.database.tables import STORE_SCHEMA_VERSION
from kernelscope.store.writing import writer

FW = "runs/1/graphs/0_0_0-forward"
BW = "runs/1/graphs/0_0_0-backward"


def rows(store: StoreBackend, sql: str, *params) -> list[tuple]:
    return [tuple(row) for row in store.conn.execute(sql, params)]


def test_generated_text_is_written_as_real_files(mlp_store, workspace):
    root = workspace / ".kernelscope"
    assert (root / FW / "pre_grad.py").read_text() == FW_PRE_GRAD
    assert (root / FW / "post_grad.py").read_text() == FW_POST_GRAD
    assert (root / FW / "wrapper.py").read_text() == FW_WRAPPER
    assert (root / FW / "kernels/triton_poi_fused_gelu_0.py").read_text() == FW_GELU_KERNEL
    assert (root / BW / "kernels/triton_poi_fused_gelu_gelu_backward_0.py").read_text() == BW_GELU_KERNEL
    assert not (root / BW / "pre_grad.py").exists()  # a backward graph has no pre-grad graph of its own
    written = sorted(p.relative_to(root).as_posix() for p in (root / "runs").rglob("*.py"))
    assert written == [
        f"{BW}/kernels/triton_poi_fused_gelu_gelu_backward_0.py",
        f"{BW}/post_grad.py",
        f"{BW}/wrapper.py",
        f"{FW}/kernels/triton_poi_fused_gelu_0.py",
        f"{FW}/post_grad.py",
        f"{FW}/pre_grad.py",
        f"{FW}/wrapper.py",
    ]


def test_files_table_holds_paths_hashes_and_line_counts(mlp_store, workspace):
    generated = rows(mlp_store, "SELECT path, kind, sha256, line_count FROM files WHERE kind != 'source' ORDER BY path")
    assert [(path, kind, count) for path, kind, _, count in generated] == [
        (f"{BW}/kernels/triton_poi_fused_gelu_gelu_backward_0.py", "kernel", 20),
        (f"{BW}/post_grad.py", "post_grad", 10),
        (f"{BW}/wrapper.py", "wrapper", 10),
        (f"{FW}/kernels/triton_poi_fused_gelu_0.py", "kernel", 21),
        (f"{FW}/post_grad.py", "post_grad", 12),
        (f"{FW}/pre_grad.py", "pre_grad", 7),
        (f"{FW}/wrapper.py", "wrapper", 15),
    ]
    for path, _, sha256, _ in generated:
        assert sha256 == hashlib.sha256((workspace / ".kernelscope" / path).read_bytes()).hexdigest()
    sources = rows(mlp_store, "SELECT path FROM files WHERE kind = 'source' ORDER BY path")
    assert sources == [(LIBRARY_FILE,), ("examples/mlp.py",)]


def test_source_paths_are_workspace_relative_inside_and_absolute_outside(mlp_store):
    assert rows(mlp_store, "SELECT DISTINCT source_file FROM nodes WHERE source_file IS NOT NULL ORDER BY 1") == [
        (LIBRARY_FILE,), ("examples/mlp.py",)
    ]
    assert rows(mlp_store, "SELECT source_file, source_line FROM graph_breaks") == [("examples/mlp.py", 18)]


def test_rows_per_table(mlp_store):
    counts = {table: rows(mlp_store, f"SELECT COUNT(*) FROM {table}")[0][0]
              for table in ("runs", "graphs", "nodes", "node_links", "kernels", "kernel_nodes", "kernel_calls",
                            "generated_lines", "graph_breaks", "recompiles")}
    assert counts == {
        "runs": 1, "graphs": 2,
        "nodes": 6 + 15 + 13,  # forward pre + forward post + backward post
        "node_links": 9 + 6,  # every forward call_function and 6 of 7 backward ones name a pre-grad node
        "kernels": 5, "kernel_nodes": 2 + 5 + 2 + 2 + 5, "kernel_calls": 5,
        # one row per (line, node): forward kernel 1+2+6, backward kernel 8, fw wrapper 13, bw wrapper 9
        "generated_lines": 9 + 8 + 13 + 9,
        "graph_breaks": 1, "recompiles": 1,
    }


def test_backward_nodes_link_to_the_forward_pre_grad_graph(mlp_store):
    linked = rows(mlp_store, """
        SELECT post.name, pre.name, pre_graph.kind FROM node_links l
        JOIN nodes post ON post.id = l.post_node_id JOIN nodes pre ON pre.id = l.pre_node_id
        JOIN graphs post_graph ON post_graph.id = post.graph_id JOIN graphs pre_graph ON pre_graph.id = pre.graph_id
        WHERE post_graph.kind = 'backward' ORDER BY post.position""")
    assert linked == [("permute_2", "linear_1", "forward"), ("mm", "linear_1", "forward"),
                      ("mul_3", "h_1", "forward"), ("erf_1", "h_1", "forward"), ("add_1", "h_1", "forward"),
                      ("mul_5", "h_1", "forward")]
    assert rows(mlp_store, "SELECT COUNT(*) FROM node_links WHERE pre_node_id IS NULL") == [(0,)]


def test_generated_lines_have_one_row_per_line_and_node(mlp_store):
    kernel_line_12 = rows(mlp_store, "SELECT line, reason, node_name FROM generated_lines WHERE file = ? AND line = 12 "
                                     "ORDER BY node_name", f"{FW}/kernels/triton_poi_fused_gelu_0.py")
    assert kernel_line_12 == [(12, "loads for", "mul"), (12, "loads for", "mul_1")]
    unmapped = rows(mlp_store, "SELECT line, reason, node_name, node_id FROM generated_lines WHERE node_name IS NULL")
    assert unmapped == [(8, "indexing", None, None)]
    assert rows(mlp_store, "SELECT COUNT(*) FROM generated_lines "
                           "WHERE node_name IS NOT NULL AND node_id IS NULL") == [(0,)]


def test_coverage_is_computed_at_write_time(mlp_store):
    assert mlp_store.runs()[0].coverage == {
        "kernel_lines": {"covered": 15, "total": 16, "share": 0.9375},
        "kernel_lines_specific": {"covered": 15, "total": 16, "share": 0.9375},
        "wrapper_lines": {"covered": 11, "total": 12, "share": 0.9167},
        "forward_nodes_with_source": {"covered": 9, "total": 9, "share": 1.0},
        "backward_nodes_with_source": {"covered": 6, "total": 7, "share": 0.8571},
        "kernel_agreement": {"covered": 1, "total": 1, "share": 1.0, "excluded": 1},
    }


def test_kernel_disagreeing_with_inductor_lowers_agreement(workspace):
    record = make_mlp_run(workspace)
    record.graphs[0].kernels[1].inductor_nodes = ["mul", "erf"]
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(record)
        assert store.runs()[0].coverage["kernel_agreement"] == {"covered": 0, "total": 1, "share": 0.0, "excluded": 1}


def test_database_is_wal_with_schema_version(mlp_store):
    assert rows(mlp_store, "PRAGMA journal_mode") == [("wal",)]
    assert rows(mlp_store, "PRAGMA foreign_keys") == [(1,)]
    assert rows(mlp_store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
        (str(STORE_SCHEMA_VERSION),)]


def test_runs_listing_and_latest_per_target(workspace):
    with StoreBackend(workspace / ".kernelscope") as store:
        first = store.write_run(make_mlp_run(workspace, created=100.0))
        other = make_mlp_run(workspace, created=200.0)
        other.target = "examples/mlp.py:make_small"
        second = store.write_run(other)
        third = store.write_run(make_mlp_run(workspace, created=300.0))
        assert [run.id for run in store.runs()] == [third, second, first]
        assert store.latest_run_id() == third
        assert store.latest_run_id("examples/mlp.py:make_small") == second
        assert {target: run.id for target, run in store.latest_runs_by_target().items()} == {
            "examples/mlp.py:make": third, "examples/mlp.py:make_small": second}


def test_delete_run_removes_rows_and_files_only_of_that_run(workspace):
    root = workspace / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(make_mlp_run(workspace))
        store.write_run(make_mlp_run(workspace))
        store.delete_run(1)
        assert [run.id for run in store.runs()] == [2]
        assert not (root / "runs/1").exists()
        assert (root / "runs/2/graphs/0_0_0-forward/wrapper.py").exists()
        for table in ("graphs", "nodes", "kernels", "generated_lines", "files", "graph_breaks", "recompiles"):
            assert rows(store, f"SELECT COUNT(*) FROM {table} WHERE run_id = 1") == [(0,)], table
        assert rows(store, "SELECT COUNT(*) FROM node_links") == [(15,)]
        assert rows(store, "SELECT COUNT(*) FROM kernel_nodes") == [(16,)]
        with pytest.raises(StoreError, match="there is no run 1"):
            store.delete_run(1)


# -- all or nothing -------------------------------------------------------------------


def _store_state(store: StoreBackend, root) -> tuple:
    tables = ("runs", "graphs", "nodes", "node_links", "kernels", "kernel_nodes", "kernel_calls",
              "generated_lines", "files", "graph_breaks", "recompiles")
    counts = tuple(rows(store, f"SELECT COUNT(*) FROM {table}")[0][0] for table in tables)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "runs").rglob("*"))
    return counts, files


@pytest.mark.parametrize("fail_at", ["lines", "rename"])
def test_failed_write_leaves_nothing_and_keeps_previous_runs(workspace, monkeypatch, fail_at):
    root = workspace / ".kernelscope"
    store = StoreBackend(root)
    store.write_run(make_mlp_run(workspace))
    before = _store_state(store, root)

    if fail_at == "lines":  # midway: the first graph's files and rows are written, the second's are not
        calls = []
        original = writer._RunWriter._insert_lines

        def failing_insert_lines(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("disk full (injected)")
            return original(self, *args, **kwargs)

        monkeypatch.setattr(writer._RunWriter, "_insert_lines", failing_insert_lines)
    else:  # after every row and file, at the rename into place
        def failing_replace(source, target):
            raise OSError("rename failed (injected)")

        monkeypatch.setattr(writer.os, "replace", failing_replace)

    with pytest.raises((RuntimeError, OSError), match="injected"):
        store.write_run(make_mlp_run(workspace))
    assert _store_state(store, root) == before
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["1"]  # no staging dir left
    assert store.query("examples/mlp.py", 13).location.run_id == 1

    monkeypatch.undo()
    assert store.write_run(make_mlp_run(workspace)) == 2
    store.close()


def test_duplicate_kernel_file_is_refused_and_nothing_is_written(workspace):
    root = workspace / ".kernelscope"
    record = make_mlp_run(workspace)
    forward = record.graphs[0]
    forward.kernels.append(forward.kernels[1])
    with StoreBackend(root) as store:
        with pytest.raises(StoreError, match="two kernels named 'triton_poi_fused_gelu_0'"):
            store.write_run(record)
        assert store.runs() == []
        assert list((root / "runs").iterdir()) == []


def test_lines_without_kernel_source_are_refused(workspace):
    record = make_mlp_run(workspace)
    record.graphs[0].kernels[1].source = ""
    with StoreBackend(workspace / ".kernelscope") as store, pytest.raises(StoreError, match="no source text"):
        store.write_run(record)


# -- broken or missing stores ---------------------------------------------------------


def test_missing_store_is_an_error_when_not_creating(tmp_path):
    with pytest.raises(StoreError, match=r"no kernelscope store at .*nowhere — run `kernelscope compile"):
        StoreBackend(tmp_path / "nowhere", create=False)
    assert not (tmp_path / "nowhere").exists()


def test_corrupt_database_file_raises_store_error_naming_it(tmp_path):
    root = tmp_path / ".kernelscope"
    root.mkdir()
    (root / "kernelscope.sqlite").write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(StoreError) as caught:
        StoreBackend(root)
    message = str(caught.value)
    assert str(root / "kernelscope.sqlite") in message
    assert "not a readable SQLite database" in message and "kernelscope doctor" in message


def test_sqlite_file_of_another_program_is_refused(tmp_path):
    root = tmp_path / ".kernelscope"
    root.mkdir()
    conn = sqlite3.connect(root / "kernelscope.sqlite")
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="SQLite database but not a kernelscope store"):
        StoreBackend(root)


def test_newer_store_schema_is_refused(mlp_store, workspace):
    mlp_store.conn.execute("UPDATE meta SET value = '99' WHERE key = 'store_schema_version'")
    mlp_store.close()
    with pytest.raises(StoreError, match=r"store schema version '99', but this kernelscope reads version "
                       rf"{STORE_SCHEMA_VERSION}: upgrade"):
        StoreBackend(workspace / ".kernelscope")


def test_older_store_schema_is_refused_with_how_to_re_record(mlp_store, workspace):
    """A version-1 store never recorded call stacks or module instances: it cannot be
    upgraded, so it is refused with the way out, and left as it was."""
    mlp_store.conn.execute("UPDATE meta SET value = '1' WHERE key = 'store_schema_version'")
    mlp_store.close()
    before = (workspace / ".kernelscope" / "kernelscope.sqlite").read_bytes()
    with pytest.raises(StoreError, match=r"written by an older kernelscope \(store schema version 1; "
                                         rf"this one reads version {STORE_SCHEMA_VERSION}.*"
                                         r"Re-record: move .*\.kernelscope away"):
        StoreBackend(workspace / ".kernelscope")
    assert (workspace / ".kernelscope" / "kernelscope.sqlite").read_bytes() == before


WHY_TABLES = ("guard_failure_lines", "guard_failures", "guards", "fusion_refusals")  # version 6 (docs/why.md)
# every table version 6 added: a version-5 store has none of them
ADDED_IN_6 = ("user_kernel_lines", "user_kernels", "recomputed_nodes", *WHY_TABLES, "graph_memory", "memory_buffers",
              "eager_memory", "eager_memory_lines", "numerics_runs", "numerics_outputs")
# version 7: where each wrapper ran from, --memory's measured step (docs/memory.md), the
# x86-64 facts of C++ kernels (docs/below-the-kernel.md) and foreach sub-kernels
ADDED_IN_7 = ("graph_wrapper_files", "memory_measured", "memory_measured_lines", "kernel_cpu_asm",
              "kernel_parts")


def test_version_6_store_gains_the_foreach_sub_kernels(mlp_store, workspace):
    """A version-6 store opens with its runs as they were: no foreach sub-kernel recorded."""
    conn = mlp_store.conn
    for table in ADDED_IN_7:
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '6' WHERE key = 'store_schema_version'")
    mlp_store.close()
    with StoreBackend(workspace / ".kernelscope") as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT COUNT(*) FROM kernel_parts") == [(0,)]
        assert store.run(1).kernel_parts() == []


def test_version_5_store_gains_the_why_tables(mlp_store, workspace):
    """A version-5 store (before guards and fusion refusals were recorded) opens with its runs
    as they were; they answer with no guard, recompile failure or refusal."""
    conn = mlp_store.conn
    for table in (*ADDED_IN_6, *ADDED_IN_7):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'store_schema_version'")
    mlp_store.close()
    with StoreBackend(workspace / ".kernelscope") as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert store.run(1).guards() == [] and store.run(1).guard_failures() == []
        assert store.run(1).why_at("examples/mlp.py", 12).empty


def test_version_2_store_gains_the_tables_added_since(mlp_store, workspace):
    """Versions 3 and 4 only add tables (below the kernel, filled on first ask; distributed
    jobs; timing decisions): a version-2 store opens with its runs as they were and the new
    tables empty."""
    conn = mlp_store.conn
    for table in ("asm_lines", "asm_files", "kernel_launches", "kernel_asm", "collectives", "graph_code",
                  "graph_splits", "run_ranks", "decisions", "run_decision_info", "graph_subgraphs", *ADDED_IN_6,
                  *ADDED_IN_7):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'store_schema_version'")
    runs_before = rows(mlp_store, "SELECT id, target FROM runs")
    mlp_store.close()
    with StoreBackend(workspace / ".kernelscope") as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT id, target FROM runs") == runs_before
        assert rows(store, "SELECT COUNT(*) FROM kernel_asm") == [(0,)]
        assert store.asm.pending(1)  # its Triton kernels can be built below the kernel
        assert rows(store, "SELECT COUNT(*) FROM run_ranks") == [(0,)]
        assert store.run(1).decisions().decisions == []


def test_version_3_store_gains_the_decisions_tables(mlp_store, workspace, monkeypatch):
    """A version-3 store (before timing decisions) opens with its runs as they were: writable,
    it gains the decisions tables; read-only (opened immutable, as a read-only mount is), its
    runs read as having made no decision."""
    from kernelscope.store.database import connection

    conn = mlp_store.conn
    for table in ("decisions", "run_decision_info", "graph_subgraphs", *ADDED_IN_6, *ADDED_IN_7):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'store_schema_version'")
    mlp_store.close()
    root = workspace / ".kernelscope"
    with monkeypatch.context() as patched:
        patched.setattr(connection, "writable_store", lambda root: False)
        with StoreBackend(root, create=False) as store:
            assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [("3",)]
            assert store.run(1).decisions().decisions == [] and store.run(1).dump()["run"]["decisions"] == []
    with StoreBackend(root) as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT COUNT(*) FROM decisions") == [(0,)]


def test_version_4_store_gains_the_subgraph_tables(mlp_store, workspace, monkeypatch):
    """A version-4 store (before higher-order ops' subgraphs) opens with its runs as they
    were: read-only, its graphs read as no subgraph (show, the dump, query answers); writable,
    it gains the subgraph table."""
    from kernelscope.store.database import connection

    conn = mlp_store.conn
    for table in ("graph_subgraphs", *ADDED_IN_6, *ADDED_IN_7):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'store_schema_version'")
    mlp_store.close()
    root = workspace / ".kernelscope"
    with monkeypatch.context() as patched:
        patched.setattr(connection, "writable_store", lambda root: False)
        with StoreBackend(root, create=False) as store:
            assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [("4",)]
            assert all(graph.subgraph is None for graph in store.run(1).details().graphs)
            assert all(graph["subgraph"] is None for graph in store.run(1).dump()["run"]["graphs"])
    with StoreBackend(root) as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT COUNT(*) FROM graph_subgraphs") == [(0,)]


def test_version_5_store_gains_the_version_6_tables(mlp_store, workspace, monkeypatch):
    """A version-5 store (before user Triton kernels line for line, recomputed backward nodes
    and memory) opens with its runs as they were: read-only, its kernels read as no user kernel and
    nothing as recomputed, no memory recorded (show, the dump, query answers); writable, it gains the tables."""
    from kernelscope.store.database import connection

    conn = mlp_store.conn
    for table in (*ADDED_IN_6, *ADDED_IN_7):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '5' WHERE key = 'store_schema_version'")
    mlp_store.close()
    root = workspace / ".kernelscope"
    with monkeypatch.context() as patched:
        patched.setattr(connection, "writable_store", lambda root: False)
        with StoreBackend(root, create=False) as store:
            assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [("5",)]
            assert store.run(1).user_kernels() == []
            assert all(kernel["user"] is None for graph in store.run(1).dump()["run"]["graphs"]
                       for kernel in graph["kernels"])
            assert store.query("examples/mlp.py", 13, run_id=1).user_kernels == []
            assert all(graph.recomputed is None for graph in store.run(1).details().graphs)
            assert all(node["recompute"] == "" for graph in store.run(1).dump()["run"]["graphs"]
                       for node in graph["post_grad_nodes"])
            assert store.run(1).memory() is None
            dumped = store.run(1).dump()["run"]
            assert dumped["memory"] is None and all(graph["memory"] is None for graph in dumped["graphs"])
    with StoreBackend(root) as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT COUNT(*) FROM user_kernels") == [(0,)]
        assert rows(store, "SELECT COUNT(*) FROM recomputed_nodes") == [(0,)]
        assert rows(store, "SELECT COUNT(*) FROM memory_buffers") == [(0,)]


@pytest.mark.slow
def test_version_6_store_gains_the_measured_memory_tables(recordings, tmp_path, monkeypatch):
    """A version-6 store (memory predicted, never measured, wrapper files not kept) opens with
    its runs' memory as it was, measuring nothing; writable, it gains the tables."""
    from kernelscope.store.database import connection

    root = tmp_path / ".kernelscope"
    record = recordings.get("mlp", train=True)
    with StoreBackend(root, create=True) as store:
        store.write_run(record)
        # kept since version 7 (read by SQL: a RunView's answers are cached per process)
        assert rows(store, "SELECT COUNT(*) FROM graph_wrapper_files") == [(len(record.graphs),)]
        for table in ADDED_IN_7:
            store.conn.execute(f"DROP TABLE {table}")
        store.conn.execute("UPDATE meta SET value = '6' WHERE key = 'store_schema_version'")
        store.conn.commit()
    with monkeypatch.context() as patched:
        patched.setattr(connection, "writable_store", lambda root: False)
        with StoreBackend(root, create=False) as store:
            old = store.run(1).memory()
            peak = max(graph.memory.peak_bytes for graph in record.graphs)
            assert (old.peak_bytes, old.step.graph, old.measured) == (peak, "0_0_0-backward", None)
            assert all(graph.wrapper_file == "" for graph in old.graphs)
            assert store.run(1).dump()["run"]["memory"]["measured"] is None
    with StoreBackend(root) as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT COUNT(*) FROM memory_measured_lines") == [(0,)]
        assert rows(store, "SELECT COUNT(*) FROM graph_wrapper_files") == [(0,)]


def test_version_6_store_gains_the_x86_stage(mlp_store, workspace):
    """A version-6 store (before C++ kernels were built for the CPU) opens with its builds as
    they were: `asm_files` is made again with the 'x86' stage allowed, its rows kept, and
    the CPU facts table is added."""
    conn = mlp_store.conn
    for table in ADDED_IN_7:
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP TABLE asm_files")
    conn.execute("""CREATE TABLE asm_files (
        kernel_id INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        stage TEXT NOT NULL CHECK (stage IN ('ttir', 'ttgir', 'ptx', 'sass')),
        path TEXT NOT NULL, line_count INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (kernel_id, stage))""")
    kernel_id = rows(mlp_store, "SELECT id FROM kernels WHERE run_id = 1 ORDER BY id")[0][0]
    conn.execute("INSERT INTO asm_files VALUES (?, 1, 'ptx', 'runs/1/asm/k.ptx', 3, 'x')", (kernel_id,))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO asm_files VALUES (?, 1, 'x86', 'runs/1/asm/k.x86', 3, 'x')", (kernel_id,))
    conn.execute("UPDATE meta SET value = '6' WHERE key = 'store_schema_version'")
    mlp_store.close()
    with StoreBackend(workspace / ".kernelscope") as store:
        assert rows(store, "SELECT value FROM meta WHERE key = 'store_schema_version'") == [
            (str(STORE_SCHEMA_VERSION),)]
        assert rows(store, "SELECT stage, path FROM asm_files") == [("ptx", "runs/1/asm/k.ptx")]
        store.conn.execute("INSERT INTO asm_files VALUES (?, 1, 'x86', 'runs/1/asm/k.x86', 3, 'x')", (kernel_id,))
        assert rows(store, "SELECT COUNT(*) FROM kernel_cpu_asm") == [(0,)]
        assert {row[1] for row in store.conn.execute("PRAGMA index_list(asm_files)")} >= {
            "asm_files_by_path", "asm_files_by_run"}


def test_json_columns_round_trip(mlp_store):
    run = rows(mlp_store, "SELECT timings_json, config_json, warnings_json FROM runs")[0]
    assert [json.loads(value) for value in run] == [
        {"capture_s": 0.25, "compile_s": 2.5}, {"max_autotune": False}, ["FX graph cache bypassed for recorded graphs"]]
