"""The store's runs: all of them newest first, the latest (per target), a run id resolved
(`resolve_run_id`: the latest when None, a StoreError for a run that does not exist), one
run's summary and details (what `kernelscope show` prints), and where each run's
workspace was recorded (kernelscope.store.places finds where it is now)."""
from __future__ import annotations

import json
import sqlite3

from kernelscope.errors import StoreError
from kernelscope.store.parts.recompute import recompute_summaries
from kernelscope.store.parts.subgraphs import subgraphs_of_run
from kernelscope.store.results import (
    FrameRef,
    GraphBreakInfo,
    GraphSummary,
    KernelSummary,
    RecompileInfo,
    RunDetails,
    RunSummary,
)


def list_runs(conn: sqlite3.Connection) -> list[RunSummary]:
    """All runs, newest first."""
    return [_summary(row) for row in conn.execute("SELECT * FROM runs ORDER BY id DESC")]


def run_summary(conn: sqlite3.Connection, run_id: int) -> RunSummary:
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (resolve_run_id(conn, run_id),)).fetchone()
    return _summary(row)


def fingerprint(conn: sqlite3.Connection) -> tuple[int | None, int]:
    """(newest run id, number of runs): changes whenever a run is written or deleted."""
    return tuple(conn.execute("SELECT MAX(id), COUNT(*) FROM runs").fetchone())


def workspaces(conn: sqlite3.Connection) -> list[str]:
    """The workspaces the store's runs were recorded in."""
    return [row[0] for row in conn.execute("SELECT DISTINCT workspace FROM runs")]


def workspace_rows(conn: sqlite3.Connection, relative: bool) -> list[tuple[str, str | None]]:
    """(recorded workspace, workspace relative to the store or None) of every run, distinct;
    `relative` says whether the store has the relative column (kernelscope.store.places)."""
    column = "workspace_from_store" if relative else "NULL"
    return [(row[0], row[1]) for row in conn.execute(f"SELECT DISTINCT workspace, {column} FROM runs")]


def workspace_of(conn: sqlite3.Connection, run_id: int, relative: bool) -> tuple[str, str | None]:
    """(recorded workspace, workspace relative to the store or None) of one run."""
    column = "workspace_from_store" if relative else "NULL"
    row = conn.execute(f"SELECT workspace, {column} FROM runs WHERE id = ?", (run_id,)).fetchone()
    return (row[0], row[1]) if row is not None else ("", None)


def latest_run_id(conn: sqlite3.Connection, target: str | None = None) -> int | None:
    if target is None:
        row = conn.execute("SELECT MAX(id) FROM runs").fetchone()
    else:
        row = conn.execute("SELECT MAX(id) FROM runs WHERE target = ?", (target,)).fetchone()
    return row[0]


def latest_runs_by_target(conn: sqlite3.Connection) -> dict[str, RunSummary]:
    rows = conn.execute("SELECT * FROM runs WHERE id IN (SELECT MAX(id) FROM runs GROUP BY target) ORDER BY target")
    return {row["target"]: _summary(row) for row in rows}


def resolve_run_id(conn: sqlite3.Connection, run_id: int | None) -> int:
    """`run_id` if that run exists, the latest run when None; StoreError otherwise."""
    if run_id is None:
        latest = latest_run_id(conn)
        if latest is None:
            raise StoreError("the store has no runs yet — run `kernelscope compile FILE.py:FACTORY` first")
        return latest
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
        raise StoreError(f"there is no run {run_id} in this store — `kernelscope runs` lists the runs")
    return run_id


def run_details(conn: sqlite3.Connection, run_id: int) -> RunDetails:
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (resolve_run_id(conn, run_id),)).fetchone()
    graphs = []
    subgraphs = subgraphs_of_run(conn, run_id)
    recomputed = recompute_summaries(conn, run_id)
    for graph in conn.execute("SELECT * FROM graphs WHERE run_id = ? ORDER BY id", (run_id,)).fetchall():
        counts = conn.execute(
            "SELECT SUM(stage = 'pre'), SUM(stage = 'post') FROM nodes WHERE graph_id = ?", (graph["id"],)
        ).fetchone()
        kernel_count = conn.execute("SELECT COUNT(*) FROM kernels WHERE graph_id = ?", (graph["id"],)).fetchone()[0]
        files = {
            file["kind"]: file["path"]
            for file in conn.execute(
                "SELECT kind, path FROM files WHERE graph_id = ? AND kind != 'kernel'", (graph["id"],)
            )
        }
        graphs.append(GraphSummary(
            key=graph["key"], compile_id=graph["compile_id"], kind=graph["kind"],
            pre_nodes=counts[0] or 0, post_nodes=counts[1] or 0, kernels=kernel_count, files=files,
            subgraph=subgraphs.get(graph["id"]), recomputed=recomputed.get(graph["id"]),
        ))
    nodes_of: dict[int, list[str]] = {}  # one pass over the run's kernel nodes, not a query per kernel
    for kernel_id, node_name in conn.execute(
        """SELECT kn.kernel_id, kn.node_name FROM kernels k JOIN kernel_nodes kn ON kn.kernel_id = k.id
           WHERE k.run_id = ? ORDER BY kn.kernel_id, kn.position""",
        (run_id,),
    ):
        nodes_of.setdefault(kernel_id, []).append(node_name)
    kernels = []
    for kernel in conn.execute(
        """SELECT k.id, k.name, k.kind, k.file, g.key AS graph_key, f.line_count
           FROM kernels k JOIN graphs g ON g.id = k.graph_id LEFT JOIN files f ON f.kernel_id = k.id
           WHERE k.run_id = ? ORDER BY g.id, k.position""",
        (run_id,),
    ).fetchall():
        kernels.append(KernelSummary(graph=kernel["graph_key"], name=kernel["name"], kind=kernel["kind"],
                                     file=kernel["file"], nodes=nodes_of.get(kernel["id"], []),
                                     line_count=kernel["line_count"]))
    breaks = [
        GraphBreakInfo(reason=brk["reason"], compile_id=brk["compile_id"], file=brk["source_file"],
                       line=brk["source_line"], function=brk["source_function"], code=brk["source_code"],
                       explanation=brk["explanation"], hints=json.loads(brk["hints_json"]), url=brk["url"],
                       stack=[FrameRef(*frame) for frame in json.loads(brk["stack_json"])])
        for brk in conn.execute("SELECT * FROM graph_breaks WHERE run_id = ? ORDER BY id", (run_id,))
    ]
    recompiles = [
        RecompileInfo(compile_id=rec["compile_id"], reason=rec["reason"])
        for rec in conn.execute("SELECT * FROM recompiles WHERE run_id = ? ORDER BY id", (run_id,))
    ]
    return RunDetails(
        summary=_summary(row),
        workspace=row["workspace"],
        graphs=graphs,
        kernels=kernels,
        graph_breaks=breaks,
        recompiles=recompiles,
        warnings=json.loads(row["warnings_json"]),
        timings=json.loads(row["timings_json"]),
        peak_memory_mb=row["peak_memory_mb"],
        execute_max_error=row["execute_max_error"],
        config=json.loads(row["config_json"]),
    )


def _summary(row: sqlite3.Row) -> RunSummary:
    return RunSummary(
        id=row["id"],
        created=row["created"],
        target=row["target"],
        device=row["device"],
        mode=row["mode"],
        dynamic=bool(row["dynamic"]),
        provenance=row["provenance"],
        torch_version=row["torch_version"],
        triton_version=row["triton_version"],
        graph_count=row["graph_count"],
        kernel_count=row["kernel_count"],
        coverage=json.loads(row["coverage_json"]),
    )
