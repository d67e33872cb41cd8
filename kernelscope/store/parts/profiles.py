"""Device time attached to a run: its own tables, created on first use.

One profile per run (attaching again replaces it). Times are stored as totals
over the profiled steps with the step count; everything read back is per step.

How a kernel's time reaches source lines: a kernel's lines are the source lines
of its post-grad nodes. A kernel fused from several lines puts its whole time on
each of them, marked shared; totals (the run's, a graph's, `show`'s) add each
kernel once, so line times of shared kernels do not add up to the total.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections import defaultdict
from dataclasses import dataclass, field

from kernelscope.store.database import connection

TABLES = """
CREATE TABLE IF NOT EXISTS profiles (
    run_id            INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    created           REAL NOT NULL,
    source            TEXT NOT NULL,
    trace_name        TEXT NOT NULL,
    device_name       TEXT NOT NULL,
    steps             INTEGER NOT NULL,
    step_markers      INTEGER NOT NULL,
    step_time_us      REAL NOT NULL,
    device_total_us   REAL NOT NULL,
    attributed_us     REAL NOT NULL,
    in_graphs_other_us REAL NOT NULL,
    outside_graphs_us REAL NOT NULL,
    details_json      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS device_times (
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kernel_id      INTEGER NOT NULL REFERENCES kernels(id) ON DELETE CASCADE,
    device_time_us REAL NOT NULL,
    calls          INTEGER NOT NULL,
    PRIMARY KEY (run_id, kernel_id)
);
CREATE INDEX IF NOT EXISTS device_times_by_kernel ON device_times (kernel_id)
"""


@dataclass
class ProfileRecord:
    """What attaching writes: totals over `steps` steps (see kernelscope.profile.join)."""

    source: str  # "compile --profile" or "profile TRACE"
    trace_name: str
    device_name: str
    steps: int
    step_markers: bool
    step_time_us: float  # per step
    device_total_us: float  # over all steps
    kernel_times: dict[int, tuple[float, int]]  # kernel id -> (device time, device kernels run)
    in_graphs_other: dict[str, float]
    outside: dict[str, float]
    graph_calls: dict[str, int]
    warnings: list[str] = field(default_factory=list)


@dataclass
class KernelTimeRef:
    kernel_id: int
    graph: str  # `[0/0] forward`
    name: str
    kind: str
    device_time_us: float  # per step
    calls: float  # device kernels per step
    step_share: float | None
    shared: bool  # on more than one source line
    lines: list[tuple[str, int]]  # source lines (file, line)


@dataclass
class RunProfile:
    """A run's profile, per step."""

    run_id: int
    source: str
    trace_name: str
    device_name: str
    created: float
    steps: int
    step_markers: bool
    step_time_us: float
    device_time_us: float  # all device work launched in a step
    attributed_us: float  # on the run's kernels and extern calls
    in_graphs_other_us: float  # in a compiled graph, on no recorded kernel
    outside_graphs_us: float  # eager work, the optimizer, autograd's own copies
    in_graphs_other: dict[str, float]
    outside: dict[str, float]
    graph_calls: dict[str, int]
    warnings: list[str]
    kernels: dict[int, KernelTimeRef]

    @property
    def on_lines_us(self) -> float:
        """Device time of the kernels that reach at least one model source line (each once)."""
        return sum(k.device_time_us for k in self.kernels.values() if k.lines)

    def share(self, device_time_us: float | None) -> float | None:
        if device_time_us is None or not self.step_time_us:
            return None
        return device_time_us / self.step_time_us

    def summary(self) -> dict:
        """The profile without per-kernel rows (QueryResult.profile, JSON output)."""
        return {
            "source": self.source, "trace": self.trace_name, "device": self.device_name,
            "steps": self.steps, "step_markers": self.step_markers,
            "step_time_us": round(self.step_time_us, 3),
            "device_time_us": round(self.device_time_us, 3),
            "attributed_us": round(self.attributed_us, 3),
            "attributed_share": round(self.attributed_us / self.device_time_us, 4) if self.device_time_us else None,
            "on_lines_us": round(self.on_lines_us, 3),
            "on_lines_step_share": round(self.on_lines_us / self.step_time_us, 4) if self.step_time_us else None,
            "in_graphs_other_us": round(self.in_graphs_other_us, 3),
            "outside_graphs_us": round(self.outside_graphs_us, 3),
            "outside_graphs": {k: round(v, 3) for k, v in self.outside.items()},
            "in_graphs_other": {k: round(v, 3) for k, v in self.in_graphs_other.items()},
            "graph_calls": self.graph_calls, "warnings": self.warnings,
        }


def ensure_tables(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


def write_profile(conn: sqlite3.Connection, run_id: int, record: ProfileRecord) -> None:
    """Attach (or replace) run `run_id`'s profile, in one transaction."""
    connection.begin_write(conn)
    try:
        ensure_tables(conn)
        conn.execute("DELETE FROM device_times WHERE run_id = ?", (run_id,))
        conn.execute("DELETE FROM profiles WHERE run_id = ?", (run_id,))
        attributed = sum(total for total, _ in record.kernel_times.values())
        details = {"in_graphs_other": record.in_graphs_other, "outside": record.outside,
                   "graph_calls": record.graph_calls, "warnings": record.warnings}
        conn.execute(
            "INSERT INTO profiles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, time.time(), record.source, record.trace_name, record.device_name, record.steps,
             int(record.step_markers), record.step_time_us, record.device_total_us, attributed,
             sum(record.in_graphs_other.values()), sum(record.outside.values()), json.dumps(details)),
        )
        conn.executemany(
            "INSERT INTO device_times VALUES (?, ?, ?, ?)",
            [(run_id, kernel_id, total, calls) for kernel_id, (total, calls) in record.kernel_times.items()],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def read_profile(conn: sqlite3.Connection, run_id: int) -> RunProfile | None:
    """Run `run_id`'s profile per step, or None when it has none."""
    row = _profile_row(conn, run_id)
    if row is None:
        return None
    steps = max(row["steps"], 1)
    details = json.loads(row["details_json"])
    lines_of = kernel_source_lines(conn, run_id)
    profile = RunProfile(
        run_id=run_id, source=row["source"], trace_name=row["trace_name"], device_name=row["device_name"],
        created=row["created"], steps=row["steps"], step_markers=bool(row["step_markers"]),
        step_time_us=row["step_time_us"], device_time_us=row["device_total_us"] / steps,
        attributed_us=row["attributed_us"] / steps, in_graphs_other_us=row["in_graphs_other_us"] / steps,
        outside_graphs_us=row["outside_graphs_us"] / steps,
        in_graphs_other={k: v / steps for k, v in details["in_graphs_other"].items()},
        outside={k: v / steps for k, v in sorted(details["outside"].items(), key=lambda kv: -kv[1])},
        graph_calls=details["graph_calls"], warnings=details["warnings"], kernels={},
    )
    rows = conn.execute(
        """SELECT d.kernel_id, d.device_time_us, d.calls, k.name, k.kind, g.compile_id, g.kind AS graph_kind
           FROM device_times d JOIN kernels k ON k.id = d.kernel_id JOIN graphs g ON g.id = k.graph_id
           WHERE d.run_id = ?""",
        (run_id,),
    ).fetchall()
    for r in rows:
        per_step = r["device_time_us"] / steps
        lines = lines_of.get(r["kernel_id"], [])
        profile.kernels[r["kernel_id"]] = KernelTimeRef(
            kernel_id=r["kernel_id"], graph=f"[{r['compile_id']}] {r['graph_kind']}", name=r["name"],
            kind=r["kind"], device_time_us=per_step, calls=r["calls"] / steps,
            step_share=profile.share(per_step), shared=len(lines) > 1, lines=lines,
        )
    return profile


def kernel_source_lines(conn: sqlite3.Connection, run_id: int) -> dict[int, list[tuple[str, int]]]:
    """Kernel id -> the source lines of its post-grad nodes, sorted."""
    found: dict[int, set] = defaultdict(set)
    for row in conn.execute(
        """SELECT kn.kernel_id, n.source_file, n.source_line
           FROM kernels k JOIN kernel_nodes kn ON kn.kernel_id = k.id JOIN nodes n ON n.id = kn.node_id
           WHERE k.run_id = ? AND n.source_file IS NOT NULL AND n.source_line IS NOT NULL""",
        (run_id,),
    ):
        found[row[0]].add((row[1], row[2]))
    return {kernel_id: sorted(lines) for kernel_id, lines in found.items()}


def line_times(profile: RunProfile) -> dict[tuple[str, int], tuple[float, bool]]:
    """(file, line) -> (device time per step of the kernels on that line, whether any is shared)."""
    found: dict[tuple[str, int], tuple[float, bool]] = {}
    for kernel in profile.kernels.values():
        for line in kernel.lines:
            total, shared = found.get(line, (0.0, False))
            found[line] = (total + kernel.device_time_us, shared or kernel.shared)
    return found


@dataclass(frozen=True)
class ProfiledKernel:
    """A kernel or extern call as a profiler trace is joined with (kernelscope.profile.join)."""

    id: int
    name: str
    kind: str
    graph_id: int
    compile_id: str
    graph_kind: str
    wrapper_line: int | None  # the first wrapper line that launches or calls it


def run_kernels(conn: sqlite3.Connection, run_id: int) -> list[ProfiledKernel]:
    """Every kernel and extern call of a run with its graph and its (first) wrapper line."""
    return [ProfiledKernel(*row) for row in conn.execute(
        """SELECT k.id, k.name, k.kind, k.graph_id, g.compile_id, g.kind AS graph_kind,
                  (SELECT MIN(c.wrapper_line) FROM kernel_calls c WHERE c.kernel_id = k.id) AS wrapper_line
           FROM kernels k JOIN graphs g ON g.id = k.graph_id
           WHERE k.run_id = ? ORDER BY g.id, k.position""",
        (run_id,),
    )]


def profile_stamp(conn: sqlite3.Connection, run_id: int) -> float | None:
    """When run `run_id`'s profile was attached (None: it has none); keys cached answers
    that carry device times."""
    try:
        row = conn.execute("SELECT created FROM profiles WHERE run_id = ?", (run_id,)).fetchone()
    except sqlite3.OperationalError:  # no profile was ever attached in this store
        return None
    return None if row is None else row[0]


def annotate_query(conn: sqlite3.Connection, result) -> None:
    """Put device times on a QueryResult's kernels and source lines (when the run has a
    profile). Index lookups only: the cost depends on the answer, not the run's size."""
    row = _profile_row(conn, result.location.run_id)
    if row is None:
        return
    steps = max(row["steps"], 1)
    kernel_ids = {}
    for chain in result.graphs:
        for kernel in chain.kernels:
            found = conn.execute("SELECT id FROM kernels WHERE graph_id = ? AND name = ?",
                                 (chain.graph.id, kernel.name)).fetchone()
            if found is not None:
                kernel_ids[(chain.graph.id, kernel.name)] = found[0]
    source_kernels = {}
    for chain in result.graphs:
        for source in chain.sources:
            key = (source.file, source.line)
            if key not in source_kernels:
                source_kernels[key] = _kernels_of_lines(conn, result.location.run_id, source.file, source.line)
    every = set(kernel_ids.values()).union(*[ids for by_line in source_kernels.values() for ids in by_line.values()])
    times = _kernel_times(conn, every, steps)
    shared = _shared_kernels(conn, every)
    for chain in result.graphs:
        for kernel in chain.kernels:
            kernel_id = kernel_ids.get((chain.graph.id, kernel.name))
            kernel.device_time_us = round(times.get(kernel_id, 0.0), 3) if kernel_id is not None else 0.0
            kernel.shared = kernel_id in shared
        for source in chain.sources:
            ids = source_kernels[(source.file, source.line)].get(source.line, set())
            source.device_time_us = round(sum(times.get(i, 0.0) for i in ids), 3)
            source.shared = bool(ids & shared)
    result.profile = _summary(row)


def file_line_times(conn: sqlite3.Connection, run_id: int,
                    file: str) -> tuple[dict[int, tuple[float, bool]], float] | None:
    """For editors (code lenses, hovers): line -> (device time per step, shared) of a source
    file's lines with kernels, and the step time; None when the run has no profile.
    `kernelscope.profile.report.time_label(us, us / step)` makes "0.42 ms · 31% of step"."""
    row = _profile_row(conn, run_id)
    if row is None:
        return None
    by_line = _kernels_of_lines(conn, run_id, file)
    every = set().union(*by_line.values()) if by_line else set()
    times = _kernel_times(conn, every, max(row["steps"], 1))
    shared = _shared_kernels(conn, every)
    lines = {line: (sum(times.get(i, 0.0) for i in ids), bool(ids & shared)) for line, ids in by_line.items()}
    return lines, row["step_time_us"]


def annotate_file_links(conn: sqlite3.Connection, links) -> None:
    """Put device times on a source file's LineLinks (code lenses, inlay hints)."""
    if links.location.kind != "source":
        return
    row = _profile_row(conn, links.location.run_id)
    if row is None:
        return
    by_line = _kernels_of_lines(conn, links.location.run_id, links.location.path)
    every = set().union(*by_line.values()) if by_line else set()
    times = _kernel_times(conn, every, max(row["steps"], 1))
    shared = _shared_kernels(conn, every)
    for line in links.lines:
        ids = by_line.get(line.line, set())
        line.device_time_us = round(sum(times.get(i, 0.0) for i in ids), 3)
        line.shared = bool(ids & shared)
    links.profile = _summary(row)


def _profile_row(conn: sqlite3.Connection, run_id: int) -> sqlite3.Row | None:
    try:
        return conn.execute("SELECT * FROM profiles WHERE run_id = ?", (run_id,)).fetchone()
    except sqlite3.OperationalError:  # no profile was ever attached in this store
        return None


def _summary(row: sqlite3.Row) -> dict:
    steps = max(row["steps"], 1)
    details = json.loads(row["details_json"])
    device = row["device_total_us"] / steps
    return {
        "source": row["source"], "trace": row["trace_name"], "device": row["device_name"],
        "steps": row["steps"], "step_time_us": round(row["step_time_us"], 3),
        "device_time_us": round(device, 3), "attributed_us": round(row["attributed_us"] / steps, 3),
        "outside_graphs_us": round(row["outside_graphs_us"] / steps, 3),
        "in_graphs_other_us": round(row["in_graphs_other_us"] / steps, 3),
        "warnings": details["warnings"],
    }


def _chunks(ids: set[int], size: int = 500):
    ordered = sorted(ids)
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def _kernel_times(conn: sqlite3.Connection, kernel_ids: set[int], steps: int) -> dict[int, float]:
    found = {}
    for chunk in _chunks(kernel_ids):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT kernel_id, device_time_us FROM device_times WHERE kernel_id IN ({marks})",
                                chunk):
            found[row[0]] = row[1] / steps
    return found


def _shared_kernels(conn: sqlite3.Connection, kernel_ids: set[int]) -> set[int]:
    """The kernels among `kernel_ids` whose nodes are on more than one source line."""
    lines = defaultdict(set)
    for chunk in _chunks(kernel_ids):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"""SELECT kn.kernel_id, n.source_file, n.source_line FROM kernel_nodes kn
                JOIN nodes n ON n.id = kn.node_id
                WHERE kn.kernel_id IN ({marks}) AND n.source_file IS NOT NULL""", chunk,
        ):
            lines[row[0]].add((row[1], row[2]))
    return {kernel_id for kernel_id, found in lines.items() if len(found) > 1}


def _kernels_of_lines(conn: sqlite3.Connection, run_id: int, file: str, line: int | None = None) -> dict[int, set[int]]:
    """Source line -> the kernels with a node on it (one line, or every line of `file`)."""
    sql = """SELECT n.source_line, kn.kernel_id FROM nodes n JOIN kernel_nodes kn ON kn.node_id = n.id
             WHERE n.run_id = ? AND n.source_file = ?"""
    params: tuple = (run_id, file)
    if line is not None:
        sql += " AND n.source_line = ?"
        params += (line,)
    found: dict[int, set[int]] = defaultdict(set)
    for row in conn.execute(sql, params):
        found[row[0]].add(row[1])
    return found


def annotate_kernels(conn: sqlite3.Connection, run_id: int, kernels) -> RunProfile | None:
    """Put device times on RunDetails.kernels (KernelSummary: graph key + name)."""
    profile = read_profile(conn, run_id)
    if profile is None:
        return None
    by_key = {}
    for row in conn.execute(
        "SELECT k.id, g.key, k.name FROM kernels k JOIN graphs g ON g.id = k.graph_id WHERE k.run_id = ?",
        (run_id,),
    ):
        by_key[(row[1], row[2])] = row[0]
    for kernel in kernels:
        kernel_id = by_key.get((kernel.graph, kernel.name))
        timed = profile.kernels.get(kernel_id) if kernel_id is not None else None
        kernel.device_time_us = round(timed.device_time_us, 3) if timed else 0.0
        kernel.shared = bool(timed and timed.shared)
    return profile



def dump_profile(conn: sqlite3.Connection, run_id: int) -> dict | None:
    """The run's profile for `kernelscope dump` (schema `$defs/profile`), or None."""
    profile = read_profile(conn, run_id)
    if profile is None:
        return None
    return {
        "device": profile.device_name, "steps": profile.steps,
        "step_time_us": round(profile.step_time_us, 3), "device_time_us": round(profile.device_time_us, 3),
        "attributed_us": round(profile.attributed_us, 3), "in_graphs_other_us": round(profile.in_graphs_other_us, 3),
        "outside_graphs_us": round(profile.outside_graphs_us, 3),
        "outside_graphs": [{"op": op, "device_time_us": round(us, 3)} for op, us in sorted(profile.outside.items())],
        "kernels": sorted(({"graph": k.graph, "name": k.name, "device_time_us": round(k.device_time_us, 3),
                            "calls_per_step": round(k.calls, 3)} for k in profile.kernels.values()),
                          key=lambda k: (k["graph"], k["name"])),
    }
