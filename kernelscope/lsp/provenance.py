"""The store as the features see it: documents (URIs) instead of stored keys,
the run the editor shows, and where recorded lines are in the text as it is now.

One `StoreBackend` per thread (SQLite connections belong to the thread that opened
them); the features read a run through its read model, `Provenance.run(run_id)`
(a RunView of this thread's store). Runs never change once written, so what is
derived from one run is cached by run id; a new run gets new entries.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path

from kernelscope.errors import StoreError, UserError
from kernelscope.lsp.positions import IDENTITY, LineMap, build_line_map
from kernelscope.store import Location, QueryResult, RunSummary, RunView, StoreBackend
from kernelscope.store.paths import generated_path
from kernelscope.store.places import PathMap
from kernelscope.store.results import SOURCE


@dataclass
class Document:
    """A file of the editor, located in a run."""

    uri: str
    location: Location
    lines: list[str]  # the text as the editor has it now (source) or as generated
    line_map: LineMap = field(default_factory=lambda: IDENTITY)

    @property
    def run_id(self) -> int:
        return self.location.run_id

    @property
    def is_source(self) -> bool:
        return self.location.kind == SOURCE

    @property
    def stale(self) -> bool:
        return self.line_map.stale

    def shown_line(self, recorded: int) -> int | None:
        """Where recorded line `recorded` is in the text now; None when it was edited away or
        lies past the end of the text."""
        current = self.line_map.current_line(recorded)
        return None if current is None or current > len(self.lines) else current


class Provenance:
    def __init__(self, workspace: Path, store_dir: Path, path_map: tuple[str, ...] = ()):
        self.workspace = workspace
        self.store_dir = store_dir
        self.path_map = path_map  # the pathMap option (RECORDED=LOCAL pairs)
        self.selected_run: int | None = None  # None: follow the latest run
        self.problem: str | None = None  # why an existing store could not be opened (old schema, damage)
        self._local = threading.local()
        self._generation = 0  # bumped when the store directory changes
        self._uris: dict[tuple, str] = {}
        self._located: dict[tuple, Location] = {}  # (path, selection, latest run) -> where it is

    # -- the store -------------------------------------------------------------------

    def set_store_dir(self, store_dir: Path, path_map: tuple[str, ...] | None = None) -> None:
        if store_dir != self.store_dir:
            self.store_dir = store_dir
            self._generation += 1
            self.selected_run = None
        if path_map is not None and path_map != self.path_map:
            self.path_map = path_map
            self._generation += 1

    def store(self) -> StoreBackend | None:
        """This thread's StoreBackend, or None while no store exists (nothing compiled yet)."""
        local = self._local
        if getattr(local, "generation", None) != self._generation:
            if getattr(local, "store", None) is not None:
                local.store.close()
            local.store, local.generation = None, self._generation
        if local.store is None:
            try:
                local.store = StoreBackend(self.store_dir, create=False,
                                           path_map=PathMap.from_environment(self.path_map))
            except StoreError as error:
                # No store yet is normal (nothing compiled); one that will not open is reported.
                self.problem = str(error) if (self.store_dir / "kernelscope.sqlite").exists() else None
                return None
            self.problem = None
        return local.store

    def run(self, run_id: int) -> RunView:
        """The read model of run `run_id` on this thread's store (StoreError when it has no such run)."""
        store = self.store()
        if store is None:
            raise StoreError(f"no kernelscope store at {self.store_dir}")
        return store.run(run_id)

    def run_summary(self, run_id: int) -> RunSummary | None:
        """Run `run_id`'s summary, or None when the store has no such run."""
        try:
            return self.run(run_id).summary()
        except StoreError:
            return None

    def latest_run_id(self) -> int | None:
        store = self.store()
        return None if store is None else store.latest_run_id()

    def shown_run_id(self) -> int | None:
        """The selected run, else the latest."""
        return self.selected_run if self.selected_run is not None else self.latest_run_id()

    # -- URIs and paths ----------------------------------------------------------------------

    def uri_for(self, stored_path: str, workspace: str | None = None) -> str:
        """The URI of a stored path: generated files (`runs/...`) live under the store,
        source files under the run's workspace (or are absolute)."""
        key = (stored_path, workspace, self._generation)
        uri = self._uris.get(key)
        if uri is None:
            if len(self._uris) > 200_000:
                self._uris.clear()
            uri = self._uris[key] = from_fs_path(str(self.absolute_path(stored_path, workspace)))
        return uri

    def absolute_path(self, stored_path: str, workspace: str | None = None) -> Path:
        """Where a stored path is on disk. A generated file (`runs/...`) only inside the
        store: one that leads out of it (a crafted store) raises OutsideStore."""
        path = Path(stored_path)
        if path.is_absolute():
            store = self.store()
            return Path(store.places.local_path(stored_path)) if store is not None else path
        if stored_path.startswith("runs/"):
            return generated_path(self.store_dir, stored_path)
        return Path(workspace) / stored_path if workspace else self.workspace / stored_path

    # -- documents ----------------------------------------------------------------------

    def document(self, uri: str, text: str | None = None) -> Document | None:
        """The file at `uri` in the shown run (source files: the selected run, else the
        latest run that has them; generated files: the run they belong to), or None
        when no run knows it. `text` is the editor's current text of a source file."""
        store = self.store()
        path = path_of(uri)
        if store is None or path is None:
            return None
        runs = store.fingerprint()  # new or deleted runs
        key = (str(path), self.selected_run, runs, self._generation)
        location = self._located.get(key)
        if location is None:
            try:
                location = self._locate(store, path)
            except (StoreError, UserError):
                return None
            if len(self._located) > 10_000:
                self._located.clear()
            self._located[key] = location
        if location.kind != SOURCE:
            return Document(uri, location, generated_lines(location.absolute_path))
        lines = text.splitlines() if text is not None else _read_lines(location.absolute_path)
        recorded = store.run(location.run_id).recorded_code(location.path)
        return Document(uri, location, lines, build_line_map(recorded, lines))

    def line_map(self, stored_path: str, run_id: int, text: str | None = None) -> LineMap:
        """Where the lines run `run_id` recorded for a source file are in its current text."""
        store = self.store()
        if store is None:
            return IDENTITY
        lines = text.splitlines() if text is not None else _read_lines(str(self.absolute_path(stored_path)))
        return build_line_map(store.run(run_id).recorded_code(stored_path), lines)

    def query(self, document: Document, line: int, direction: str) -> QueryResult:
        """The whole chain through a line of a document already located (no second path
        lookup, which would resolve a workspace-relative key against the server's own cwd)."""
        return self.run(document.run_id).query_at(document.location, line, direction)

    def _locate(self, store: StoreBackend, path: Path) -> Location:
        """`path` is absolute: a store path lookup resolves it without the server's cwd."""
        if self.selected_run is not None and self.store_dir not in path.parents:
            try:
                return store.locate(path, self.selected_run)
            except StoreError:
                pass  # the selected run does not have this file: show the latest that has
        return store.locate(path)


def path_of(uri: str) -> Path | None:
    """The file a `file:` URI names (None for other schemes)."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(path) if path else None


@lru_cache(maxsize=256)
def generated_lines(path: str) -> list[str]:
    """A generated file's lines (never changed once written, so cached by path)."""
    return _read_lines(path)


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read().splitlines()
    except OSError:
        return []
