"""A run's timing decisions in the store (tables.DECISIONS_TABLES): written with the run,
read back as `RunDecisions` (RunView.decisions) and as the dump's `run.decisions`."""
from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from dataclasses import dataclass, field

from kernelscope.decisions.model import decision_to_dict as decision_row
from kernelscope.decisions.model import timings_to_json as timings_json
from kernelscope.run_record import Decision, DecisionReplay, RunRecord
from kernelscope.store.database import connection


@dataclass
class RunDecisions:
    """What a run decided by timing, or replayed, or guessed (docs/decisions.md)."""

    gpu: dict | None  # the GPU the code is for (virtual-cuda: the emulated one)
    decisions: list[Decision] = field(default_factory=list)
    replay: DecisionReplay | None = None  # virtual-cuda with --decisions: where they came from

    def counts(self) -> dict[str, int]:
        """origin -> how many decisions had it."""
        return dict(Counter(decision.origin for decision in self.decisions))

    @property
    def guessed(self) -> list[Decision]:
        return [decision for decision in self.decisions if decision.origin == "guessed"]


# -- writing -------------------------------------------------------------------------------


def write_run_decisions(conn: sqlite3.Connection, run_id: int, record: RunRecord,
                        kernel_ids: dict[tuple[str, str], int]) -> None:
    if record.gpu is None and not record.decisions and record.replay is None:
        return
    replay = record.replay
    conn.execute(
        "INSERT INTO run_decision_info (run_id, gpu_json, source, recorded_json, unused_json) VALUES (?, ?, ?, ?, ?)",
        (run_id, _json(record.gpu) if record.gpu is not None else None, replay.source if replay else None,
         _json(replay.recorded_on) if replay else None,
         _json([decision_row(d) for d in replay.unused] if replay else [])))
    conn.executemany(
        """INSERT INTO decisions (run_id, position, kind, key, choice, origin, rule, summary, location, kernel_name,
               kernel_id, timings_json, detail_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [(run_id, position, d.kind, d.key, d.choice, d.origin, d.rule, d.summary, d.where, d.kernel,
          kernel_ids.get((d.where, d.kernel)) if d.kernel else None, _json(timings_json(d.timings)),
          _json(d.detail)) for position, d in enumerate(record.decisions)])


def _decision(data: dict) -> Decision:
    timings = {name: (math.inf if ms is None else ms) for name, ms in (data.get("timings") or {}).items()}
    return Decision(**{**data, "timings": timings})


# -- reading -------------------------------------------------------------------------------


def read_run_decisions(conn: sqlite3.Connection, run_id: int) -> RunDecisions:
    if not connection.has_table(conn, "decisions"):  # a read-only store of an older version
        return RunDecisions(None)
    info = conn.execute("SELECT * FROM run_decision_info WHERE run_id = ?", (run_id,)).fetchone()
    decisions = [
        Decision(kind=row["kind"], key=row["key"], choice=row["choice"], origin=row["origin"], rule=row["rule"],
                 summary=row["summary"], where=row["location"], kernel=row["kernel_name"],
                 timings={name: (math.inf if ms is None else ms)
                          for name, ms in json.loads(row["timings_json"]).items()},
                 detail=json.loads(row["detail_json"]))
        for row in conn.execute("SELECT * FROM decisions WHERE run_id = ? ORDER BY position", (run_id,))
    ]
    if info is None:
        return RunDecisions(None, decisions)
    replay = None
    if info["source"] is not None:
        replay = DecisionReplay(info["source"], json.loads(info["recorded_json"] or "{}"),
                                [_decision(entry) for entry in json.loads(info["unused_json"])])
    return RunDecisions(json.loads(info["gpu_json"]) if info["gpu_json"] else None, decisions, replay)


def replayed_launches(conn: sqlite3.Connection, kernel_ids: list[int]) -> dict[int, str]:
    """kernel id -> where its replayed launch config came from ("run 3 of .kernelscope"),
    for those of `kernel_ids` whose config was replayed."""
    if not kernel_ids or not connection.has_table(conn, "decisions"):
        return {}
    found = {}
    for start in range(0, len(kernel_ids), 500):
        chunk = kernel_ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for kernel_id, detail in conn.execute(
                f"SELECT kernel_id, detail_json FROM decisions WHERE kind = 'triton_config' AND origin = 'replayed' "
                f"AND kernel_id IN ({marks})", chunk):
            found[kernel_id] = json.loads(detail).get("replayed_from") or "recorded decisions"
    return found


# -- the dump ------------------------------------------------------------------------------


def dump_decisions(conn: sqlite3.Connection, run_id: int, portable) -> dict:
    """The run's `gpu`, `decisions` and `replay` as the dump writes them (sorted, deterministic)."""
    found = read_run_decisions(conn, run_id)

    def rows(decisions: list[Decision]) -> list[dict]:
        out = [{**decision_row(d), "rule": portable(d.rule)} for d in decisions]
        return sorted(out, key=lambda row: (row["kind"], row["where"], row["kernel"], row["key"], row["choice"]))

    replay = found.replay
    return {
        "gpu": found.gpu,
        "decisions": rows(found.decisions),
        "replay": None if replay is None else {"source": portable(replay.source), "recorded_on": replay.recorded_on,
                                               "unused": rows(replay.unused)},
    }


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)
