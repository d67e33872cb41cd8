"""A run's numerics (`kernelscope numerics`; docs/numerics.md): every kernel output compared
with eager, the first divergence, the fixes tried.

Reads and writes database/tables.py's NUMERICS_TABLES: `numerics_runs` (one row per run
recorded with numerics: tolerances, the first divergence, fixes, notes, timings) and
`numerics_outputs` (one row per kernel output, in launch order, with its node's model line
as a stored source key). Per-line errors are the outputs grouped by model line. A store
without the tables (older than them, opened read-only) reads as having no numerics.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from dataclasses import dataclass

from kernelscope.run_record import (
    NumericsDivergence,
    NumericsFix,
    NumericsOutput,
    NumericsReport,
    RunRecord,
    SourceLocation,
)
from kernelscope.store import paths
from kernelscope.store.database.sql import rows_if_table as _rows

__all__ = ["LineNumerics", "NumericsReport", "dump_numerics", "line_numerics", "read_numerics", "write_numerics"]


@dataclass
class LineNumerics:
    """The kernel outputs of one model line, worst first."""

    file: str  # stored key (workspace-relative)
    line: int
    max_abs: float
    max_rel: float
    over: bool  # an output beyond tolerance
    outputs: list[NumericsOutput]

    @property
    def first_launch(self) -> int:
        return min(output.launch for output in self.outputs)


def _source(source: SourceLocation | None, workspace: str) -> SourceLocation | None:
    if source is None:
        return None
    return dataclasses.replace(source, file=paths.source_key(source.file, workspace))


def write_numerics(conn: sqlite3.Connection, run_id: int, record: RunRecord) -> None:
    report = record.numerics
    if report is None:
        return
    first = report.first_divergence
    if first is not None:
        first = dataclasses.replace(first, source=_source(first.source, record.workspace))
    fixes = [dataclasses.replace(fix, first_divergence=dataclasses.replace(
        fix.first_divergence, source=_source(fix.first_divergence.source, record.workspace)))
        if fix.first_divergence is not None else fix for fix in report.fixes]
    conn.execute(
        """INSERT INTO numerics_runs (run_id, target, rtol, atol, first_json, fixes_json, notes_json, seconds_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        (run_id, report.target, report.rtol, report.atol, _json(first and dataclasses.asdict(first)),
         _json([dataclasses.asdict(fix) for fix in fixes]), _json(report.notes), _json(report.seconds)))
    rows = []
    for position, output in enumerate(report.outputs):
        source = _source(output.source, record.workspace)
        rows.append((run_id, position, output.launch, output.graph, output.kernel, output.arg, output.node,
                     output.dtype, source.file if source else None, source.line if source else None,
                     source.code if source else "", output.rtol, output.atol, output.max_abs, output.max_rel,
                     output.mismatched, output.elements, output.compiled_vs_fp64, output.eager_vs_fp64, output.note))
    conn.executemany(
        """INSERT INTO numerics_outputs (run_id, position, launch, graph_key, kernel, arg, node, dtype, source_file,
               source_line, source_code, rtol, atol, max_abs, max_rel, mismatched, elements, compiled_vs_fp64,
               eager_vs_fp64, note)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)


def _divergence(data: dict | None) -> NumericsDivergence | None:
    if data is None:
        return None
    source = data.pop("source")
    return NumericsDivergence(**data, source=SourceLocation(**source) if source else None)


def _output(row: sqlite3.Row) -> NumericsOutput:
    source = (SourceLocation(row["source_file"], row["source_line"], code=row["source_code"])
              if row["source_file"] is not None else None)
    return NumericsOutput(launch=row["launch"], graph=row["graph_key"], kernel=row["kernel"], arg=row["arg"],
                          node=row["node"], dtype=row["dtype"], source=source, rtol=row["rtol"], atol=row["atol"],
                          max_abs=row["max_abs"], max_rel=row["max_rel"], mismatched=row["mismatched"],
                          elements=row["elements"], compiled_vs_fp64=row["compiled_vs_fp64"],
                          eager_vs_fp64=row["eager_vs_fp64"], note=row["note"])


def read_numerics(conn: sqlite3.Connection, run_id: int) -> NumericsReport | None:
    """The run's numerics, or None for a run recorded without them."""
    found = _rows(conn, "SELECT * FROM numerics_runs WHERE run_id = ?", (run_id,))
    if not found:
        return None
    row = found[0]
    fixes = []
    for fix in json.loads(row["fixes_json"]):
        fix["first_divergence"] = _divergence(fix["first_divergence"])
        fixes.append(NumericsFix(**fix))
    outputs = [_output(output) for output in _rows(
        conn, "SELECT * FROM numerics_outputs WHERE run_id = ? ORDER BY position", (run_id,))]
    return NumericsReport(target=row["target"], rtol=row["rtol"], atol=row["atol"], outputs=outputs,
                          first_divergence=_divergence(json.loads(row["first_json"])), fixes=fixes,
                          notes=json.loads(row["notes_json"]), seconds=json.loads(row["seconds_json"]))


def line_numerics(report: NumericsReport, file: str | None = None) -> list[LineNumerics]:
    """The outputs grouped by model line (of one stored source file, or all), worst first."""
    grouped: dict[tuple[str, int], list[NumericsOutput]] = {}
    for output in report.outputs:
        if output.source is None or output.max_abs is None or (file is not None and output.source.file != file):
            continue
        grouped.setdefault((output.source.file, output.source.line), []).append(output)
    lines = [LineNumerics(file=key[0], line=key[1],
                          max_abs=max(output.max_abs or 0.0 for output in outputs),
                          max_rel=max(output.max_rel or 0.0 for output in outputs),
                          over=any(output.over for output in outputs), outputs=outputs)
             for key, outputs in grouped.items()]
    return sorted(lines, key=lambda line: (not line.over, -_finite(line.max_rel), line.file, line.line))


def _finite(value: float) -> float:
    return 1e308 if math.isinf(value) else (0.0 if math.isnan(value) else value)


def number(value: float | None):
    """A float for JSON: inf and nan as the strings "inf", "-inf", "nan" (JSON has no such numbers)."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def dump_numerics(report: NumericsReport | None) -> dict | None:
    """The dump's (and `numerics --json`'s) `numerics`: null for a run recorded without them."""
    if report is None:
        return None

    def divergence(first: NumericsDivergence | None) -> dict | None:
        if first is None:
            return None
        return {"launch": first.launch, "graph": first.graph, "kernel": first.kernel, "node": first.node,
                "target": first.target, "file": first.source.file if first.source else None,
                "line": first.source.line if first.source else None, "code": first.source.code if first.source else "",
                "max_abs": number(first.max_abs), "max_rel": number(first.max_rel), "cause": first.cause,
                "why": first.why, "compiled_vs_fp64": number(first.compiled_vs_fp64),
                "eager_vs_fp64": number(first.eager_vs_fp64)}

    kernels = []
    for output in report.outputs:
        kernels.append({"launch": output.launch, "graph": output.graph, "kernel": output.kernel, "arg": output.arg,
                        "node": output.node, "dtype": output.dtype,
                        "file": output.source.file if output.source else None,
                        "line": output.source.line if output.source else None,
                        "rtol": output.rtol, "atol": output.atol, "max_abs": number(output.max_abs),
                        "max_rel": number(output.max_rel), "mismatched": output.mismatched,
                        "elements": output.elements, "over": output.over,
                        "compiled_vs_fp64": number(output.compiled_vs_fp64),
                        "eager_vs_fp64": number(output.eager_vs_fp64), "note": output.note})
    return {
        "target": report.target, "rtol": report.rtol, "atol": report.atol,
        "first_divergence": divergence(report.first_divergence),
        "kernels": kernels,
        "lines": [{"file": line.file, "line": line.line, "max_abs": number(line.max_abs),
                   "max_rel": number(line.max_rel), "over": line.over, "outputs": len(line.outputs)}
                  for line in line_numerics(report)],
        "fixes": [{"kind": fix.kind, "what": fix.what, "gone": fix.gone, "error": fix.error,
                   "first_divergence": divergence(fix.first_divergence)} for fix in report.fixes],
        "notes": list(report.notes),
    }


def _json(value) -> str:
    return json.dumps(value, allow_nan=True)

