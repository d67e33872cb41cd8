"""What `kernelscope.compile` compiles, decided without running any workspace code.

In order: the command's own `target`, the `target` option, `[tool.kernelscope]` in
the workspace's pyproject.toml, and last a `make()`-style factory defined at the
top level of the current file (found by parsing it, never importing it).

    [tool.kernelscope]
    target = "mlp"                      # a name below, or PATH.py:FACTORY
    device = "virtual-cuda"             # auto | cuda | virtual-cuda | cpu-triton | cpu
    train = false
    dynamic = false

    [tool.kernelscope.targets]
    mlp = "examples/mlp.py:make"
    attention = "examples/attention.py:make"

Options the client gave explicitly win over pyproject.toml.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kernelscope.lsp.options import DEVICE_TARGETS, ServerOptions

FACTORY_NAMES = ("make", "make_model", "factory")


class TargetNotFound(ValueError):
    """Nothing to compile could be found; the message says what to add."""


@dataclass(frozen=True)
class CompileTarget:
    spec: str  # PATH.py:FACTORY, PATH relative to the workspace or absolute
    device: str
    train: bool
    dynamic: bool
    origin: str  # where the target came from, for messages


@dataclass
class ProjectConfig:
    """`[tool.kernelscope]` of pyproject.toml."""

    target: str | None = None
    targets: dict[str, str] | None = None
    device: str | None = None
    train: bool | None = None
    dynamic: bool | None = None
    problem: str | None = None  # why the table could not be read


def read_project_config(workspace: Path) -> ProjectConfig:
    path = workspace / "pyproject.toml"
    if not path.is_file():
        return ProjectConfig()
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            return ProjectConfig(problem="reading pyproject.toml needs Python 3.11 or the tomli package")
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("kernelscope", {})
    except (OSError, ValueError) as error:
        return ProjectConfig(problem=f"{path}: {error}")
    if not isinstance(table, dict):
        return ProjectConfig(problem=f"{path}: [tool.kernelscope] must be a table")
    targets = table.get("targets")
    config = ProjectConfig(
        target=table.get("target") if isinstance(table.get("target"), str) else None,
        targets={str(k): v for k, v in targets.items() if isinstance(v, str)} if isinstance(targets, dict) else None,
        device=table.get("device") if table.get("device") in DEVICE_TARGETS else None,
        train=table.get("train") if isinstance(table.get("train"), bool) else None,
        dynamic=table.get("dynamic") if isinstance(table.get("dynamic"), bool) else None,
    )
    return config


def resolve_target(
    workspace: Path,
    options: ServerOptions,
    requested: str | None = None,
    current_file: Path | None = None,
    current_text: str | None = None,
) -> CompileTarget:
    config = read_project_config(workspace)
    named = config.targets or {}

    def expand(name_or_spec: str, origin: str) -> tuple[str, str]:
        if name_or_spec in named:
            return named[name_or_spec], f"{origin} ({name_or_spec} in [tool.kernelscope.targets])"
        if ":" not in name_or_spec:
            known = ", ".join(sorted(named)) or "none defined"
            raise TargetNotFound(f"{origin}: '{name_or_spec}' is neither PATH.py:FACTORY nor a named target "
                                 f"({known})")
        return name_or_spec, origin

    spec = origin = None
    if requested:
        spec, origin = expand(requested, "the command's target")
    elif options.target:
        spec, origin = expand(options.target, "the 'target' option")
    elif config.target:
        spec, origin = expand(config.target, "pyproject.toml [tool.kernelscope] target")
    elif named:
        spec, origin = _named_for_file(named, workspace, current_file)
    if spec is None and current_file is not None:
        factory = find_factory(current_text if current_text is not None else _read(current_file))
        if factory is not None:
            spec, origin = f"{current_file}:{factory}", f"the factory {factory}() in {current_file.name}"
    if spec is None:
        where = f" and {current_file.name} defines no make() factory" if current_file else ""
        raise TargetNotFound(
            "nothing to compile: set [tool.kernelscope] target = \"PATH.py:FACTORY\" in pyproject.toml, "
            f"or the 'target' initialization option{where}"
        )

    def pick(name: str, project_value):
        if name in options.given or project_value is None:
            return getattr(options, name)
        return project_value

    return CompileTarget(
        spec=spec,
        device=pick("device_target", config.device),
        train=pick("train", config.train),
        dynamic=pick("dynamic", config.dynamic),
        origin=origin or "",
    )


def find_factory(text: str | None) -> str | None:
    """The name of a top-level function the file defines that can build the model with
    no arguments (`make` first), or None. Parses the text; never runs it."""
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    candidates = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _callable_without_arguments(node.args):
            if node.name in FACTORY_NAMES or node.name.startswith("make_"):
                candidates.append(node.name)
    for name in FACTORY_NAMES:
        if name in candidates:
            return name
    return candidates[0] if candidates else None


def _callable_without_arguments(args: ast.arguments) -> bool:
    positional = args.posonlyargs + args.args
    required_positional = len(positional) - len(args.defaults)
    required_keyword = sum(1 for default in args.kw_defaults if default is None)
    return required_positional == 0 and required_keyword == 0


def _named_for_file(named: dict[str, str], workspace: Path, current_file: Path | None) -> tuple[str | None, str]:
    if current_file is not None:
        for name, spec in named.items():
            path = Path(spec.rpartition(":")[0])
            path = path if path.is_absolute() else workspace / path
            if path.resolve() == current_file.resolve():
                return spec, f"pyproject.toml target '{name}' (the current file)"
    if len(named) == 1:
        name, spec = next(iter(named.items()))
        return spec, f"pyproject.toml target '{name}'"
    return None, ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
