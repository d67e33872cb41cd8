"""Deciding when to rebuild: a pure debouncer with an injected clock.

Rules (mkdocs livereload's, pytest-watcher's):
- wait for a quiet period after the last change, then build once: a burst of
  saves builds once;
- a change during a build is remembered and triggers exactly one more build
  once the build ends and the quiet period has passed;
- the build reads files when it starts, so the last save always wins.

No threads and no sleeping here: callers pass the current time (`now`), which
makes every rule testable with synthetic times.
"""
from __future__ import annotations

DEFAULT_QUIET_SECONDS = 0.3  # how long saves must stop before a build starts


class Debouncer:
    def __init__(self, quiet_seconds: float):
        if quiet_seconds < 0:
            raise ValueError("the quiet period cannot be negative")
        self.quiet_seconds = quiet_seconds
        self.building = False
        self._pending: list[str] = []
        self._last_change: float | None = None

    @property
    def pending(self) -> list[str]:
        """Changed paths not yet handed to a build, in the order first seen."""
        return list(self._pending)

    def change(self, path: str, now: float) -> None:
        if path not in self._pending:
            self._pending.append(path)
        self._last_change = now

    def due_at(self) -> float | None:
        """When the next build should start (None: no change waiting, or a build running)."""
        if self.building or not self._pending or self._last_change is None:
            return None
        return self._last_change + self.quiet_seconds

    def is_due(self, now: float) -> bool:
        due = self.due_at()
        return due is not None and now >= due

    def start_build(self) -> list[str]:
        """Mark a build as running; returns (and clears) the changes it covers."""
        if self.building:
            raise RuntimeError("a build is already running")
        changed, self._pending = self._pending, []
        self.building = True
        return changed

    def finish_build(self) -> None:
        self.building = False
