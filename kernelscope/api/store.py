"""`kernelscope.open(path)`: a store of recorded runs (`Store`, `Runs`) and each run
(`Run`), for Python.

A thin layer over the store's read model (`kernelscope.store.StoreBackend` and its
`RunView`): the same answers `kernelscope runs`, `show`, `query` and `dump` print,
as objects, with rich output in Jupyter (a run's summary table and the fusion picture
the VS Code run overview draws). Every property reads the read model and returns its
plain dataclasses (`kernelscope.store.results`); nothing here writes SQL or imports torch.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope.errors import StoreError, UserError
from kernelscope.store import DEFAULT_STORE_DIR
from kernelscope.store.parts.why import GuardRef, LineWhy, NotFusedRef, RecompileRef

if TYPE_CHECKING:
    from kernelscope.api.answer import Answer
    from kernelscope.render.fusion import Fusion
    from kernelscope.run_record import NumericsReport
    from kernelscope.store import RunView, StoreBackend
    from kernelscope.store.parts.asm_builds import KernelAsmInfo
    from kernelscope.store.parts.decisions import RunDecisions
    from kernelscope.store.parts.distributed import DistributedRun, RankRef
    from kernelscope.store.parts.memory import RunMemory
    from kernelscope.store.parts.profiles import RunProfile
    from kernelscope.store.results import (
        GraphBreakInfo,
        GraphSummary,
        InstanceGroup,
        KernelSummary,
        RecompileInfo,
        RunDetails,
        RunSummary,
        UserKernelRef,
    )


class Store:
    """A `.kernelscope/` store: its runs, newest first, and line answers.

    Open one with `kernelscope.open(path)`. It holds an SQLite connection: use it (and
    the runs it hands out) from the thread that opened it, and close it when done
    (`with kernelscope.open() as store: ...`, or `store.close()`). Runs recorded by
    others while it is open show up in `runs` and `latest`."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_STORE_DIR, *, create: bool = False):
        from kernelscope.store import StoreBackend

        self.path = Path(path).absolute()
        self._backend: StoreBackend | None = StoreBackend(path, create=create)

    @property
    def backend(self) -> StoreBackend:
        """The store's read model (`kernelscope.store.StoreBackend`) behind this object."""
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
        summaries = self.backend.runs()
        ranks = self.backend.ranks_of_runs([summary.id for summary in summaries])
        return Runs([Run(self, summary.id, summary) for summary in summaries], ranks)

    def run(self, run_id: int | None = None) -> Run:
        """Run `run_id` (the latest when None); StoreError names a run that is not here."""
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

class Run:
    """One run of a store. `print(run)` shows what `kernelscope show` prints; in Jupyter
    a run shows its summary and fusion picture."""

    def __init__(self, store: Store, run_id: int, summary: RunSummary | None = None):
        self.store = store
        self.id = run_id
        self._summary = summary

    @property
    def view(self) -> RunView:
        """The store's read model of this run (kernelscope.store.RunView): every answer the
        front ends read, for what this class does not wrap."""
        return self.store.backend.run(self.id)

    # -- the run ---------------------------------------------------------------------

    @property
    def summary(self) -> RunSummary:
        """Target, device, mode, versions, graph and kernel counts, provenance coverage."""
        if self._summary is None:
            self._summary = self.view.summary()
        return self._summary

    @property
    def target(self) -> str:
        """What was recorded: `examples/mlp.py:make`, `examples/mlp.py:MLP`, a script."""
        return self.summary.target

    @property
    def details(self) -> RunDetails:
        """Graphs with their files, kernels, graph breaks, recompiles, warnings, timings."""
        return self.view.details()

    @property
    def graphs(self) -> list[GraphSummary]:
        """Each compiled graph (compile id, forward/backward/inference, node and kernel counts, files)."""
        return self.details.graphs

    @property
    def kernels(self) -> list[KernelSummary]:
        """Every Triton kernel and extern call, in graph and launch order (with device time
        per step when the run has a profile)."""
        return self.details.kernels

    @property
    def graph_breaks(self) -> list[GraphBreakInfo]:
        """Where Dynamo broke the graph, with the user line, explanation and hints."""
        return self.details.graph_breaks

    @property
    def recompiles(self) -> list[RecompileInfo]:
        return self.details.recompiles

    # -- why: guards, recompile failures, fusion refusals (docs/why.md) -------------------

    @property
    def guards(self) -> list[GuardRef]:
        """Every guard the run's compiles installed (GuardRef: expression, kind, added_by, line)."""
        return self.view.guards()

    @property
    def guard_failures(self) -> list[RecompileRef]:
        """Every failed guard of every recompile (RecompileRef: values, lines, advice)."""
        return self.view.guard_failures()

    @property
    def not_fused(self) -> list[NotFusedRef]:
        """Every pair of ops kept in different kernels (NotFusedRef: cause, reason, both lines and kernels)."""
        return self.view.not_fused()

    def why(self, path: str, line: int) -> LineWhy:
        """A model line's guards, the recompiles it caused and the fusions refused for its ops (LineWhy)."""
        return self.view.why_at(path, line)

    @property
    def warnings(self) -> list[str]:
        return self.details.warnings

    @property
    def modules(self) -> list[InstanceGroup]:
        """The run's module instances as a tree, alike sibling instances folded."""
        return self.view.module_groups()

    @property
    def profile(self) -> RunProfile | None:
        """Device times per step (`kernelscope profile`, `compile --profile`), or None."""
        return self.view.profile()

    @property
    def asm(self) -> dict[str, KernelAsmInfo]:
        """Below the kernel: `graph key/kernel name` -> registers, spills, occupancy and stage
        files of each kernel compiled for the run's GPU. Empty until built (`kernelscope show
        RUN --asm`, `compile --asm`, or `query --asm`)."""
        return {info.key: info for info in self.store.backend.asm.run_infos(self.id).values()}

    @property
    def decisions(self) -> RunDecisions:
        """The choices the run's compiles made by timing on the GPU (pad_mm, max-autotune,
        fusion benchmarks, launch configs): timed on a GPU, or, under virtual-cuda, replayed
        from a GPU's recording or guessed (each with its rule; docs/decisions.md)."""
        return self.view.decisions()

    @property
    def user_kernels(self) -> list[UserKernelRef]:
        """The program's own Triton kernels: each generated copy, the user's function, the
        autotune configs and the one the run launched."""
        return self.view.user_kernels()

    @property
    def memory(self) -> RunMemory | None:
        """The run's memory as its compile planned it: each graph's peak and allocation
        timeline, what the forward saves for the backward, per model line (docs/memory.md);
        None for a run that recorded none."""
        return self.view.memory()

    @property
    def numerics(self) -> NumericsReport | None:
        """`kernelscope numerics`: every kernel output compared with eager, the first
        divergence and the fixes tried; None for a run recorded without (docs/numerics.md)."""
        return self.view.numerics()

    def numerics_dict(self) -> dict[str, Any] | None:
        """The numerics as `kernelscope numerics --json` and the dump give them."""
        from kernelscope.store.parts.numerics import dump_numerics

        return dump_numerics(self.numerics)

    @property
    def distributed(self) -> DistributedRun:
        """The rank and job of a distributed run, DDP's splits and each graph's collectives."""
        return self.view.distributed()

    # -- lines -----------------------------------------------------------------------

    def query(self, location: str, line: int | None = None, *, direction: str = "both", module: str | None = None,
              direct_only: bool = False, detail: bool = False) -> Answer:
        """What a line became (down) and came from (up) in this run: the answer `kernelscope
        query FILE:LINE --run ID` prints.

        `location` is `"model.py:27"` (or a path, with `line` apart): a model source file, or
        a generated file of the run (a kernel, `wrapper.py`, `post_grad.py`). A source line
        answers with counts per graph and module group (alike instances folded) unless
        `detail` lists every node, kernel line and wrapper line; `module="blocks.1"` keeps
        one module instance, `direct_only` the nodes of this line itself, `direction` is
        "up", "down" or "both". StoreError when the file is not in this run; UserError
        for a line the file does not have."""
        from kernelscope.api.answer import ask, parse_location

        path, line = _file_line(location, line, parse_location)
        return ask(self.store.backend, path, line, self.id, direction, module, direct_only, detail)

    # -- export ----------------------------------------------------------------------

    def dump(self, path: str | os.PathLike[str] | None = None, *, include_volatile: bool = False,
             absolute_paths: bool = False) -> dict[str, Any]:
        """The run as deterministic, schema-valid JSON data (`kernelscope dump`); with `path`,
        also written there as the same bytes `kernelscope dump -o PATH` writes."""
        from kernelscope.store import dump_json
        from kernelscope.store.export.dump import DumpOptions

        data = self.view.dump(DumpOptions(include_volatile=include_volatile, absolute_paths=absolute_paths))
        if path is not None:
            write_text(path, dump_json(data))
        return data

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: what `kernelscope show RUN --json` prints."""
        data = asdict(self.details)
        data["guard_failures"] = [asdict(failure) for failure in self.guard_failures]  # docs/why.md
        data["guard_count"] = len(self.guards)
        data["not_fused"] = [asdict(ref) for ref in self.not_fused]
        profile = self.profile
        if profile is not None:
            from kernelscope.profile.report import profile_data

            data["profile"] = profile_data(profile)
        asm = self.asm
        if asm:
            data["asm"] = {key: asdict(info) for key, info in asm.items()}
        distributed = self.distributed
        from kernelscope.render.distributed import has_content

        if has_content(distributed):
            data["distributed"] = asdict(distributed)
        user_kernels = self.user_kernels
        if user_kernels:
            linked, total = self.view.user_kernel_line_counts()
            data["user_kernels"] = {"kernels": [asdict(kernel) for kernel in user_kernels],
                                    "lines_linked": {"covered": linked, "total": total}}
        parts = self.view.kernel_parts()
        if parts:
            data["kernel_parts"] = [asdict(part) for part in parts]
        decisions = self.decisions
        if self.numerics is not None:
            data["numerics"] = self.numerics_dict()
        if decisions.decisions or decisions.replay is not None or decisions.gpu:
            from kernelscope.decisions.model import decision_to_dict

            data["decisions"] = {"gpu": decisions.gpu, "counts": decisions.counts(),
                                 "decisions": [decision_to_dict(d) for d in decisions.decisions],
                                 "replay": None if decisions.replay is None else {
                                     "source": decisions.replay.source, "recorded_on": decisions.replay.recorded_on,
                                     "unused": [decision_to_dict(d) for d in decisions.replay.unused]}}
        return data

    def report(self) -> str:
        """The text `kernelscope show RUN` prints."""
        from kernelscope.render.report import run_report

        report = run_report(self.details, self.asm, self.distributed, self.profile, self.decisions,
                            self.guard_failures, self.guards, self.memory, self.numerics, self.not_fused)
        user_kernels = self.user_kernels
        if user_kernels:
            from kernelscope.render.user_kernels import run_section

            report += "\n\n" + "\n".join(run_section(user_kernels, self.view.user_kernel_line_counts()))
        parts = self.view.kernel_parts()
        if parts:  # foreach sub-kernels: a compiled optimizer step's parameters, by group
            from kernelscope.render.kernel_parts import run_section as parts_section

            report += "\n\n" + "\n".join(parts_section(parts))
        return report

    # -- the fusion picture ----------------------------------------------------------

    def fusion(self) -> Fusion:
        """Which model lines were fused into (or call) which kernels."""
        from kernelscope.render.fusion import fusion_of_run

        return fusion_of_run(self.view)

    def fusion_svg(self) -> str:
        """The fusion picture as an SVG string (what the VS Code run overview draws)."""
        from kernelscope.render.fusion import svg

        return svg(self.fusion())

    def memory_svg(self) -> str:
        """The memory picture: each graph's bytes live over its allocation timeline, peak marked
        (what the VS Code run overview draws; Jupyter shows it in the run's HTML)."""
        from kernelscope.render.memory_svg import svg

        return svg(self.memory)

    # -- display ---------------------------------------------------------------------

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        summary = self.summary
        return (f"<kernelscope run {self.id}: {summary.target} · {summary.device} · {summary.mode} · "
                f"{summary.graph_count} graph(s), {summary.kernel_count} kernel(s)>")

    def _repr_html_(self) -> str:
        from kernelscope.render.html import run_html

        return run_html(self.details, self.fusion_svg(), self.memory_svg() if self.memory is not None else "")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Run) and other.id == self.id and other.store.path == self.store.path

    def __hash__(self) -> int:
        return hash((self.store.path, self.id))


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a dump; an unwritable path is a one-line UserError."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror} — pick another path") from error
