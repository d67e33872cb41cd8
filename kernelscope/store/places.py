"""Where a store's recorded paths are now, wherever the store and its workspace went.

A run records its workspace twice: as the absolute path it had
(`runs.workspace`) and relative to the store root when it was written
(`runs.workspace_from_store`, e.g. `..` for `<workspace>/.kernelscope`). Source
files inside the workspace are stored relative to it, generated files relative
to the store root. So a store copied or moved together with its workspace (a
CI artifact unpacked on a laptop, a container mount, a colleague's clone)
finds its files through the relative form; a store whose files were recorded
elsewhere (an absolute site-packages path, a workspace that did not hold the
store) is pointed at them with `--map-path RECORDED=LOCAL`.

A run's workspace is looked for, in order, at: the `--map-path` form of the
recorded path, the recorded relation to the store root (as the store is now),
the recorded path itself, and (for runs written before the relation was
recorded) the folder holding the store.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import StoreError

MAP_PATH_ENV = "KERNELSCOPE_MAP_PATH"  # RECORDED=LOCAL pairs, separated by os.pathsep


def relative_to_store(workspace: str, root: Path) -> str | None:
    """`workspace` relative to the store root (POSIX form), what a moved store resolves."""
    if not workspace or not os.path.isabs(workspace):
        return None
    try:
        return Path(os.path.relpath(os.path.normpath(workspace), os.path.normpath(root.absolute()))).as_posix()
    except ValueError:  # another drive (Windows)
        return None


@dataclass(frozen=True)
class PathMap:
    """`--map-path RECORDED=LOCAL` pairs: a path recorded under RECORDED is read under LOCAL."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, texts: Iterable[str]) -> PathMap:
        pairs = []
        for text in texts:
            recorded, separator, local = text.partition("=")
            if not separator or not recorded.strip() or not local.strip():
                raise StoreError(f"--map-path (or {MAP_PATH_ENV}) takes RECORDED=LOCAL "
                                 f"(e.g. /builds/proj=/home/me/proj), got {text!r}")
            pairs.append((_clean(recorded), _clean(os.path.abspath(os.path.expanduser(local)))))
        # The longest recorded prefix wins when several apply.
        return cls(tuple(sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)))

    @classmethod
    def from_environment(cls, extra: Iterable[str] = ()) -> PathMap:
        """`extra` pairs first, then those of KERNELSCOPE_MAP_PATH."""
        texts = list(extra)
        texts += [part for part in os.environ.get(MAP_PATH_ENV, "").split(os.pathsep) if part.strip()]
        return cls.parse(texts)

    def to_local(self, path: str) -> str | None:
        """The local form of a recorded absolute path, None when no pair applies."""
        return _swap(path, self.pairs)

    def to_recorded(self, path: str) -> str | None:
        """The recorded form of a local absolute path, None when no pair applies."""
        return _swap(path, tuple(sorted(((local, recorded) for recorded, local in self.pairs),
                                        key=lambda pair: len(pair[0]), reverse=True)))

    def __bool__(self) -> bool:
        return bool(self.pairs)


@dataclass
class Places:
    """The store root as it is now and the user's path map: resolves recorded paths."""

    root: Path
    path_map: PathMap = field(default_factory=PathMap)

    def workspaces(self, recorded: str, from_store: str | None) -> list[str]:
        """Where the run's workspace may be now, most likely first (see the module docstring)."""
        candidates = []
        mapped = self.path_map.to_local(recorded) if recorded else None
        if mapped:
            candidates.append(mapped)
        if from_store:
            candidates.append(os.path.normpath(self.root.absolute() / from_store))
        if recorded:
            candidates.append(os.path.normpath(recorded))
        if not from_store:
            candidates.append(os.path.normpath(self.root.absolute().parent))
        return list(dict.fromkeys(candidates))

    def workspace(self, recorded: str, from_store: str | None) -> str:
        """The first of `workspaces` that exists (the first when none does)."""
        candidates = self.workspaces(recorded, from_store)
        return next((path for path in candidates if os.path.isdir(path)), candidates[0] if candidates else recorded)

    def source_path(self, key: str, recorded: str, from_store: str | None) -> str:
        """Where the source file stored as `key` is now: the first candidate that has it,
        else where it would be in the likeliest workspace."""
        if os.path.isabs(key):
            return self.path_map.to_local(key) or key
        candidates = [os.path.join(workspace, key) for workspace in self.workspaces(recorded, from_store)]
        return next((path for path in candidates if os.path.isfile(path)),
                    os.path.join(self.workspace(recorded, from_store), key))

    def local_path(self, path: str) -> str:
        """A recorded absolute path as it is here (`--map-path`), else unchanged."""
        return self.path_map.to_local(path) or path

    def recorded_forms(self, user_path: str) -> list[str]:
        """A path the user gave, and its recorded form when a --map-path pair applies."""
        absolute = os.path.abspath(os.path.expanduser(user_path))
        recorded = self.path_map.to_recorded(absolute)
        return [user_path] + ([recorded] if recorded else [])


def _clean(path: str) -> str:
    cleaned = os.path.normpath(path.strip())
    return cleaned if cleaned == os.sep else cleaned.rstrip(os.sep)


def _swap(path: str, pairs: tuple[tuple[str, str], ...]) -> str | None:
    normal = os.path.normpath(path)
    for old, new in pairs:
        if normal == old:
            return new
        if normal.startswith(old.rstrip(os.sep) + os.sep):
            return os.path.join(new, normal[len(old.rstrip(os.sep)) + 1:])
    return None
