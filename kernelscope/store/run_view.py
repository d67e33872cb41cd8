"""`RunView`: one run of a store, as every front end reads it.

The CLI, the language server, the terminal UI, `diff`, `profile` and the dumps read
a run through this object, which `StoreBackend.run(run_id)` hands out: the run's files,
line answers, kernels, facts, graph breaks and recompiles, profile and module
groups. It holds no state of its own beyond the run id; answers come from the
store's indexes and what is derived from a whole run is cached per run
(reading/answer_cache.py: runs never change once written). The SQLite connection and the SQL stay
inside `kernelscope.store`.

A RunView borrows its StoreBackend's connection: use it from the thread that opened
the store, and not after the store is closed.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from kernelscope.asm.model import ALL_STAGES
from kernelscope.errors import UserError
from kernelscope.store.database import connection
from kernelscope.store.export import dump
from kernelscope.store.parts import (
    asm_builds,
    decisions,
    distributed,
    kernel_parts,
    memory,
    profiles,
    user_kernels,
    why,
)
from kernelscope.store.parts import numerics as numerics_part
from kernelscope.store.parts.asm_builds import AsmFileRef, AsmLineAnswer, KernelBelow
from kernelscope.store.parts.distributed import CollectiveRef, RankRef
from kernelscope.store.parts.memory import LineMemory, RunMemory
from kernelscope.store.parts.numerics import LineNumerics, NumericsReport
from kernelscope.store.reading import (
    graphs_and_kernels,
    line_overviews,
    locate,
    module_tree,
    query,
    recomputes,
    recorded_code,
    runs,
    source_index,
)
from kernelscope.store.reading.answer_cache import cached, db_key
from kernelscope.store.reading.locate import graph_ref
from kernelscope.store.reading.source_index import LineAnswer, SourceLineSummary
from kernelscope.store.results import (
    ASM,
    SOURCE,
    FileLinks,
    GraphOverview,
    GraphRef,
    InstanceGroup,
    KernelPartRef,
    LineOverview,
    Location,
    QueryResult,
    RecomputeRef,
    RunDetails,
    RunSummary,
    UserKernelCopy,
    UserKernelRef,
)


class StoreReads(Protocol):
    """What a RunView needs of the StoreBackend that hands it out."""

    root: Path
    conn: sqlite3.Connection
    db_path: Path

    def locate(self, path: str | Path, run_id: int | None = None) -> Location: ...

    def lines_for_file(self, path: str | Path, run_id: int | None = None) -> FileLinks: ...

    def absolute_path(self, stored_path: str) -> Path: ...


@connection.reads_damage_as_store_errors
class RunView:
    """One run of a store, read-only (see the module docstring)."""

    def __init__(self, store: StoreReads, run_id: int):
        self._store = store
        self._conn = store.conn
        self.db_path = store.db_path
        self.id = run_id

    def __repr__(self) -> str:
        return f"RunView({self._store.root}, run {self.id})"

    # -- the run ---------------------------------------------------------------------

    def summary(self) -> RunSummary:
        """Target, device, mode, versions, counts and coverage (cached)."""
        return cached(("summary", db_key(self._conn), self.id), lambda: runs.run_summary(self._conn, self.id))

    def details(self) -> RunDetails:
        """Graphs with their files, kernels, graph breaks, recompiles, warnings, timings and
        config; kernels carry device times when the run has a profile (cached until a
        profile is attached)."""
        def compute():
            details = runs.run_details(self._conn, self.id)
            profiles.annotate_kernels(self._conn, self.id, details.kernels)
            return details

        stamp = profiles.profile_stamp(self._conn, self.id)
        return cached(("details", db_key(self._conn), self.id, stamp), compute)

    def graphs(self) -> dict[int, graphs_and_kernels.GraphInfo]:
        """Graph id -> its key, compile id, kind and files, in compile order."""
        return graphs_and_kernels.graphs_of_run(self._conn, self.id)

    def kernels(self) -> dict[int, graphs_and_kernels.KernelInfo]:
        """Kernel id -> name, kind, file and graph, in graph and launch order."""
        return graphs_and_kernels.kernels_of_run(self._conn, self.id)

    def kernel_facts(self) -> dict[str, graphs_and_kernels.KernelFacts]:
        """`graph key/kernel name` -> the model lines, wrapper lines and module instances of
        every kernel (a kernel list's columns and filters)."""
        return graphs_and_kernels.kernel_facts(self._conn, self.id)

    def kernel_of_file(self, path: str) -> graphs_and_kernels.KernelInfo | None:
        """The kernel a stored kernel file belongs to (None for other files)."""
        return graphs_and_kernels.kernel_of_file(self._conn, self.id, path)

    def kernel_sources(self, kernel_id: int) -> list[tuple[str, int]]:
        """The model lines (file, line) a kernel's nodes come from."""
        return graphs_and_kernels.kernel_sources(self._conn, kernel_id)

    def all_kernel_sources(self) -> dict[int, list[tuple[str, int]]]:
        """Kernel id -> its model lines, for every kernel of the run."""
        return graphs_and_kernels.all_kernel_sources(self._conn, self.id)

    def fallbacks(self) -> dict[str, list[tuple[int, graphs_and_kernels.KernelInfo]]]:
        """Source file -> (line, kernel) of every op that fell back to eager ATen."""
        return graphs_and_kernels.fallback_sources(self._conn, self.id)

    def frame_source_lines(self, frame: int) -> list[tuple[str, int]]:
        """The model lines of the graphs of Dynamo frame `frame` (where a recompile shows)."""
        return graphs_and_kernels.frame_source_lines(self._conn, self.id, frame)

    def module_groups(self) -> list[InstanceGroup]:
        """The run's module instances as a tree, sibling instances of the same shape folded."""
        return module_tree.module_groups(self._conn, self.id)

    # -- files -------------------------------------------------------------------------

    def locate(self, path: str | Path | Location) -> Location:
        """What `path` (any spelling of a source or generated file) is in this run."""
        if isinstance(path, Location):
            path = path.path
        return self._store.locate(path, self.id)

    def file_links(self, path: str | Path | Location) -> FileLinks:
        """Every linked line of a file of this run (code lenses, highlights; a source file's
        lines carry device times when the run is profiled), cached per file."""
        location = path if isinstance(path, Location) and path.run_id == self.id else self.locate(path)
        stamp = profiles.profile_stamp(self._conn, self.id)
        return cached(("links", db_key(self._conn), self.id, location.path, stamp),
                      lambda: self._store.lines_for_file(location.path, self.id))

    def recorded_code(self, path: str) -> dict[int, str]:
        """Line -> code as recorded, for the lines of source file `path` (a stored key) that
        the run points at: matched against the text as it is now when the file changed."""
        return recorded_code.recorded_code(self._conn, self.id, path)

    def source_code(self, file: str, line: int) -> str:
        """The recorded code of one model line ("" when the run recorded none)."""
        return recorded_code.source_code(self._conn, self.id, file, line)

    def absolute_path(self, stored_path: str) -> Path:
        """Where a generated file (`runs/3/...`) is on disk."""
        return self._store.absolute_path(stored_path)

    # -- line answers ------------------------------------------------------------------

    def source_index(self, path: str | Path | Location) -> source_index.FileIndex:
        """Every line of a model source file and what it became (kernels with their line
        numbers, graph and wrapper lines), answered at once and cached per file."""
        return source_index.file_index(self._conn, self.id, self._source(path).path)

    def source_line(self, path: str | Path | Location, line: int) -> LineAnswer:
        """What one model source line became, from the file's source index."""
        return source_index.source_line(self._conn, self.id, self._source(path).path, line)

    def line_summaries(self, path: str | Path | Location) -> dict[int, SourceLineSummary]:
        """Per line of a source file: its kernels and the lines fused with it (lenses, hints)."""
        return source_index.line_summaries(self._conn, self.id, self._source(path).path)

    def line_overview(self, path: str | Path | Location, line: int) -> LineOverview:
        """One model line's answer counted per graph and module group, folded: what
        `kernelscope query FILE:LINE` prints by default. Read from the counts the store
        keeps per line (one index probe), so an outer line of a deep model answers in
        milliseconds. Agrees with `query(path, line, detail=False, rollup=True)`."""
        location = self._source(path)
        lines = locate.file_lines(location)
        locate.check_line(location, line, lines)
        text = lines[line - 1] if lines is not None and line <= len(lines) else ""
        return LineOverview(location=location, line=line, text=text,
                            graphs=line_overviews.read_line(self._conn, self.id, location.path, line))

    def file_overviews(self, path: str | Path | Location) -> dict[int, list[GraphOverview]]:
        """Line -> its answer counted per graph and module group, for every line of a source
        file with an answer (code lenses, hovers), cached per file."""
        location = self._source(path)
        return cached(("overviews", db_key(self._conn), self.id, location.path),
                      lambda: line_overviews.read_file(self._conn, self.id, location.path))

    def linked_lines(self, path: str | Path | Location) -> list[int]:
        """The lines of a model source file that have an answer in this run."""
        return line_overviews.linked_lines(self._conn, self.id, self._source(path).path)

    def query(self, path: str | Path, line: int, direction: str = "both", module: str | Sequence[str] | None = None,
              direct_only: bool = False, detail: bool = True, rollup: bool = False) -> QueryResult:
        """The whole provenance chain through `path:line` (see StoreBackend.query), in this run."""
        return self.query_at(self.locate(path), line, direction, module, direct_only, detail, rollup)

    def query_at(self, location: Location, line: int, direction: str = "both",
                 module: str | Sequence[str] | None = None, direct_only: bool = False, detail: bool = True,
                 rollup: bool = False) -> QueryResult:
        """`query` of a file already located in this run (no second path lookup)."""
        result = query.query(self._conn, location, line, direction, module, direct_only, detail, rollup)
        profiles.annotate_query(self._conn, result)
        return result

    # -- a program's own Triton kernels -----------------------------------------------

    def user_kernels(self) -> list[UserKernelRef]:
        """Every user kernel of the run (its generated copy, the user's function, its configs
        and the one the run launched), in graph and kernel order."""
        return user_kernels.user_kernels_of_run(self._conn, self.id, self._graph_ref)

    def user_kernel_copies(self, location: Location, line: int) -> list[UserKernelCopy]:
        """A user kernel's source line: its generated copies; a kernel line of a user kernel:
        the kernel and the user's line it was copied from (also `query(...).user_kernels`)."""
        return user_kernels.user_kernel_copies(self._conn, location, line, self._graph_ref)

    def user_kernel_lines(self, location: Location) -> tuple[dict[int, list[UserKernelRef]],
                                                           dict[int, list[UserKernelRef]]]:
        """A source file's user Triton kernels by line: ({`def` line: its generated copies},
        {call line: the copies it launches}), for the language server's lenses."""
        return user_kernels.kernels_by_line(self._conn, self.id, location.path, self._graph_ref)

    def kernel_parts(self) -> list[KernelPartRef]:
        """Every foreach/combo sub-kernel of the run, with the optimizer parameters it updates."""
        return kernel_parts.parts_of_run(self._conn, self.id, self._graph_ref)

    def kernel_parts_at(self, location: Location, line: int) -> list[KernelPartRef]:
        """A foreach/combo kernel's line: its sub-kernel (nodes, their lines, the optimizer
        parameters it updates); a source line: the optimizer sub-kernels its ops (or the calls
        it made, a script's `opt.step()`) became (also `query(...).kernel_parts`)."""
        return kernel_parts.parts_at(self._conn, location, line, self._graph_ref)

    def user_kernel_line_counts(self) -> tuple[int, int]:
        """(user kernel body lines linked to the user's source, user kernel body lines)."""
        return user_kernels.line_counts(self._conn, self.id)

    def _graph_ref(self, graph_id: int) -> GraphRef:
        return graph_ref(self._conn, graph_id)

    def _source(self, path: str | Path | Location) -> Location:
        """A source file of this run; a Location of it (from `locate`) is taken as is, so an
        editor that located a document once does not look its path up on every request."""
        location = path if isinstance(path, Location) and path.run_id == self.id else self.locate(path)
        if location.kind != SOURCE:
            raise UserError(f"{location.path} is a generated file ({location.kind}), not a model source file: "
                            "use query for its lines")
        return location

    # -- device time -------------------------------------------------------------------

    def profile(self) -> profiles.RunProfile | None:
        """Device times per step (kernels, extern calls, outside-graph time), or None."""
        return profiles.read_profile(self._conn, self.id)

    # -- why: guards, recompiles, fusion refusals (store/parts/why.py; docs/why.md) ------------

    def why_at(self, path: str | Path | Location, line: int) -> why.LineWhy:
        """The guards a model line installed, the recompiles they (or its checks) caused and
        the fusions Inductor refused for its ops."""
        return why.line_why(self._conn, self.id, self._source(path).path, line)

    def file_why(self, path: str | Path | Location) -> dict[int, why.LineWhy]:
        """Line -> its shape guards, specializations and the recompiles it caused, for a
        whole model file (diagnostics); fusion refusals are asked per line (`why_at`)."""
        return why.file_why(self._conn, self.id, self._source(path).path)

    def not_fused(self) -> list[why.NotFusedRef]:
        """Every pair of ops the run kept in different kernels, why, and both lines (docs/why.md)."""
        return why.run_not_fused(self._conn, self.id)

    def guards(self) -> list[why.GuardRef]:
        """Every guard of the run, in the order torch installed them."""
        return why.run_guards(self._conn, self.id)

    def guard_failures(self) -> list[why.RecompileRef]:
        """Every failed guard of every recompile of the run."""
        return why.run_failures(self._conn, self.id)

    def has_profile(self) -> bool:
        return profiles.profile_stamp(self._conn, self.id) is not None

    def file_line_times(self, path: str) -> tuple[dict[int, tuple[float, bool]], float] | None:
        """Line -> (device time per step, shared) of a source file, and the step time;
        None without a profile (see profiles.file_line_times)."""
        return profiles.file_line_times(self._conn, self.id, path)

    def profile_kernels(self) -> list[profiles.ProfiledKernel]:
        """Every kernel and extern call with its graph and first wrapper line: what a
        profiler trace is joined with."""
        return profiles.run_kernels(self._conn, self.id)

    # -- below the kernel (kernelscope.store.parts.asm_builds) --------------------------------
    # Builds are added to a stored run later (on first ask, by the engine worker), so
    # none of these is cached: each asks the store's indexes again.

    def _asm(self) -> asm_builds.AsmStore:
        return asm_builds.AsmStore(self._conn, self._store.root)

    def asm_status(self) -> asm_builds.AsmStatus:
        """How many of the run's Triton kernels are built below Triton (and how many could be)."""
        return self._asm().status(self.id)

    def asm_builds(self, kernel_ids: Sequence[int] | None = None) -> dict[int, asm_builds.KernelAsmInfo]:
        """Kernel id -> its build (facts and stage files, or why it could not be built), for
        the kernels of `kernel_ids` (every kernel of the run when None); kernels not built
        yet are left out."""
        if kernel_ids is None:
            return self._asm().run_infos(self.id)
        return self._asm().infos(list(kernel_ids))

    def asm_unbuilt(self, kernel_files: Sequence[str] | None = None) -> list[str]:
        """The stored kernel files (of `kernel_files`, else of the whole run) that can be built
        below Triton and are not yet: what to ask the engine worker to build."""
        asm = self._asm()
        kernel_ids = None if kernel_files is None else list(asm.kernel_ids_of_files(list(kernel_files)).values())
        if kernel_ids == []:
            return []
        return [kernel.file for kernel in asm.pending(self.id, kernel_ids)]

    def asm_below(self, kernel_file: str, kernel_lines: Sequence[int],
                  stages: tuple[str, ...] = ALL_STAGES) -> KernelBelow:
        """The build of the kernel stored at `kernel_file` (info None: not built yet) and the
        stage lines its `kernel_lines` became."""
        return self._asm().below(kernel_file, list(kernel_lines), stages)

    def asm_file(self, path: str | Path | Location) -> AsmFileRef | None:
        """What a stage file (`runs/3/asm/.../k.sass`) is: kernel, stage, lines; None for other files."""
        location = path if isinstance(path, Location) else self.locate(path)
        return self._asm().locate(location.path) if location.kind == ASM else None

    def asm_line(self, path: str | Path | Location, line: int, direction: str = "up",
                 module: str | Sequence[str] | None = None, direct_only: bool = False) -> AsmLineAnswer:
        """A line of a stage file up the chain: the kernel line(s) it came from and the chain of
        each (`query` of the kernel file's line, in `direction`, with `module` and `direct_only`)."""
        ref = self.asm_file(path)
        if ref is None:
            raise UserError(f"{path} is not a stage file (PTX, SASS, TTIR, TTGIR, x86) of run {self.id}")
        if line < 1 or line > ref.line_count:
            raise UserError(f"line {line} is out of range for {ref.path}: give a line 1-{ref.line_count}")
        lines = self._asm().lines_at(ref, line)
        kernel = self.locate(ref.kernel_file)
        chains = [self.query_at(kernel, kernel_line, direction, module, direct_only)
                  for kernel_line in sorted({asm_line.kernel_line for asm_line in lines})]
        text = lines[0].text if lines else _line_of(self._store.absolute_path(ref.path), line)
        return AsmLineAnswer(ref, line, text, lines, chains)

    # -- distributed jobs (kernelscope.store.parts.distributed) -----------------------------

    def distributed(self) -> distributed.DistributedRun:
        """The run's rank and job, which ranks compiled identical code, and per graph its
        DDP split part, collectives and compute/communication order."""
        return distributed.distributed_run(self._conn, self.id, self._store.root)

    def recomputes_at(self, location: Location, line: int) -> list[RecomputeRef]:
        """The backward nodes a line reaches that recompute a forward op (activation checkpointing)."""
        return recomputes.recomputes_at(self._conn, location, line)

    def collectives_at(self, location: Location, line: int) -> list[CollectiveRef]:
        """The collectives a wrapper, post-grad or model source line issues or waits on."""
        return distributed.collectives_at(self._conn, location, line)

    def has_collectives(self) -> bool:
        """Whether any graph of the run communicates (a front end asks before asking per line), cached."""
        return cached(("has collectives", db_key(self._conn), self.id),
                      lambda: distributed.has_collectives(self._conn, self.id))

    def rank(self) -> RankRef | None:
        """The run's rank in its distributed job (None for a run of one process)."""
        return distributed.rank_of(self._conn, self.id)

    def file_collectives(self, path: str | Path | Location) -> dict[int, list[CollectiveRef]]:
        """Line -> the collectives of a model source file's line: those its nodes issue or wait
        on, and those it needed (the collective's model line), cached per file."""
        location = self._source(path)
        return cached(("collectives", db_key(self._conn), self.id, location.path),
                      lambda: distributed.file_collectives(self._conn, self.id, location.path))

    # -- timing decisions (kernelscope.store.parts.decisions) ---------------------------

    def decisions(self) -> decisions.RunDecisions:
        """The choices the run's compiles made by timing on the GPU (or replayed from another
        run's, or guessed): pad_mm, max-autotune, fusion benchmarks, launch configs (cached)."""
        return cached(("decisions", db_key(self._conn), self.id),
                      lambda: decisions.read_run_decisions(self._conn, self.id))

    # -- memory (kernelscope.store.parts.memory) ------------------------------------------

    def memory(self) -> RunMemory | None:
        """Each graph's allocation timeline, peak and what is live there, and what each forward
        saves for its backward, per model line and module instance; None when the run recorded
        no memory (cached)."""
        return cached(("memory", db_key(self._conn), self.id), lambda: memory.read_run_memory(self._conn, self.id))

    def file_memory(self, path: str | Path | Location) -> dict[int, LineMemory]:
        """Line -> the memory its nodes hold (saved for backward, live at the peak), for one
        model source file (hovers, code lenses)."""
        return memory.file_memory(self.memory(), self._source(path).path)

    # -- numerics (kernelscope.store.parts.numerics) -------------------------------------

    def numerics(self) -> NumericsReport | None:
        """Every kernel output compared with eager, the first divergence and the fixes tried
        (`kernelscope numerics`); None for a run recorded without them (cached)."""
        return cached(("numerics", db_key(self._conn), self.id),
                      lambda: numerics_part.read_numerics(self._conn, self.id))

    def line_numerics(self, path) -> list[LineNumerics]:
        """The numerics of a model source file's lines (those with kernel outputs), worst first."""
        report = self.numerics()
        if report is None:
            return []
        return numerics_part.line_numerics(report, self._source(path).path)

    # -- export ------------------------------------------------------------------------

    def dump(self, options: dump.DumpOptions = dump.DumpOptions()) -> dict:
        """The run as schema-valid, deterministic JSON data."""
        return dump.dump_run(self._conn, self.id, options, store_root=self._store.root)


def _line_of(path: Path, line: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if line <= len(lines) else ""
