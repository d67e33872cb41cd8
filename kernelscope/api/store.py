"""`kernelscope.open(path)`: a store of recorded runs, for Python.

A thin layer over the store's read model (`kernelscope.store.Store` and its
`RunView`): the same answers `kernelscope runs`, `show`, `query` and `dump` print,
as objects. Never imports torch.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope.errors import StoreError
from kernelscope.store import DEFAULT_STORE_DIR

if TYPE_CHECKING:
    from kernelscope.api.answer import Answer
    from kernelscope.api.run import Run
    from kernelscope.store import Store as StoreBackend
    from kernelscope.store.distributed import RankRef


class Store:
    """A `.kernelscope/` store: its runs, newest first, and line answers.

    Open one with `kernelscope.open(path)`. It holds an SQLite connection: use it (and
    the runs it hands out) from the thread that opened it, and close it when done
    (`with kernelscope.open() as store: ...`, or `store.close()`). Runs recorded by
    others while it is open show up in `runs` and `latest`."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_STORE_DIR, *, create: bool = False):
        from kernelscope.store import Store as StoreBackend

        self.path = Path(path).absolute()
        self._backend: StoreBackend | None = StoreBackend(path, create=create)

    @property
    def backend(self) -> StoreBackend:
        """The store's read model (`kernelscope.store.Store`) behind this object."""
        if self._backend is None:
            raise StoreError(f"the store {self.path} was closed: open it again with "
                             f"kernelscope.open({str(self.path)!r})")
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------

    @property
    def runs(self) -> Runs:
        """Every run, newest first (a list of Run; shows as the table `kernelscope runs` prints)."""
        from kernelscope.api.run import Run

        summaries = self.backend.runs()
        ranks = self.backend.ranks_of_runs([summary.id for summary in summaries])
        return Runs([Run(self, summary.id, summary) for summary in summaries], ranks)

    def run(self, run_id: int | None = None) -> Run:
        """Run `run_id` (the latest when None); StoreError names a run that is not here."""
        from kernelscope.api.run import Run

        return Run(self, self.backend.run(run_id).id)

    @property
    def latest(self) -> Run:
        """The newest run (StoreError when the store has none yet)."""
        return self.run(None)

    def query(self, location: str, line: int | None = None, *, run: int | None = None, direction: str = "both",
              module: str | None = None, direct_only: bool = False, detail: bool = False) -> Answer:
        """What a line became, in run `run` or else the latest run that has the file: the
        answer `kernelscope query FILE:LINE` prints. `location` is `"file.py:27"`, or a path
        with `line` given apart. See Run.query for the options."""
        from kernelscope.api.answer import ask, parse_location

        path, line = _file_line(location, line, parse_location)
        return ask(self.backend, path, line, run, direction, module, direct_only, detail)

    # -- display ---------------------------------------------------------------------

    def __repr__(self) -> str:
        state = "closed" if self._backend is None else f"{len(self.backend.runs())} run(s)"
        return f"<kernelscope store {self.path}: {state}>"

    def _repr_html_(self) -> str:
        return self.runs._repr_html_()


class Runs(list["Run"]):
    """A store's runs, newest first: a list of Run that shows as a table."""

    def __init__(self, runs: list[Run], ranks: dict[int, RankRef]):
        super().__init__(runs)
        self.ranks = ranks  # run id -> its rank in a distributed job (runs of one only)

    def to_dicts(self) -> list[dict[str, Any]]:
        """JSON-ready data: what `kernelscope runs --json` prints."""
        return [{**asdict(run.summary), "rank": asdict(self.ranks[run.id]) if run.id in self.ranks else None}
                for run in self]

    def table(self) -> str:
        """The table `kernelscope runs` prints."""
        from kernelscope.render.report import runs_table

        return runs_table([run.summary for run in self], self.ranks)

    def __repr__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        from kernelscope.render.html import runs_html

        return runs_html([run.summary for run in self], self.ranks)


def open(path: str | os.PathLike[str] = DEFAULT_STORE_DIR, *, create: bool = False) -> Store:  # noqa: A001
    """Open the store at `path` (a `.kernelscope` folder). StoreError when there is none
    there, unless `create`."""
    return Store(path, create=create)


def _file_line(location: str, line: int | None, parse) -> tuple[str, int]:
    if line is None:
        return parse(str(location))
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        from kernelscope.errors import UserError

        raise UserError(f"a line number counts from 1, got {line!r}")
    return str(location), line
