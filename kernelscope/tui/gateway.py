"""The store, used from one thread of its own.

A `StoreBackend`'s SQLite connection belongs to the thread that opened it, while
Textual's thread workers each run in a fresh thread. So every read goes
through one long-lived store thread: workers hand it a function and wait for
the answer. Requests that went stale while queued (the cursor moved on) are
skipped without touching the database.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from kernelscope.store import StoreBackend

T = TypeVar("T")


class Stale(Exception):
    """The request was superseded before the store thread reached it."""


class StoreGateway:
    def __init__(self, root: str | Path):
        self.root = Path(root).absolute()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelscope-store")
        self._store: StoreBackend | None = None

    def call(self, function: Callable[..., T], *args, still_wanted: Callable[[], bool] | None = None) -> T:
        """Run `function(store, *args)` on the store thread and return its result."""
        return self._executor.submit(self._run, function, args, still_wanted).result()

    def close(self) -> None:
        self._executor.submit(self._close)
        self._executor.shutdown(wait=True)

    def _run(self, function, args, still_wanted):
        if still_wanted is not None and not still_wanted():
            raise Stale()
        if self._store is None:
            self._store = StoreBackend(self.root, create=False)
        return function(self._store, *args)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
