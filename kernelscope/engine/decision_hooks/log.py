"""The timing decisions one recording makes (or replays, or guesses), in order."""
from __future__ import annotations

import contextlib
import math

from kernelscope.decisions.model import DecisionSet
from kernelscope.run_record import Decision, DecisionReplay


class DecisionLog:
    """What the hooks of one recording saw: each decision once per (kind, key), and, when
    replaying, which recorded ones were asked for."""

    def __init__(self, replay: DecisionSet | None = None):
        self.replay = replay
        self.decisions: list[Decision] = []
        self.problems: list[str] = []  # hooks torch did not let us install: said in the run's warnings
        self.blocked = ""  # why the recording cannot be replayed at all (another GPU architecture)
        self._index: dict[tuple, Decision] = {}
        self._asked: set[tuple[str, str]] = set()

    def find(self, kind: str, key: str) -> Decision | None:
        """The recorded decision to replay (None when there is none); remembers that it was asked for."""
        if self.replay is None or self.blocked:
            return None
        found = self.replay.find(kind, key)
        if found is not None:
            self._asked.add((kind, key))
        return found

    def add(self, decision: Decision) -> Decision:
        """Keep `decision`; one already kept with the same kind and key gains its timings
        (select_algorithm times a GEMM's choices again for a subset, a hint, ...)."""
        index = _index_key(decision)
        kept = self._index.get(index)
        if kept is None:
            self._index[index] = decision
            self.decisions.append(decision)
            return decision
        if decision.timings and kept.origin == decision.origin:
            kept.timings = {**kept.timings, **decision.timings}
            if kept.kind == "autotune":
                kept.choice = fastest(kept.timings) or kept.choice
        return kept

    @contextlib.contextmanager
    def guard(self, what: str):
        """Recording a decision must never break the compile that made it: a failure is kept
        as a problem (the run's warnings say which decisions were not recorded)."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - said in the run's warnings
            self.problems.append(f"{what} decisions: one could not be recorded ({type(error).__name__}: {error})")

    def replay_record(self) -> DecisionReplay | None:
        """Where the replayed decisions came from, and those no compile asked for."""
        if self.replay is None:
            return None
        unused = [decision for decision in self.replay.decisions if (decision.kind, decision.key) not in self._asked]
        return DecisionReplay(self.replay.source, dict(self.replay.recorded_on), unused)


def _index_key(decision: Decision) -> tuple:
    """One decision per kind and key; a launch config per kernel (identical kernels of two
    graphs share a key, and each is launched)."""
    if decision.kind == "triton_config":
        return (decision.kind, decision.key, decision.where)
    return (decision.kind, decision.key)


def fastest(timings: dict[str, float]) -> str | None:
    """The option with the least time (the first of equals), None when none finished."""
    finished = [(ms, name) for name, ms in timings.items() if ms is not None and math.isfinite(ms)]
    return min(finished, key=lambda item: item[0])[1] if finished else None
