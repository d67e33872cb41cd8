"""`Store`: the one object the engine and the front ends use.

It owns the SQLite connection and the store root, turns user-given paths into
stored keys, and hands the work to the modules that do it (writer, query,
catalog, dump). A Store is used from one thread; open one per thread.
"""
from __future__ import annotations

from pathlib import Path

from kernelscope.errors import UserError
from kernelscope.record import RunRecord
from kernelscope.store import catalog, db, dump, paths, profiles, query, run_facts, source_index, writer
from kernelscope.store import distributed, merge
from kernelscope.store.results import SOURCE, FileLinks, Location, QueryResult, RunDetails, RunSummary


class Store:
    """A workspace's `.kernelscope/` directory: `kernelscope.sqlite` plus `runs/<id>/` files."""

    def __init__(self, root: str | Path = paths.DEFAULT_STORE_DIR, create: bool = True):
        self.root = Path(root).absolute()
        self.db_path = self.root / db.DB_FILE_NAME
        self.conn = db.connect(self.root, create=create)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------

    def write_run(self, record: RunRecord) -> int:
        """Store a recording, all or nothing; return its run id."""
        return writer.write_run(self.conn, self.root, record)

    def delete_run(self, run_id: int) -> None:
        catalog.delete_run(self.conn, self.root, run_id)

    # -- runs --------------------------------------------------------------------

    def runs(self) -> list[RunSummary]:
        """All runs, newest first."""
        return catalog.list_runs(self.conn)

    def latest_run_id(self, target: str | None = None) -> int | None:
        return catalog.latest_run_id(self.conn, target)

    def latest_runs_by_target(self) -> dict[str, RunSummary]:
        return catalog.latest_runs_by_target(self.conn)

    def show(self, run_id: int | None = None) -> RunDetails:
        """One run in full (the latest when `run_id` is None)."""
        details = catalog.run_details(self.conn, catalog.resolve_run_id(self.conn, run_id))
        profiles.annotate_kernels(self.conn, details.summary.id, details.kernels)
        return details

    def kernel_facts(self, run_id: int | None = None) -> dict[str, run_facts.KernelFacts]:
        """`graph key/kernel name` -> the model lines, wrapper lines and module instances of
        every kernel of the run (the latest when None): a kernel list's columns and filters."""
        return run_facts.kernel_facts(self.conn, catalog.resolve_run_id(self.conn, run_id))

    # -- lookups -------------------------------------------------------------------

    def key_for(self, path: str | Path, cwd: Path | None = None) -> str:
        """The stored key of a user-given path (see paths.lookup_key)."""
        workspaces = [row[0] for row in self.conn.execute("SELECT DISTINCT workspace FROM runs")]
        return paths.lookup_key(str(path), self.root, workspaces, cwd)

    def locate(self, path: str | Path, run_id: int | None = None) -> Location:
        """What `path` is, in run `run_id` or else the latest run that has it."""
        return query.locate(self.conn, self.root, self.key_for(path), run_id)

    def query(self, path: str | Path, line: int, run_id: int | None = None, direction: str = "both",
              module: str | None = None, direct_only: bool = False, detail: bool = True,
              rollup: bool = False) -> QueryResult:
        """The provenance chain through `path:line` (see kernelscope.store.query): nodes
        of this line and, unless `direct_only`, those it calls into; `module` keeps one
        module instance (and those inside it). `detail=False` counts kernel and wrapper
        lines instead of listing them (fast on outer lines of deep models); `rollup`
        summarizes module instances per layer (GraphChain.modules)."""
        result = query.query(self.conn, self.locate(path, run_id), line, direction, module, direct_only,
                             detail, rollup)
        profiles.annotate_query(self.conn, result)  # device times, when the run has a profile
        return result

    def source_file_index(self, path: str | Path, run_id: int | None = None) -> source_index.FileIndex:
        """Every line of a model source file and what it became (kernels with their line
        numbers, graph and wrapper lines; no texts), answered at once and cached per run
        and file: what an editor or the TUI asks on every cursor move (see source_index)."""
        location = self._source_location(path, run_id)
        return source_index.file_index(self.conn, location.run_id, location.path)

    def source_line(self, path: str | Path, line: int, run_id: int | None = None) -> source_index.LineAnswer:
        """What one model source line became, from the file's source index."""
        location = self._source_location(path, run_id)
        return source_index.source_line(self.conn, location.run_id, location.path, line)

    def _source_location(self, path: str | Path, run_id: int | None) -> Location:
        location = self.locate(path, run_id)
        if location.kind != SOURCE:
            raise UserError(f"{location.path} is a generated file ({location.kind}), not a model source file: "
                            "use query for its lines")
        return location

    def lines_for_file(self, path: str | Path, run_id: int | None = None) -> FileLinks:
        links = query.lines_for_file(self.conn, self.locate(path, run_id))
        profiles.annotate_file_links(self.conn, links)
        return links

    # -- device time (kernelscope.store.profiles) ----------------------------------

    def attach_profile(self, run_id: int, record: profiles.ProfileRecord) -> None:
        """Attach device times to run `run_id` (replacing an earlier profile), all or nothing."""
        profiles.write_profile(self.conn, run_id, record)

    def device_times(self, run_id: int) -> profiles.RunProfile | None:
        """Run `run_id`'s profile per step (kernels, extern calls, outside-graph time), or None."""
        return profiles.read_profile(self.conn, run_id)

    def absolute_path(self, stored_path: str) -> Path:
        """Where a generated file (`runs/3/...`) is on disk."""
        return self.root / stored_path

    # -- distributed jobs (kernelscope.store.distributed, kernelscope.store.merge) ----

    def distributed(self, run_id: int | None = None) -> distributed.DistributedRun:
        """Run `run_id`'s rank and job, which ranks compiled identical code, and per graph
        its DDP split part, collectives and compute/communication order."""
        return distributed.distributed_run(self.conn, catalog.resolve_run_id(self.conn, run_id))

    def collectives_at(self, path: str | Path, line: int, run_id: int | None = None) -> list[distributed.CollectiveRef]:
        """The collectives a wrapper, post-grad or model source line issues or waits on."""
        return distributed.collectives_at(self.conn, self.locate(path, run_id), line)

    def ranks_of_runs(self, run_ids: list[int]) -> dict[int, distributed.RankRef]:
        return distributed.ranks_of_runs(self.conn, run_ids)

    def latest_run_of_rank(self, rank: int, job: str | None = None) -> int | None:
        return distributed.latest_run_of_rank(self.conn, rank, job)

    def merge_from(self, other: str | Path) -> merge.MergeResult:
        """Copy every run of the store at `other` into this one (see kernelscope.store.merge)."""
        return merge.merge_store(self.conn, self.root, Path(other))

    # -- export --------------------------------------------------------------------

    def dump(self, run_id: int | None = None) -> dict:
        """The run as schema-valid, deterministic JSON data (the latest run when None)."""
        return dump.dump_run(self.conn, run_id)
