"""A process-wide cache of answers read from stored runs.

Runs never change once written, so what is read from one run (its kernels, a
source file's index) stays true until the run is deleted; keys hold the database
file (`db_key`) and the run id. Front ends that keep a store open (the language
server, the TUI) read through it; a one-shot CLI command does not need it.
"""
from __future__ import annotations

import gc
import sqlite3
import threading
from collections import OrderedDict


class _Cache:
    """LRU of computed answers; a key being computed is computed once (others wait)."""

    def __init__(self, size: int = 256):
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict = {}  # key -> lock held while computing it
        self._size = size

    def get(self, key, compute):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._building.pop(key, None)
        if value is None:
            return None  # e.g. a run not written yet: ask again next time
        # Cached answers live long and hold many objects: keep them out of the cyclic
        # collector's scans, whose full passes over a big index stalled requests for ~1 s.
        gc.freeze()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


_cache = _Cache()


def db_key(conn: sqlite3.Connection) -> str:
    """The database file a connection reads (cache keys hold it: one process may open several stores)."""
    return conn.execute("PRAGMA database_list").fetchone()[2]


def cached(key, compute):
    """`compute()` once per key (None answers are not kept); least recently used keys go first."""
    return _cache.get(key, compute)
