"""How files are named in the store.

Two kinds of path are stored, both with POSIX separators:
- user source files: relative to the run's workspace when inside it
  (`examples/mlp.py`), otherwise absolute (a transformers modeling file in
  site-packages);
- generated files: relative to the store root
  (`runs/3/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py`).

`lookup_key` turns whatever a user typed into one of those keys.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from kernelscope.errors import StoreError, UserError

DEFAULT_STORE_DIR = ".kernelscope"
RUNS_DIR = "runs"

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")


def run_dir(run_id: int) -> str:
    return f"{RUNS_DIR}/{run_id}"


def graph_dir(run_id: int, graph_key: str) -> str:
    return f"{run_dir(run_id)}/graphs/{safe_file_name(graph_key)}"


def graph_file(run_id: int, graph_key: str, kind: str, language: str = "python") -> str:
    """`kind` is 'pre_grad', 'post_grad' or 'wrapper'; a C++ wrapper (`language` "cpp":
    AOTInductor's, cpp_wrapper mode's) is kept as `wrapper.cpp`."""
    return f"{graph_dir(run_id, graph_key)}/{kind}{'.cpp' if language == 'cpp' else '.py'}"


# `--aot`: the AOTInductor package, relative to the run's folder (docs/aot.md)
AOT_PACKAGE = "aot/model.pt2"


def aot_package_file(run_id: int) -> str:
    return f"{run_dir(run_id)}/{AOT_PACKAGE}"


# A kernel's file suffix by its kind: a C++ kernel (Inductor's cpp backend) is a .cpp file,
# every other kernel a .py file (Triton, templates).
KERNEL_FILE_SUFFIXES = {"cpp": ".cpp"}


def kernel_file(run_id: int, graph_key: str, kernel_name: str, kind: str = "triton") -> str:
    suffix = KERNEL_FILE_SUFFIXES.get(kind, ".py")
    return f"{graph_dir(run_id, graph_key)}/kernels/{safe_file_name(kernel_name)}{suffix}"


class OutsideStore(StoreError):
    """A generated-file path read from a store that leads out of it (a crafted or damaged store)."""


def why_outside(root: Path, stored: str) -> str | None:
    """Why the generated-file path `stored` (as a store row names it) does not stay inside
    the store at `root`, or None when it does: generated files are store-relative
    (`runs/3/...`), so an absolute path, a `..` component, a NUL or a symlink that resolves
    outside `root` is refused."""
    if not stored or "\x00" in stored:
        return "is empty or holds a NUL character"
    pure = PurePosixPath(stored.replace("\\", "/"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", stored):
        return "is absolute"
    if ".." in pure.parts:
        return "climbs out with '..'"
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(root / pure))
    if real != real_root and real_root not in real.parents:
        return f"resolves outside the store (to {real})"
    return None


def generated_path(root: Path, stored: str) -> Path:
    """Where a generated file a store names (`runs/3/...`) is on disk, never outside the
    store: raises OutsideStore (naming the path) for one that leaves it (why_outside)."""
    why = why_outside(root, stored)
    if why is not None:
        raise OutsideStore(f"{root}: the store names a generated file {stored!r} that {why}; it is not read "
                           "(a crafted or damaged store: `kernelscope doctor` lists such rows)")
    return root / stored


def read_generated(root: Path, stored: str) -> str | None:
    """A generated file's text, or None when it is missing, unreadable or outside the store."""
    if why_outside(root, stored) is not None:
        return None
    try:
        return (root / stored).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def safe_file_name(name: str) -> str:
    """A name usable as one path component: no separators, no `..`."""
    cleaned = _UNSAFE_NAME_CHARS.sub("_", name)
    return "_" if cleaned in ("", ".", "..") else cleaned


def source_key(file: str, workspace: str) -> str:
    """The stored form of a recorded source path (see the module docstring).

    Pseudo-files such as `<eval_with_key>.3` are not paths and are kept as they are.
    """
    if not os.path.isabs(file):
        return file.replace(os.sep, "/")
    relative = _relative_inside(Path(os.path.normpath(file)), Path(os.path.normpath(workspace)))
    return relative if relative is not None else Path(os.path.normpath(file)).as_posix()


def lookup_key(
    user_path: str,
    store_root: Path,
    workspaces: Iterable[str],
    cwd: Path | None = None,
) -> str:
    """Turn a path a user gave (relative to `cwd`, absolute, or `.kernelscope/runs/...`)
    into the key the store files it under.

    A path inside the store root becomes store-relative (`runs/3/...`); a path
    inside one of the runs' workspaces becomes workspace-relative; anything else
    stays absolute. A relative path that does not exist from `cwd` is taken as
    store-relative when it names a store file (`runs/3/...`,
    `<any dir>/runs/3/...`) and as workspace-relative otherwise, so paths copied
    from `kernelscope show` work from any directory.
    """
    if "\x00" in user_path:
        raise UserError(f"{user_path!r} is not a path (it holds a NUL character)")
    try:
        user_path.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{user_path!r} is not a UTF-8 path: kernelscope stores paths as UTF-8 text, so no run "
                        "can have recorded it") from None
    cwd = Path.cwd() if cwd is None else cwd
    given = Path(user_path).expanduser()
    absolute = Path(os.path.normpath(given if given.is_absolute() else cwd / given))
    store_root = Path(os.path.normpath(store_root.absolute()))

    for candidate in _with_real_path(absolute):
        for root in _with_real_path(store_root):
            inside_store = _relative_inside(candidate, root)
            if inside_store is not None:
                return inside_store
    if not given.is_absolute() and not absolute.exists():
        store_relative = _store_relative_suffix(PurePosixPath(given.as_posix()))
        if store_relative is not None:
            return store_relative
    ordered = sorted({os.path.normpath(w) for w in workspaces}, key=len, reverse=True)
    for candidate in _with_real_path(absolute):
        for workspace in ordered:
            for root in _with_real_path(Path(workspace)):
                inside_workspace = _relative_inside(candidate, root)
                if inside_workspace is not None:
                    return inside_workspace
    if not given.is_absolute() and not absolute.exists():
        return PurePosixPath(given.as_posix()).as_posix()  # maybe workspace-relative already
    return absolute.as_posix()


def _store_relative_suffix(path: PurePosixPath) -> str | None:
    """`x/.kernelscope/runs/3/graphs/...` -> `runs/3/graphs/...`."""
    parts = path.parts
    for index in range(len(parts) - 1):
        if parts[index] == RUNS_DIR and parts[index + 1].isdigit():
            return "/".join(parts[index:])
    return None


def _relative_inside(path: Path, root: Path) -> str | None:
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts else None


def _with_real_path(path: Path) -> list[Path]:
    """The path as given, then with symlinks resolved when that differs."""
    real = Path(os.path.realpath(path))
    return [path] if real == path else [path, real]
