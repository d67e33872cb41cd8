"""The methods attrs generates, compiled once instead of at every server start.

`lsprotocol.types` defines about 570 attrs classes (pygls a few more); for each one
attrs writes the source of its `__init__`, `__eq__`, `__repr__`, ... and compiles it
with `compile()`. Those compiles were a third of the server's start: about 840 of
2,470 million instructions to the `initialize` answer, 0.2 s on this 2-core machine.
That source is the same at every start, so, as Python keeps a module's bytecode in
`__pycache__`, `compiled_once()` keeps the code compiled from each generated source in
one file (marshal: file name -> source, code) and hands it back when attrs asks to
compile the same source again. attrs builds every class as always; only `compile()` of
a source already seen is skipped, so the classes are the same. A missing, damaged or
foreign cache file means compiling as usual (and writing the file).

The file is written when it lacks a class. A source that differs from the cached one
is compiled as usual without rewriting the file: attrs puts the per-process hash of
the class's name into the `__hash__` of hashable classes (one in cattrs), so those
differ at every start. The file belongs to one installation: its name carries the
Python version, the environment and the size and time of `lsprotocol/types.py` and
`attr/_make.py`, so an upgrade starts a new one.

The folder: `$KERNELSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/kernelscope`, else
`~/.cache/kernelscope`.
"""
from __future__ import annotations

import builtins
import contextlib
import importlib.util
import marshal
import os
import sys
import zlib
from pathlib import Path

CACHE_FORMAT = 1


@contextlib.contextmanager
def compiled_once():
    """Within this block, attrs classes get their generated methods from the cache."""
    import attr._make

    path = cache_path()
    cached = _read(path)
    used: dict[tuple[str, str], tuple[str, object]] = {}
    new_classes = 0

    def compile_once(source, filename, mode, *args, **kwargs):
        nonlocal new_classes
        if args or kwargs or not isinstance(source, str):
            return builtins.compile(source, filename, mode, *args, **kwargs)
        entry = cached.get((mode, filename))
        if entry is None or entry[0] != source:
            new_classes += entry is None
            entry = (source, builtins.compile(source, filename, mode))
        used[(mode, filename)] = entry
        return entry[1]

    attr._make.compile = compile_once  # attrs' module-level `compile(...)` calls find this first
    try:
        yield
    finally:
        del attr._make.compile
    if new_classes:
        _write(path, used)


def cache_path() -> Path:
    folder = os.environ.get("KERNELSCOPE_CACHE_DIR")
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "kernelscope")
    installation = [sys.version, sys.prefix]
    for package, module in (("lsprotocol", "types.py"), ("attr", "_make.py")):
        spec = importlib.util.find_spec(package)
        locations = (spec.submodule_search_locations or []) if spec is not None else []
        try:
            found = os.stat(os.path.join(locations[0], module))
            installation.append(f"{found.st_size}:{found.st_mtime_ns}")
        except (AttributeError, IndexError, OSError, TypeError):
            installation.append("?")
    key = f"{zlib.crc32(chr(0).join(installation).encode()):08x}"
    return Path(folder) / f"attrs-methods-{sys.implementation.cache_tag}-{key}.marshal"


def _read(path: Path) -> dict:
    try:
        content = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(content, tuple) or len(content) != 3 or content[:2] != (CACHE_FORMAT, sys.version):
        return {}
    return content[2] if isinstance(content[2], dict) else {}


def _write(path: Path, entries: dict) -> None:
    """Best effort (a read-only home only costs the compiles next time); atomic, so a
    server starting meanwhile reads the old file or the new one."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps((CACHE_FORMAT, sys.version, entries)))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
