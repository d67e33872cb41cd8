"""Load what the user asked to compile: `path.py:factory` or a script to run."""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.errors import TargetError


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


def _import_module(path: Path):
    module_name = f"kernelscope_target_{path.stem}"
    directory = str(path.parent.resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)  # so the target can import its neighbours
    spec = importlib.util.spec_from_file_location(module_name, path)
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


def load_factory(target: FactoryTarget) -> tuple[Any, tuple]:
    """Import the file and call the factory: returns (model_or_callable, example_inputs)."""
    module = _import_module(target.path)
    factory = getattr(module, target.factory, None)
    if factory is None or not callable(factory):
        names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise TargetError(
            f"{target.path}: has no factory function '{target.factory}' "
            f"(callables there: {', '.join(names[:8]) or 'none'})"
        )
    try:
        result = factory()
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
            raise TargetError(f"{path}: the script exited with status {exit_.code}") from exit_
    except SyntaxError as error:
        raise TargetError(f"{error.filename}:{error.lineno}: syntax error: {error.msg}") from error
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
