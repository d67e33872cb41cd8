"""Where `--decisions` (and the language server's `decisions` option) finds decisions.

`--decisions SPEC`:
- a run of the store: `3`, `latest`, `latest~1` (a `--target cuda` run, or any run
  that replayed some);
- a file: a dump (`kernelscope dump RUN -o FILE`, schema 5.0) or a decisions file
  (`kernelscope decisions RUN -o FILE`);
- `none`: replay nothing (every timing decision guessed).

Without `--decisions`: `decisions = "..."` under `[tool.kernelscope]` in the
workspace's pyproject.toml (a SPEC as above, a path relative to the workspace), else
the store's `decisions.json` when it exists (`kernelscope decisions RUN --default`
writes it), else none. Never imports torch.
"""
from __future__ import annotations

import re
from pathlib import Path

from kernelscope.decisions.model import DecisionsError, DecisionSet, load_file, recorded_on, replayable

DEFAULT_FILE_NAME = "decisions.json"  # in the store directory
RUN_REFERENCE = re.compile(r"^(?:(\d+)|latest(?:~(\d+))?)$")
NONE = "none"


def default_file(store_dir: Path) -> Path:
    return Path(store_dir) / DEFAULT_FILE_NAME


def resolve(spec: str | None, store_dir: Path, workspace: Path) -> DecisionSet | None:
    """The decisions to replay (None: none). `spec` as given by the user, or None for the
    workspace's default (see the module docstring)."""
    if spec is not None:
        return _named(spec, store_dir, workspace, explicit=True)
    configured = project_setting(workspace)
    if configured is not None:
        return _named(configured, store_dir, workspace, explicit=False,
                      origin="pyproject.toml [tool.kernelscope] decisions")
    path = default_file(store_dir)
    return load_file(path, explicit=False) if path.is_file() else None


def _named(spec: str, store_dir: Path, workspace: Path, explicit: bool,
           origin: str = "--decisions") -> DecisionSet | None:
    spec = spec.strip()
    if spec.lower() == NONE:
        return None
    reference = RUN_REFERENCE.match(spec)
    path = Path(spec)
    if not path.is_absolute() and not explicit:
        path = workspace / path
    if reference is not None and not path.is_file():
        return from_store_run(store_dir, spec, reference, explicit)
    if not path.is_file():
        raise DecisionsError(f"{origin} {spec}: no such file, and not a run of the store (a run id such as 3, "
                             "`latest` or `latest~1`) — pass a dump, a decisions file, a run id, or `none`")
    return load_file(path, explicit)


def from_store_run(store_dir: Path, spec: str, reference: re.Match | None = None,
                   explicit: bool = True) -> DecisionSet:
    """The decisions of a run of the store at `store_dir` (`3`, `latest`, `latest~1`)."""
    from kernelscope.errors import StoreError
    from kernelscope.store import StoreBackend

    reference = reference or RUN_REFERENCE.match(spec)
    if reference is None:
        raise DecisionsError(f"{spec}: not a run of the store (a run id such as 3, `latest` or `latest~1`)")
    with StoreBackend(store_dir, create=False) as store:
        if reference.group(1) is not None:
            run_id = int(reference.group(1))
        else:
            back = int(reference.group(2) or 0)
            runs = store.runs()
            if back >= len(runs):
                raise StoreError(f"--decisions {spec}: the store {store.root} has {len(runs)} run(s) — "
                                 "`kernelscope runs` lists them")
            run_id = runs[back].id
        view = store.run(run_id)
        summary = view.summary()
        decisions = view.decisions()
        return DecisionSet(f"run {run_id} of {store_dir}",
                           recorded_on(decisions.gpu, summary.torch_version, summary.triton_version, summary.target,
                                       summary.device),
                           replayable(decisions.decisions), explicit)


def project_setting(workspace: Path) -> str | None:
    """`decisions` under `[tool.kernelscope]` in the workspace's pyproject.toml, if set."""
    path = Path(workspace) / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            return None
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("kernelscope", {})
    except (OSError, ValueError) as error:
        raise DecisionsError(f"{path}: cannot read [tool.kernelscope] ({error}): fix the file") from error
    value = table.get("decisions") if isinstance(table, dict) else None
    if value is not None and not isinstance(value, str):
        raise DecisionsError(f"{path}: [tool.kernelscope] decisions must be a string (a run id, a file, or \"none\")")
    return value
