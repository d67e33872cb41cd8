"""Load what the user asked to compile: `path.py:factory` or a script to run.

The target file is always compiled from its source, never from a `__pycache__`
file: a `.pyc` is trusted when the source's mtime (whole seconds) and size
match, so two saves within one second of the same length would otherwise re-run
the old code. `WorkspaceImports` lets a long-lived process (the engine worker)
see which user modules a target imported, forget them before the next
recompile, and load all of them from source the same way.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import sysconfig
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.errors import TargetError, UserError


@dataclass
class FactoryTarget:
    path: Path
    factory: str

    @property
    def spec(self) -> str:
        return f"{self.path}:{self.factory}"


def parse_factory_spec(spec: str) -> FactoryTarget:
    path_text, sep, factory = spec.rpartition(":")
    if not sep or not path_text or not factory.isidentifier():
        raise TargetError(
            f"'{spec}' is not a target: write PATH.py:FACTORY, e.g. examples/mlp.py:make"
        )
    path = Path(path_text)
    if not path.is_file():
        raise TargetError(f"{path}: no such file (the target was '{spec}')")
    return FactoryTarget(path, factory)


def user_error_location(error: BaseException, user_file: Path) -> str:
    """'file:line' of the deepest frame in the user's file, for error messages."""
    wanted = os.path.abspath(user_file)
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == wanted:
            location = f"{frame.filename}:{frame.lineno}"
    return location


def display_path(path: Path, workspace: Path) -> str:
    """How a run names a target file: relative to the workspace, else absolute."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


TARGET_MODULE_PREFIX = "kernelscope_target_"


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from its source text every time: no `.pyc` read or written."""

    def get_code(self, fullname):
        return self.source_to_code(self.get_data(self.path), self.path)


def _import_module(path: Path):
    module_name = f"{TARGET_MODULE_PREFIX}{path.stem}"
    directory = str(path.parent.resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)  # so the target can import its neighbours
    spec = importlib.util.spec_from_file_location(
        module_name, path, loader=SourceOnlyLoader(module_name, str(path))
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        raise TargetError(
            f"{error.filename}:{error.lineno}: syntax error: {error.msg} (fix the file and compile again)"
        ) from error
    except Exception as error:
        where = user_error_location(error, path) or str(path)
        raise TargetError(
            f"{where}: importing the model raised {type(error).__name__}: {error}"
        ) from error
    return module


def factory_device(target_device: str) -> str:
    """The device a factory's `device` parameter gets where it is not run as a GPU program:
    the GPU for `--target cuda`; the CPU for cpu-triton, and for a virtual-cuda factory whose
    capture runs on the CPU (one rank of a job). A virtual-cuda factory that runs as a
    program gets "cuda", the virtual GPU (devices/factory_program.py)."""
    return "cuda" if target_device == "cuda" else "cpu"


def takes_device(factory) -> bool:
    import inspect

    try:
        return "device" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def load_factory(target: FactoryTarget, device: str = "cpu") -> tuple[Any, tuple]:
    """Import the file and call the factory: returns (model_or_callable, example_inputs).

    A factory with a `device` parameter is called with `device=` (see factory_device),
    so it can build its model and inputs there itself."""
    module = _import_module(target.path)
    factory = getattr(module, target.factory, None)
    if factory is None or not callable(factory):
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise TargetError(
            f"{target.path}: has no factory function '{target.factory}' "
            f"(callables there: {', '.join(names[:8]) or 'none'})"
        )
    try:
        result = factory(device=device) if takes_device(factory) else factory()
    except UserError:  # already one line at the factory's line (virtual-cuda's refusals)
        raise
    except Exception as error:
        where = user_error_location(error, target.path) or str(target.path)
        raise TargetError(
            f"{where}: the factory '{target.factory}' raised {type(error).__name__}: {error}"
        ) from error
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[0])):
        raise TargetError(
            f"{target.path}: '{target.factory}()' must return (model_or_callable, example_inputs), "
            f"got {type(result).__name__}"
        )
    model, inputs = result
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    return model, tuple(inputs)


def run_script(path: Path, args: list[str]) -> None:
    """Run an unmodified script as __main__ with the given argv."""
    if not path.is_file():
        raise TargetError(f"{path}: no such file")
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            where = user_error_location(exit_, path) or str(path)  # the script's line that led to the exit
            raise TargetError(f"{where}: the script exited with status {exit_.code}") from exit_
    except SyntaxError as error:
        raise TargetError(f"{error.filename}:{error.lineno}: syntax error: {error.msg}") from error
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


_NEVER_FORGOTTEN = frozenset({"__main__", "__mp_main__"})


def _library_roots() -> list[str]:
    """Where installed code lives (a virtualenv may sit inside the workspace)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(path)
    roots.add(str(Path(__file__).resolve().parent.parent))  # kernelscope itself
    # As given and with symlinks resolved: module files are recorded either way.
    return sorted({os.path.normpath(root) for root in roots} | {os.path.realpath(root) for root in roots})


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class WorkspaceImports:
    """The user's own modules: Python files under `roots` that are not installed code.

    A warm worker recompiles after an edit by forgetting these modules (so the
    next import runs the edited source) while torch and other libraries stay
    imported. `install()` makes every later import of such a module load from
    source (see the module docstring).
    """

    def __init__(self, roots: Iterable[str | Path], excluded: Iterable[str | Path] = ()):
        self.roots = sorted({os.path.realpath(root) for root in roots})
        self.excluded = _library_roots() + [os.path.realpath(path) for path in excluded]
        self._finder = _SourceOnlyFinder(self)

    def owns(self, file: str | Path | None) -> bool:
        if not file:
            return False
        if any(_inside(str(file), root) for root in self.excluded):
            return False  # fast path: most of sys.modules is torch, under a library root as given
        real = os.path.realpath(file)
        return any(_inside(real, root) for root in self.roots) \
            and not any(_inside(real, root) for root in self.excluded)

    def modules(self) -> dict[str, str]:
        """{module name: real path of its file} for every loaded user module."""
        found = {}
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            # Some objects in sys.modules carry a relative __file__ (torch.ops: "_ops.py").
            if name not in _NEVER_FORGOTTEN and isinstance(file, str) and os.path.isabs(file) \
                    and self.owns(file):
                found[name] = os.path.realpath(file)
        return found

    def files(self) -> list[str]:
        return sorted(set(self.modules().values()))

    def forget(self) -> list[str]:
        """Drop the user modules from sys.modules; returns their names."""
        names = list(self.modules())
        for name in names:
            sys.modules.pop(name, None)
        importlib.invalidate_caches()  # a module file created since the last import is found
        return names

    def install(self) -> None:
        if self._finder not in sys.meta_path:
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)


class _SourceOnlyFinder(importlib.abc.MetaPathFinder):
    """Finds modules as the normal path finder does; user modules get a SourceOnlyLoader."""

    def __init__(self, imports: WorkspaceImports):
        self.imports = imports

    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader \
                or not self.imports.owns(spec.origin):
            return None  # not ours: the regular finders handle it
        spec.loader = SourceOnlyLoader(fullname, spec.origin)
        return spec
