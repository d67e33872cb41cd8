"""Why it recompiled, why it was not fused (tables.WHY_TABLES; docs/why.md).

A run's guards (each at the user line that caused it), its recompiles' failed guards
(with the values the failing call had and their lines) and the fusions Inductor's
scheduler refused: written with the run, read back per source line (`line_why`: what
`kernelscope query --json` carries as `guards`, `recompiles` and `not_fused`), per file
(`file_why`: where the language server puts its diagnostics) and whole (the dump's
`run.guards`, `run.recompiles[].failures` and each graph's `not_fused`).
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from kernelscope.run_record import RunRecord
from kernelscope.store.database import connection
from kernelscope.store.database.sql import select_in

# Guards a user wrote a line for: shown at the line by every front end. Dynamo's other
# guards (types, ids, dispatch keys of every input) are kept and answered too, but counted.
SHAPE_KINDS = ("shape", "specialization")


@dataclass
class GuardRef:
    compile_id: str
    kind: str  # shape | specialization | Dynamo's guard type (TENSOR_MATCH, ...)
    expression: str
    source: str  # what it checks, in the user's names ("x.size()[0]"; "" when not one source)
    added_by: str
    raw: str = ""
    file: str | None = None
    line: int | None = None
    code: str = ""
    line_via: str = ""  # guard (its own stack) | symbol (the line that made its symbol)


@dataclass
class RecompileRef:
    """A recompile one of this line's guards (or checks) caused."""

    compile_id: str  # the new compile
    failed_compile_id: str  # the cached compile whose guard failed
    guard: str
    values: dict[str, str] = field(default_factory=dict)
    lines: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, code) Dynamo names
    advice: str = ""


@dataclass
class NotFusedRef:
    """An op of this line that ended in another kernel than a neighbour's, and why: the
    scheduler refused (`cause` "scheduler", "template", "extern"), an extern call fuses
    nothing ("extern"), Inductor stored a value in a buffer ("realized buffer"), or a graph
    break put them in different graphs ("graph break")."""

    graph: str  # graph key
    compile_id: str
    node: str  # this line's post-grad node(s), comma-separated
    kernel: str  # the kernel(s) they ended in
    other_node: str
    other_file: str | None
    other_line: int | None
    other_code: str
    other_kernel: str
    reason: str  # the scheduler's own words; for the other causes, what kept them apart
    scheduler_nodes: tuple[str, str] = ("", "")  # Inductor's names (op3, op1_op2_op3), this side first
    # scheduler | extern | template | realized buffer | graph break (run_record.NotFused)
    cause: str = "scheduler"
    other_graph: str = ""  # the other side's graph key when it is another graph (a graph break)
    # this side's model line (its last node with one): the line asked about, or in a run's list
    file: str | None = None
    line: int | None = None
    code: str = ""


@dataclass
class LineWhy:
    guards: list[GuardRef] = field(default_factory=list)
    recompiles: list[RecompileRef] = field(default_factory=list)
    not_fused: list[NotFusedRef] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.guards or self.recompiles or self.not_fused)


# -- writing -------------------------------------------------------------------------------


def write_run_why(conn: sqlite3.Connection, run_id: int, record: RunRecord, graph_ids: list[int],
                  source_columns) -> None:
    """`source_columns(SourceLocation | None)` -> (file key, line, function, code), as the
    writer stores every user line (and lists the file among the run's)."""
    conn.executemany(
        """INSERT INTO guards (run_id, position, compile_id, kind, expression, raw, symbols_json, added_by,
               source_file, source_line, source_function, source_code, source_via, stack_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [(run_id, position, g.compile_id, g.kind, g.expression, g.raw, _json(g.symbols), g.added_by,
          *source_columns(g.source), g.source_via, _json([list(source_columns(f)) for f in g.stack]))
         for position, g in enumerate(record.guards)])
    for recompile in record.recompiles:
        for failure in recompile.failures:
            lines = [source_columns(line) for line in failure.lines]
            cursor = conn.execute(
                """INSERT INTO guard_failures (run_id, compile_id, failed_compile_id, guard, values_json, lines_json)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (run_id, recompile.compile_id, failure.failed_compile_id, failure.guard, _json(failure.values),
                 _json([list(line) for line in lines])))
            conn.executemany(
                "INSERT INTO guard_failure_lines (failure_id, run_id, source_file, source_line) VALUES (?, ?, ?, ?)",
                [(cursor.lastrowid, run_id, file, line) for file, line, _, _ in dict.fromkeys(lines) if file])
    id_of = {graph.key: graph_id for graph, graph_id in zip(record.graphs, graph_ids)}
    for graph, graph_id in zip(record.graphs, graph_ids):
        conn.executemany(
            """INSERT INTO fusion_refusals (run_id, graph_id, position, node1, node2, nodes1_json, nodes2_json, reason,
                   cause, other_graph_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [(run_id, graph_id, position, r.node1, r.node2, _json(r.nodes1), _json(r.nodes2), r.reason, r.cause,
              id_of.get(r.other_graph) if r.other_graph else None)
             for position, r in enumerate(graph.not_fused)])


# -- reading -------------------------------------------------------------------------------


def _recorded(conn: sqlite3.Connection) -> bool:
    """False in a read-only store of a version before these tables: its runs read as having none."""
    return connection.has_table(conn, "guards")


def line_why(conn: sqlite3.Connection, run_id: int, path: str, line: int) -> LineWhy:
    """The guards a model line installed, the recompiles they (or its checks) caused, and
    the fusions refused for its ops."""
    if not _recorded(conn):
        return LineWhy()
    guards = [_guard_ref(row) for row in conn.execute(
        "SELECT * FROM guards WHERE run_id = ? AND source_file = ? AND source_line = ? ORDER BY position",
        (run_id, path, line))]
    failure_ids = [row[0] for row in conn.execute(
        "SELECT DISTINCT failure_id FROM guard_failure_lines WHERE run_id = ? AND source_file = ? AND source_line = ?",
        (run_id, path, line))]
    recompiles = [_recompile_ref(row) for row in select_in(
        conn, "SELECT * FROM guard_failures WHERE id IN ({}) ORDER BY id", failure_ids)]
    return LineWhy(guards, recompiles, _not_fused_at(conn, run_id, path, line))


def file_why(conn: sqlite3.Connection, run_id: int, path: str) -> dict[int, LineWhy]:
    """Line -> its shape guards and specializations and the recompiles it caused, for a
    whole file (a language server's diagnostics): fusion refusals are asked per line."""
    if not _recorded(conn):
        return {}
    found: dict[int, LineWhy] = {}
    for row in conn.execute(
            f"SELECT * FROM guards WHERE run_id = ? AND source_file = ? AND kind IN {SHAPE_KINDS} ORDER BY position",
            (run_id, path)):
        found.setdefault(row["source_line"], LineWhy()).guards.append(_guard_ref(row))
    rows = conn.execute(
        """SELECT l.source_line, f.* FROM guard_failure_lines l JOIN guard_failures f ON f.id = l.failure_id
           WHERE l.run_id = ? AND l.source_file = ? ORDER BY f.id""", (run_id, path)).fetchall()
    for row in rows:
        found.setdefault(row["source_line"], LineWhy()).recompiles.append(_recompile_ref(row))
    return found


def run_guards(conn: sqlite3.Connection, run_id: int) -> list[GuardRef]:
    if not _recorded(conn):
        return []
    return [_guard_ref(row) for row in conn.execute(
        "SELECT * FROM guards WHERE run_id = ? ORDER BY position", (run_id,))]


def run_failures(conn: sqlite3.Connection, run_id: int) -> list[RecompileRef]:
    if not _recorded(conn):
        return []
    return [_recompile_ref(row) for row in conn.execute(
        "SELECT * FROM guard_failures WHERE run_id = ? ORDER BY id", (run_id,))]


def _not_fused_at(conn: sqlite3.Connection, run_id: int, path: str, line: int) -> list[NotFusedRef]:
    own = conn.execute(
        "SELECT id, graph_id, name FROM nodes WHERE run_id = ? AND source_file = ? AND source_line = ? "
        "AND stage = 'post'",
        (run_id, path, line)).fetchall()
    if not own:
        return []
    own_names = {(row["graph_id"], row["name"]) for row in own}
    own_graphs = sorted({row["graph_id"] for row in own})
    refusals = list(select_in(conn, "SELECT * FROM fusion_refusals WHERE graph_id IN ({}) ORDER BY graph_id, position",
                              own_graphs))
    causes = connection.has_column(conn, "fusion_refusals", "cause")  # a store of schema 6 before them: none
    if causes:  # a graph break's pair is kept on the first graph: this line may be its second side
        refusals += select_in(conn, "SELECT * FROM fusion_refusals WHERE other_graph_id IN ({}) "
                              "ORDER BY graph_id, position", own_graphs)
    if not refusals:
        return []
    graph_ids = {row["graph_id"] for row in refusals} | {row["other_graph_id"] for row in refusals if causes} - {None}
    graphs = {row["id"]: row for row in select_in(conn, "SELECT id, key, compile_id FROM graphs WHERE id IN ({})",
                                                   sorted(graph_ids))}
    found: dict[tuple, NotFusedRef] = {}
    for refusal in refusals:
        cause = (refusal["cause"] if causes else None) or "scheduler"
        side_graphs = (refusal["graph_id"], (refusal["other_graph_id"] if causes else None) or refusal["graph_id"])
        sides = (json.loads(refusal["nodes1_json"]), json.loads(refusal["nodes2_json"]))
        names = (refusal["node1"], refusal["node2"])
        for mine, theirs in ((0, 1), (1, 0)):
            here = [name for name in sides[mine] if (side_graphs[mine], name) in own_names]
            both_here = any((side_graphs[theirs], name) in own_names for name in sides[theirs])
            if not here or (both_here and (cause == "scheduler" or mine == 1)):
                continue  # not this line's; both sides this line's: a scheduler refusal inside one line says
                # little, another cause is told once
            graph_id, other_graph_id = side_graphs[mine], side_graphs[theirs]
            other = _node_place(conn, other_graph_id, sides[theirs])
            ref = NotFusedRef(
                file=path, line=line,
                graph=graphs[graph_id]["key"], compile_id=graphs[graph_id]["compile_id"], node=", ".join(here),
                kernel=", ".join(_kernels_of(conn, graph_id, here)), other_node=other[0], other_file=other[1],
                other_line=other[2], other_code=other[3],
                other_kernel=", ".join(_kernels_of(conn, other_graph_id, sides[theirs])),
                reason=refusal["reason"], scheduler_nodes=(names[mine], names[theirs]), cause=cause,
                other_graph=graphs[other_graph_id]["key"] if other_graph_id != graph_id else "")
            key = (ref.graph, ref.kernel, ref.other_graph, ref.other_file, ref.other_line, ref.other_kernel,
                   ref.reason)
            found.setdefault(key, ref)  # a pair asked again in a later round, as larger fused nodes
    return list(found.values())


def run_not_fused(conn: sqlite3.Connection, run_id: int) -> list[NotFusedRef]:
    """Every pair of a run kept apart, each side at its model line (`kernelscope show`, the
    TUI's `b`): in graph order, other causes before the scheduler's refusals."""
    if not _recorded(conn):
        return []
    causes = connection.has_column(conn, "fusion_refusals", "cause")
    rows = conn.execute(
        "SELECT r.*, g.key AS graph_key, g.compile_id AS graph_compile_id, "
        + ("r.cause AS why_cause, o.key AS other_key" if causes else "NULL AS why_cause, NULL AS other_key")
        + " FROM fusion_refusals r JOIN graphs g ON g.id = r.graph_id"
        + (" LEFT JOIN graphs o ON o.id = r.other_graph_id" if causes else "")
        + " WHERE r.run_id = ? ORDER BY r.graph_id, r.position", (run_id,)).fetchall()
    found: dict[tuple, NotFusedRef] = {}
    for row in rows:
        other_graph_id = (row["other_graph_id"] if causes else None) or row["graph_id"]
        nodes1, nodes2 = json.loads(row["nodes1_json"]), json.loads(row["nodes2_json"])
        mine, other = _node_place(conn, row["graph_id"], nodes1), _node_place(conn, other_graph_id, nodes2)
        ref = NotFusedRef(
            graph=row["graph_key"], compile_id=row["graph_compile_id"], node=mine[0],
            kernel=", ".join(_kernels_of(conn, row["graph_id"], nodes1)), other_node=other[0], other_file=other[1],
            other_line=other[2], other_code=other[3], other_kernel=", ".join(_kernels_of(conn, other_graph_id, nodes2)),
            reason=row["reason"], scheduler_nodes=(row["node1"], row["node2"]), cause=row["why_cause"] or "scheduler",
            other_graph=row["other_key"] or "", file=mine[1], line=mine[2], code=mine[3])
        key = (ref.graph, ref.kernel, ref.other_graph, ref.other_kernel, ref.file, ref.line, ref.other_line, ref.reason)
        found.setdefault(key, ref)
    return sorted(found.values(), key=lambda ref: ref.cause == "scheduler")


def _node_place(conn: sqlite3.Connection, graph_id: int, names: list[str]) -> tuple[str, str | None, int | None, str]:
    """(node names, file, line, code) of the other side: its last node with a model line."""
    rows = sorted(_by_names(conn, "SELECT position, name, source_file, source_line, source_code FROM nodes "
                            "WHERE graph_id = ? AND stage = 'post' AND name IN ({})", graph_id, names),
                  key=lambda row: row["position"])
    placed = [row for row in rows if row["source_file"]]
    last = placed[-1] if placed else None
    return (", ".join(names), last["source_file"] if last else None, last["source_line"] if last else None,
            last["source_code"] if last else "")


def _kernels_of(conn: sqlite3.Connection, graph_id: int, names: list[str]) -> list[str]:
    rows = _by_names(conn, "SELECT DISTINCT k.position, k.name FROM kernel_nodes kn JOIN kernels k "
                     "ON k.id = kn.kernel_id WHERE k.graph_id = ? AND kn.node_name IN ({})", graph_id, names)
    return list(dict.fromkeys(row["name"] for row in sorted(rows, key=lambda row: row["position"])))


def _by_names(conn: sqlite3.Connection, sql: str, graph_id: int, names: list[str]) -> list:
    """Rows of `sql` (`graph_id = ?` and one `IN ({})`) for node names of one graph, in chunks."""
    rows: list = []
    for start in range(0, len(names), 500):
        chunk = names[start:start + 500]
        rows += conn.execute(sql.format(", ".join("?" * len(chunk))), [graph_id, *chunk]).fetchall()
    return rows


def _guard_ref(row) -> GuardRef:
    symbols = json.loads(row["symbols_json"])
    return GuardRef(compile_id=row["compile_id"], kind=row["kind"], expression=row["expression"],
                    source=", ".join(dict.fromkeys(symbols.values())), added_by=row["added_by"], raw=row["raw"],
                    file=row["source_file"], line=row["source_line"], code=row["source_code"],
                    line_via=row["source_via"])


def _recompile_ref(row) -> RecompileRef:
    lines = [(file, line, code) for file, line, _, code in json.loads(row["lines_json"])]
    values = json.loads(row["values_json"])
    return RecompileRef(compile_id=row["compile_id"], failed_compile_id=row["failed_compile_id"], guard=row["guard"],
                        values=values, lines=lines, advice=advice(row["guard"], lines))


def advice(guard: str, lines: list[tuple[str, int, str]]) -> str:
    """What avoids a recompile like this one, where torch has a switch for it."""
    import re

    mismatch = re.search(r"tensor '(\w+)' size mismatch at index (\d+)", guard)
    if mismatch:
        name, dim = mismatch.groups()
        return (f"torch._dynamo.mark_dynamic({name}, {dim}) before the first call compiles one graph for every size "
                "of that dimension (without it Dynamo compiles once static, then again dynamic); "
                "torch._dynamo.config.automatic_dynamic_shapes=False keeps sizes static")
    if any(code.lstrip().startswith(("if ", "elif ", "while ")) for _, _, code in lines):
        return ("a Python branch on a size: each outcome compiles its own graph. torch.cond(pred, true_fn, false_fn, "
                "operands) keeps both in one graph; torch._check(...) states the one outcome your sizes take")
    if ".size()" in guard or ".stride()" in guard:
        return ("a guard on a symbolic size failed: torch._dynamo.mark_dynamic(tensor, dim, min=..., max=...) "
                "states the range up front")
    return ""


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


# -- the dump ------------------------------------------------------------------------------


def dump_guards(conn: sqlite3.Connection, run_id: int, portable, frame) -> list[dict]:
    """`run.guards`, sorted (`portable` makes text machine-free, `frame` a source location)."""
    if not _recorded(conn):
        return []
    found = []
    for row in conn.execute("SELECT * FROM guards WHERE run_id = ?", (run_id,)):
        source = None if row["source_file"] is None else frame(
            row["source_file"], row["source_line"], row["source_function"], row["source_code"])
        found.append({
            "compile_id": row["compile_id"], "kind": row["kind"], "expression": portable(row["expression"]),
            "raw": portable(row["raw"]), "symbols": json.loads(row["symbols_json"]), "added_by": row["added_by"],
            "source": source, "source_via": row["source_via"],
            "stack": [frame(*columns) for columns in json.loads(row["stack_json"]) if columns[0]],
        })
    return sorted(found, key=lambda g: (g["compile_id"], g["kind"], g["expression"], g["added_by"],
                                        json.dumps(g["source"], sort_keys=True)))


def dump_failures(conn: sqlite3.Connection, run_id: int, portable, frame) -> dict[str, list[dict]]:
    """compile id -> its `recompile.failures`, sorted."""
    if not _recorded(conn):
        return {}
    found: dict[str, list[dict]] = {}
    for row in conn.execute("SELECT * FROM guard_failures WHERE run_id = ?", (run_id,)):
        found.setdefault(row["compile_id"], []).append({
            "failed_compile_id": row["failed_compile_id"], "guard": portable(row["guard"]),
            "values": json.loads(row["values_json"]),
            "lines": [frame(*columns) for columns in json.loads(row["lines_json"]) if columns[0]],
        })
    return {key: sorted(rows, key=lambda f: (f["failed_compile_id"], f["guard"])) for key, rows in found.items()}


def dump_not_fused(conn: sqlite3.Connection, graph_id: int) -> list[dict]:
    if not _recorded(conn):
        return []
    causes = connection.has_column(conn, "fusion_refusals", "cause")
    columns = "r.cause AS why_cause, g.key AS other_key" if causes else "NULL AS why_cause, NULL AS other_key"
    rows = conn.execute(
        "SELECT r.*, " + columns
        + " FROM fusion_refusals r" + (" LEFT JOIN graphs g ON g.id = r.other_graph_id" if causes else "")
        + " WHERE r.graph_id = ?", (graph_id,)).fetchall()
    return sorted(({"node1": row["node1"], "node2": row["node2"], "nodes1": json.loads(row["nodes1_json"]),
                    "nodes2": json.loads(row["nodes2_json"]), "reason": row["reason"],
                    "cause": row["why_cause"] or "scheduler", "other_graph": row["other_key"] or ""} for row in rows),
                  key=lambda r: (r["cause"], r["node1"], r["node2"], r["nodes1"], r["nodes2"], r["reason"]))
