"""A set of recorded timing decisions, as `--decisions` reads and replays it.

Three places hold decisions, all read into a `DecisionSet`: a run of a store (the
`decisions` table), a dump (`run.decisions`, dump schema 5.0), and a decisions file
(`kernelscope decisions RUN -o FILE`):

    {"kernelscope_decisions": "1.0",
     "recorded_on": {"gpu": {...}, "torch": "2.11.0+cu130", "triton": "3.6.0",
                     "target": "model.py:make", "device": "cuda"},
     "decisions": [{"kind": "pad_mm", "key": "...", "choice": "pad", ...}, ...]}

Each decision has the fields of `kernelscope.run_record.Decision`. Never imports torch.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.run_record import Decision, RunRecord

FILE_FORMAT = "1.0"
KINDS = ("pad_mm", "mm_compute_bound", "autotune", "fusion_benchmark", "triton_config")
ORIGINS = ("timed", "heuristic", "replayed", "guessed")
# What a replay may take from a recording: what the GPU decided (a guess is not the GPU's).
REPLAYABLE = ("timed", "heuristic", "replayed")


class DecisionsError(UserError):
    """A decisions source that cannot be read (a missing file, not JSON, a bad entry)."""


@dataclass
class DecisionSet:
    """Recorded decisions to replay under virtual-cuda."""

    source: str  # how messages name it: "run 3 of .kernelscope", "gpu-decisions.json"
    recorded_on: dict  # {"gpu", "torch", "triton", "target", "device"} of the recording
    decisions: list[Decision] = field(default_factory=list)
    explicit: bool = True  # named by --decisions (or an option); False: the workspace default
    _index: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for decision in self.decisions:
            self._index.setdefault((decision.kind, decision.key), decision)

    def find(self, kind: str, key: str) -> Decision | None:
        """The recorded decision of `kind` with Inductor's key `key` (the first recorded)."""
        return self._index.get((kind, key))

    @property
    def gpu(self) -> dict:
        return self.recorded_on.get("gpu") or {}

    def to_file_data(self) -> dict:
        """The decisions file's JSON data (see the module docstring)."""
        return {"kernelscope_decisions": FILE_FORMAT, "recorded_on": self.recorded_on,
                "decisions": [decision_to_dict(decision) for decision in self.decisions]}


def replayable(decisions: list[Decision]) -> list[Decision]:
    """The decisions a replay may take: those the GPU made (timed, by its heuristics, or
    replayed from another of its recordings), not a virtual-cuda guess."""
    return [decision for decision in decisions if decision.origin in REPLAYABLE]


def recorded_on(gpu: dict | None, torch_version: str, triton_version: str, target: str, device: str) -> dict:
    return {"gpu": gpu or {}, "torch": torch_version, "triton": triton_version, "target": target, "device": device}


def from_run(run: RunRecord, source: str) -> DecisionSet:
    """The decisions a recorded run made, to replay elsewhere."""
    return DecisionSet(source, recorded_on(run.gpu, run.torch_version, run.triton_version, run.target, run.device),
                       replayable(run.decisions))


# -- JSON -------------------------------------------------------------------------------


def decision_to_dict(decision: Decision) -> dict:
    """A decision as JSON data (the decisions file's, the dump's and the store's form)."""
    data = dataclasses.asdict(decision)
    data["timings"] = timings_to_json(decision.timings)
    return data


def timings_to_json(timings: dict[str, float | None]) -> dict[str, float | None]:
    """Milliseconds per option as JSON holds them: a failed (infinite) time is null."""
    return {name: _json_time(ms) for name, ms in sorted(timings.items())}


def decision_from_dict(data: object, where: str) -> Decision:
    """A Decision from JSON data; DecisionsError naming `where` for a malformed entry."""
    if not isinstance(data, dict):
        raise DecisionsError(f"{where}: a decision must be an object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(Decision)}
    missing = [name for name in ("kind", "key", "choice", "origin", "rule") if not isinstance(data.get(name), str)]
    if missing:
        raise DecisionsError(f"{where}: a decision needs the text fields {', '.join(missing)} "
                             "(write decisions with `kernelscope decisions RUN -o FILE`)")
    if data["kind"] not in KINDS:
        raise DecisionsError(f"{where}: unknown decision kind {data['kind']!r} (known: {', '.join(KINDS)})")
    if data["origin"] not in ORIGINS:
        raise DecisionsError(f"{where}: unknown origin {data['origin']!r} (known: {', '.join(ORIGINS)})")
    timings = data.get("timings") or {}
    if not isinstance(timings, dict) or not all(isinstance(v, (int, float)) or v is None for v in timings.values()):
        raise DecisionsError(f"{where}: `timings` must map each option to milliseconds (or null)")
    values = {name: data[name] for name in names if name in data}
    values["timings"] = {str(name): (math.inf if ms is None else float(ms)) for name, ms in timings.items()}
    values["detail"] = data.get("detail") or {}
    return Decision(**values)


def _json_time(ms: float | None) -> float | None:
    """Milliseconds as JSON: a failed (infinite) time is null."""
    return None if ms is None or not math.isfinite(ms) else ms


def load_file(path: Path, explicit: bool = True) -> DecisionSet:
    """A decisions file or a dump (schema 5.0 and later carry decisions), read from `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DecisionsError(f"--decisions {path}: cannot read it ({getattr(error, 'strerror', None) or error}): "
                             "pass a run id of the store, a dump, or a decisions file") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DecisionsError(f"{path}:{error.lineno}: not JSON ({error.msg}): pass a dump written by "
                             "`kernelscope dump` or a file written by `kernelscope decisions RUN -o FILE`") from error
    return from_data(data, str(path), explicit)


def from_data(data: object, name: str, explicit: bool = True) -> DecisionSet:
    """A DecisionSet from a decisions file's data or a dump's."""
    if isinstance(data, dict) and "kernelscope_decisions" in data:
        if data["kernelscope_decisions"] != FILE_FORMAT:
            raise DecisionsError(f"{name}: decisions file format {data['kernelscope_decisions']!r}, this kernelscope "
                                 f"reads {FILE_FORMAT!r}: upgrade kernelscope")
        entries, origin = data.get("decisions"), data.get("recorded_on") or {}
    elif isinstance(data, dict) and isinstance(data.get("run"), dict) and "schema_version" in data:
        run = data["run"]
        if "decisions" not in run:
            raise DecisionsError(f"{name}: a dump of schema {data['schema_version']} holds no decisions (they came "
                                 "with schema 5.0): dump the run again with this kernelscope, or re-record it")
        entries = run["decisions"]
        origin = recorded_on(run.get("gpu"), run.get("torch_version", ""), run.get("triton_version", ""),
                             run.get("target", ""), run.get("device", ""))
    else:
        raise DecisionsError(f"{name}: neither a decisions file nor a kernelscope dump: write one with "
                             "`kernelscope decisions RUN -o FILE` or `kernelscope dump RUN -o FILE`")
    if not isinstance(entries, list) or not isinstance(origin, dict):
        raise DecisionsError(f"{name}: `decisions` must be a list and `recorded_on` an object")
    decisions = [decision_from_dict(entry, f"{name}: decision {index + 1}") for index, entry in enumerate(entries)]
    return DecisionSet(name, origin, replayable(decisions), explicit)


def write_file(decision_set: DecisionSet, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(decision_set.to_file_data(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror} — pick another path") from error
