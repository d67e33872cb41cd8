"""`StoreBackend`: the one object the engine and the front ends open on a `.kernelscope/`
directory (the Python API's `kernelscope.Store` wraps it).

It owns the SQLite connection and the store root, turns user-given paths into
stored keys, and hands the work to the modules that do it (writing/, reading/,
parts/, export/). Front ends read a run through its read model, `StoreBackend.run(run_id)`
(a RunView: files, line answers, kernels, facts, profile, module groups); the
connection and the SQL never leave `kernelscope.store`. A StoreBackend is used from
one thread; open one per thread.
"""
from __future__ import annotations

import os
from pathlib import Path

from kernelscope.errors import StoreError
from kernelscope.run_record import RunRecord
from kernelscope.store import paths, places
from kernelscope.store.database import connection
from kernelscope.store.export import dump
from kernelscope.store.health import integrity
from kernelscope.store.parts import asm_builds, distributed, profiles
from kernelscope.store.reading import graphs_and_kernels, locate, query, runs, source_index
from kernelscope.store.results import SOURCE, FileLinks, Location, QueryResult, RunDetails, RunSummary
from kernelscope.store.run_view import RunView
from kernelscope.store.writing import deletion, merge, writer


@connection.reads_damage_as_store_errors
class StoreBackend:
    """A workspace's `.kernelscope/` directory: `kernelscope.sqlite` plus `runs/<id>/` files."""

    def __init__(self, root: str | os.PathLike[str] = paths.DEFAULT_STORE_DIR, create: bool = True,
                 path_map: places.PathMap | None = None):
        self.root = Path(root).absolute()
        self.db_path = self.root / connection.DB_FILE_NAME
        self.conn = connection.connect(self.root, create=create)
        # Where recorded paths are now (a store moved with its workspace; --map-path).
        self.places = places.Places(self.root, path_map if path_map is not None else places.PathMap.from_environment())
        self._relative_workspaces = connection.has_column(self.conn, "runs", "workspace_from_store")

    def close(self) -> None:
        self.conn.close()

    def damage_behind(self, error: BaseException) -> StoreError | None:
        """For an error a front end met while using what this store answered: the
        StoreError naming the rows that hold values kernelscope never writes (a crafted or
        damaged store), or None when the store holds none (then `error` is a bug)."""
        return connection.crafted_values_error(self.conn, self.db_path)

    def __enter__(self) -> StoreBackend:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------

    def write_run(self, record: RunRecord) -> int:
        """Store a recording, all or nothing; return its run id."""
        return writer.write_run(self.conn, self.root, record)

    def delete_run(self, run_id: int) -> None:
        deletion.delete_run(self.conn, self.root, run_id)

    def prune_runs(self, target: str, keep: int = deletion.DEFAULT_KEEP) -> list[int]:
        """Delete all but the newest `keep` runs of `target`; the deleted ids, oldest first."""
        return deletion.prune_runs(self.conn, self.root, target, keep)

    # -- runs --------------------------------------------------------------------

    def run(self, run_id: int | None = None) -> RunView:
        """The read model of run `run_id` (the latest when None): what every front end reads
        (see kernelscope.store.run_view). StoreError names a run that does not exist."""
        return RunView(self, runs.resolve_run_id(self.conn, run_id))

    def runs(self) -> list[RunSummary]:
        """All runs, newest first."""
        return runs.list_runs(self.conn)

    def fingerprint(self) -> tuple[int | None, int]:
        """(newest run id, number of runs): changes whenever a run is written or deleted
        (what a long-lived front end polls to notice runs written by others)."""
        return runs.fingerprint(self.conn)

    def latest_run_id(self, target: str | None = None) -> int | None:
        return runs.latest_run_id(self.conn, target)

    def latest_runs_by_target(self) -> dict[str, RunSummary]:
        return runs.latest_runs_by_target(self.conn)

    def show(self, run_id: int | None = None) -> RunDetails:
        """One run in full (the latest when `run_id` is None)."""
        details = runs.run_details(self.conn, runs.resolve_run_id(self.conn, run_id))
        profiles.annotate_kernels(self.conn, details.summary.id, details.kernels)
        details.workspace = self.workspace(details.summary.id)  # where it is now, not where it was
        return details

    def kernel_facts(self, run_id: int | None = None) -> dict[str, graphs_and_kernels.KernelFacts]:
        """`graph key/kernel name` -> the model lines, wrapper lines and module instances of
        every kernel of the run (the latest when None): a kernel list's columns and filters."""
        return graphs_and_kernels.kernel_facts(self.conn, runs.resolve_run_id(self.conn, run_id))

    # -- lookups -------------------------------------------------------------------

    def key_for(self, path: str | Path, cwd: Path | None = None) -> str:
        """The stored key of a user-given path (see paths.lookup_key), trying every place
        the runs' workspaces may be now (kernelscope.store.places)."""
        workspaces = [workspace for recorded, from_store in self._workspace_rows()
                      for workspace in self.places.workspaces(recorded, from_store)]
        keys = [paths.lookup_key(form, self.root, workspaces, cwd) for form in self.places.recorded_forms(str(path))]
        known = next((key for key in keys if locate.has_file(self.conn, key)), None)
        return known or keys[0]

    def locate(self, path: str | Path, run_id: int | None = None) -> Location:
        """What `path` is, in run `run_id` or else the latest run that has it."""
        key = self.key_for(path)
        try:
            location = locate.locate(self.conn, self.root, key, run_id)
        except StoreError as error:
            raise self._not_here(error, key) from None
        if location.kind == SOURCE:
            location.absolute_path = self.places.source_path(key, *self._workspace_of(location.run_id))
        return location

    def file_problem(self, location: Location) -> str | None:
        """Why a generated file is not as its run wrote it (missing, edited), or None."""
        if location.kind == SOURCE:
            return None
        sha256 = locate.file_sha256(self.conn, location.run_id, location.path)
        problem = integrity.file_problem(self.root, location.path, sha256) if sha256 else None
        return None if problem is None else (f"{problem[1]}: `kernelscope doctor` checks the store; "
                                             "answers come from what was recorded")

    def workspace(self, run_id: int) -> str:
        """Where run `run_id`'s workspace is now (see kernelscope.store.places)."""
        return self.places.workspace(*self._workspace_of(run_id))

    def candidate_workspaces(self) -> list[str]:
        """Every place the runs' workspaces may be now (see kernelscope.store.places)."""
        return sorted({workspace for recorded, from_store in self._workspace_rows()
                       for workspace in self.places.workspaces(recorded, from_store)})

    def recorded_workspaces(self) -> list[str]:
        """The workspaces the runs were recorded in, as recorded (absolute)."""
        return sorted({recorded for recorded, _ in self._workspace_rows() if recorded})

    def _workspace_rows(self) -> list[tuple[str, str | None]]:
        return runs.workspace_rows(self.conn, self._relative_workspaces)

    def _workspace_of(self, run_id: int) -> tuple[str, str | None]:
        return runs.workspace_of(self.conn, run_id, self._relative_workspaces)

    def _not_here(self, error: StoreError, key: str) -> StoreError:
        """A file not found: when the runs' workspaces are nowhere near it, say how to map them."""
        if not Path(key).is_absolute() or key.startswith(str(self.root)):
            return error
        recorded = self.recorded_workspaces()
        if not recorded:
            return error
        return StoreError(f"{error}. The store's runs were recorded in {', '.join(recorded[:3])}: if {key} is "
                          f"a copy of a file from there, pass --map-path {recorded[0]}=<the folder that holds "
                          "it here> (or set KERNELSCOPE_MAP_PATH)")

    def query(self, path: str | Path, line: int, run_id: int | None = None, direction: str = "both",
              module: str | None = None, direct_only: bool = False, detail: bool = True,
              rollup: bool = False) -> QueryResult:
        """The provenance chain through `path:line` (see kernelscope.store.reading.query): nodes
        of this line and, unless `direct_only`, those it calls into; `module` keeps one
        module instance (and those inside it). `detail=False` counts kernel and wrapper
        lines instead of listing them (fast on outer lines of deep models); `rollup`
        summarizes module instances per layer (GraphChain.modules)."""
        result = query.query(self.conn, self.locate(path, run_id), line, direction, module, direct_only,
                             detail, rollup)
        profiles.annotate_query(self.conn, result)  # device times, when the run has a profile
        return result

    def source_file_index(self, path: str | Path, run_id: int | None = None) -> source_index.FileIndex:
        """Every line of a model source file and what it became (RunView.source_index), in
        run `run_id` or else the latest run that has the file."""
        location = self.locate(path, run_id)
        return self.run(location.run_id).source_index(location)

    def source_line(self, path: str | Path, line: int, run_id: int | None = None) -> source_index.LineAnswer:
        """What one model source line became, from the file's source index (RunView.source_line)."""
        location = self.locate(path, run_id)
        return self.run(location.run_id).source_line(location, line)

    def lines_for_file(self, path: str | Path, run_id: int | None = None) -> FileLinks:
        links = query.lines_for_file(self.conn, self.locate(path, run_id))
        profiles.annotate_file_links(self.conn, links)
        return links

    # -- device time (kernelscope.store.parts.profiles) --------------------------------

    def attach_profile(self, run_id: int, record: profiles.ProfileRecord) -> None:
        """Attach device times to run `run_id` (replacing an earlier profile), all or nothing."""
        profiles.write_profile(self.conn, run_id, record)

    def device_times(self, run_id: int) -> profiles.RunProfile | None:
        """Run `run_id`'s profile per step (kernels, extern calls, outside-graph time), or None."""
        return profiles.read_profile(self.conn, run_id)

    def absolute_path(self, stored_path: str) -> Path:
        """Where a generated file (`runs/3/...`) is on disk; never outside the store
        (paths.generated_path raises OutsideStore for a row that leads out of it)."""
        return paths.generated_path(self.root, stored_path)

    # -- below the kernel (kernelscope.store.parts.asm_builds) ----------------------------

    @property
    def asm(self) -> asm_builds.AsmStore:
        """Each kernel compiled for the run's GPU: stage files, line maps, facts."""
        return asm_builds.AsmStore(self.conn, self.root)

    # -- distributed jobs (parts/distributed.py, writing/merge.py) -------------------------

    def ranks_of_runs(self, run_ids: list[int]) -> dict[int, distributed.RankRef]:
        return distributed.ranks_of_runs(self.conn, run_ids)

    def latest_run_of_rank(self, rank: int, job: str | None = None) -> int | None:
        return distributed.latest_run_of_rank(self.conn, rank, job)

    def merge_from(self, other: str | Path) -> merge.MergeResult:
        """Copy every run of the store at `other` into this one (see kernelscope.store.writing.merge)."""
        return merge.merge_store(self.conn, self.root, Path(other))

    # -- export --------------------------------------------------------------------

    def dump(self, run_id: int | None = None, options: dump.DumpOptions = dump.DumpOptions()) -> dict:
        """The run as schema-valid, deterministic JSON data (the latest run when None)."""
        return dump.dump_run(self.conn, run_id, options, store_root=self.root)
