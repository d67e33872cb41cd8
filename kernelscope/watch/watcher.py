"""Which file events mean "the model changed": a path filter and a watchdog observer.

Watched: the files the target imported from the workspace (the worker reports
them after each build) and, in their directories, newly created `.py` files —
a model that failed with an ImportError recovers when the missing module
appears. Never: directories, the store's own folder (writing a run must not
trigger a build), `__pycache__`, VCS folders, editors' swap, backup and
temporary files. Only the directories of the watched files are observed, each
non-recursively.
"""
from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from watchdog.events import (
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

if TYPE_CHECKING:
    from watchdog.observers.api import ObservedWatch

IGNORED_DIRECTORIES = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache",
                                 ".ruff_cache", ".ipynb_checkpoints"})
# vim (.swp/.swo/.swx, `4913` write test, `file~` backups), emacs (.#lock, #autosave#),
# JetBrains safe-write, generic temporaries.
EDITOR_ARTIFACTS = ("*.swp", "*.swo", "*.swx", "*~", ".#*", "#*#", "4913", "*.tmp", "*.bak",
                    "*___jb_tmp___", "*___jb_old___")


def is_editor_artifact(path: str) -> bool:
    name = os.path.basename(path)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in EDITOR_ARTIFACTS)


class ChangeFilter:
    """Decides which watchdog events are changes to rebuild for."""

    def __init__(self, files: Iterable[str] = (), excluded_dirs: Iterable[str] = ()):
        self.excluded_dirs = [os.path.realpath(path) for path in excluded_dirs]
        self.files: frozenset[str] = frozenset()
        self.directories: frozenset[str] = frozenset()
        self.set_files(files)

    def set_files(self, files: Iterable[str]) -> None:
        self.files = frozenset(os.path.realpath(path) for path in files)
        self.directories = frozenset(os.path.dirname(path) for path in self.files)

    def changed_path(self, event: FileSystemEvent) -> str | None:
        """The watched path an event changed, or None when the event is not a change to build for."""
        if event.is_directory:
            return None
        if isinstance(event, FileMovedEvent):
            # An editor's atomic save moves a temporary file onto the watched one.
            return self._accept(event.dest_path, created=True) or self._accept(event.src_path, created=False)
        if isinstance(event, FileCreatedEvent):
            return self._accept(event.src_path, created=True)
        if isinstance(event, (FileModifiedEvent, FileDeletedEvent)):
            return self._accept(event.src_path, created=False)
        return None  # opened, closed, attribute-only events

    def _accept(self, path: str | bytes, created: bool) -> str | None:
        if not path:
            return None
        path = os.path.realpath(os.fsdecode(path))
        if self._excluded(path):
            return None
        if path in self.files:
            return path
        if created and path.endswith(".py") and os.path.dirname(path) in self.directories:
            return path
        return None

    def _excluded(self, path: str) -> bool:
        if is_editor_artifact(path):
            return True
        parts = path.split(os.sep)
        if any(part in IGNORED_DIRECTORIES for part in parts[:-1]):
            return True
        return any(path == root or path.startswith(root + os.sep) for root in self.excluded_dirs)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: FileWatcher):
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        path = self.watcher.filter.changed_path(event)
        if path is not None:
            self.watcher.on_change(path)


class FileWatcher:
    """Observes the directories of a set of files and calls `on_change(path)` for
    each accepted event (from watchdog's thread)."""

    def __init__(self, on_change: Callable[[str], None], excluded_dirs: Iterable[str] = ()):
        self.on_change = on_change
        self.filter = ChangeFilter(excluded_dirs=excluded_dirs)
        self._observer = Observer()
        self._handler = _Handler(self)
        self._watches: dict[str, ObservedWatch] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)

    def watch(self, files: Iterable[str]) -> list[str]:
        """Watch exactly these files (replacing the previous set); returns them, sorted."""
        with self._lock:
            self.filter.set_files(files)
            wanted = self.filter.directories
            for directory in set(self._watches) - wanted:
                self._observer.unschedule(self._watches.pop(directory))
            for directory in sorted(wanted - set(self._watches)):
                if os.path.isdir(directory):
                    self._watches[directory] = self._observer.schedule(self._handler, directory, recursive=False)
            return sorted(self.filter.files)

    @property
    def directories(self) -> list[str]:
        return sorted(self._watches)
