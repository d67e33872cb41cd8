"""A run as stable JSON, and its JSON Schema (`kernelscope/schema/dump-v9.json`).

The default dump is deterministic: two recordings of the same model with the
same torch give byte-identical dumps, in any store, workspace or machine. So it
mirrors the RunRecord dataclasses, read back from the store, with these
differences (DUMP_FIELD_CHANGES; a test checks schema and dataclasses agree
through it):
- generated text (`pre_grad_text`, `Kernel.source`, ...) becomes a file
  reference `{"path", "portable_sha256", "lines"}`: the text stays in the
  store's files, `path` is relative to the run's directory, and the hash is of
  the *portable* text (see `portable_text`), because Inductor writes machine
  paths into comments of the code it generates;
- what differs between two recordings of one model (`created`, `timings`,
  `peak_memory_mb`, the run id) moves into `run.volatile`, present only when
  asked for (`DumpOptions.include_volatile`);
- `workspace` is left out: source paths inside it are workspace-relative, paths
  in an installed package start with `<site-packages>/`; with
  `DumpOptions.absolute_paths` every path is absolute on this machine instead;
- the run gains `coverage`, a graph its `key` and `compile_id`;
- a rank's `job` (a torchrun run id, a process) is left out;
- a decision's timings are milliseconds or null (a failed benchmark), and the run's
  decisions are sorted by kind and key (a GPU's timings differ between its runs, as its
  decisions may: see docs/decisions.md).
Every list is sorted and every object's keys too, so dumps diff cleanly.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from kernelscope.asm import x86
from kernelscope.errors import StoreError, UserError
from kernelscope.store import paths
from kernelscope.store.export import asm_dump
from kernelscope.store.parts import decisions, memory, numerics, why
from kernelscope.store.parts.kernel_parts import dump_parts
from kernelscope.store.parts.profiles import dump_profile
from kernelscope.store.parts.recompute import NOT_RECOMPUTED, dump_recomputes
from kernelscope.store.parts.subgraphs import dump_subgraph
from kernelscope.store.parts.user_kernels import dump_user_kernel
from kernelscope.store.reading.runs import resolve_run_id
from kernelscope.version import __version__

# 7.0: kernel.user, run.guards, recompile.failures, graph.not_fused, fx_node.recompute, memory, numerics
# 8.0: run.memory's step peak and measured memory (`compile --memory`); kernel.asm of a C++ kernel
#      built for the CPU (arch x86-64: ISA, vector width, loops; docs/below-the-kernel.md); graph.not_fused[].cause,
#      other_graph (extern calls, templates, realized buffers, graph breaks);
#      kernel.parts (foreach sub-kernels and the optimizer parameters they update); kernel kind "cpp"
#      (a C++ kernel of Inductor's CPU backend, kept as .cpp); graph.wrapper_language and run.aot_package
#      (C++ wrappers, AOTInductor: docs/aot.md)
# 9.0: kernel.cpp_loops (a C++ kernel's loops, read from its code: each one's step, the vector lanes, and
#      whether Inductor vectorized it) and run.config.cpu_vec_isa (the vector ISA of the run's C++
#      kernels); `kernelscope diff` compares them (`--fail-on vectorization-lost`)
SCHEMA_VERSION = "9.0"
SCHEMA_RESOURCES = {"1.0": ("schema", "dump-v1.json"), "2.0": ("schema", "dump-v2.json"),
                    "3.0": ("schema", "dump-v3.json"), "4.0": ("schema", "dump-v4.json"),
                    "5.0": ("schema", "dump-v5.json"), "6.0": ("schema", "dump-v6.json"),
                    "7.0": ("schema", "dump-v7.json"), "8.0": ("schema", "dump-v8.json"),
                    "9.0": ("schema", "dump-v9.json")}
SITE_PACKAGES = "<site-packages>"
INDUCTOR_CACHE = "<inductor-cache>"

DUMP_FIELD_CHANGES: dict[str, dict] = {
    # dataclass name: {"$def": schema definition, "renamed": {field: property}, "dropped": {...},
    #                  "added": {...}, "optional": {...}, "moved": {"$def", "fields", "added"}}
    "RunRecord": {
        "$def": "run", "renamed": {}, "dropped": {"workspace"}, "added": {"coverage", "volatile"},
        "optional": {"volatile"},
        "moved": {"$def": "run_volatile", "fields": {"created", "timings", "peak_memory_mb"}, "added": {"id"}},
    },
    "GraphRecord": {
        "$def": "graph",
        "renamed": {"pre_grad_text": "pre_grad_file", "post_grad_text": "post_grad_file",
                    "wrapper_text": "wrapper_file"},
        "dropped": set(),
        "added": {"key", "compile_id"},
    },
    "Kernel": {"$def": "kernel", "renamed": {"source": "file"}, "dropped": set(), "added": {"asm", "cpp_loops"}},
    "FxNode": {"$def": "fx_node", "renamed": {}, "dropped": set(), "added": set()},
    "LineOrigin": {"$def": "line_origin", "renamed": {}, "dropped": set(), "added": set()},
    "SourceLocation": {"$def": "source_location", "renamed": {}, "dropped": set(), "added": set()},
    "PassStep": {"$def": "pass_step", "renamed": {}, "dropped": set(), "added": set()},
    "GraphBreak": {"$def": "graph_break", "renamed": {}, "dropped": set(), "added": set()},
    "Recompile": {"$def": "recompile", "renamed": {}, "dropped": set(), "added": set()},
    # why: guards, recompile failures, fusion refusals (store/parts/why.py)
    "Guard": {"$def": "guard", "renamed": {}, "dropped": set(), "added": set()},
    "GuardFailure": {"$def": "guard_failure", "renamed": {}, "dropped": set(), "added": set()},
    "NotFused": {"$def": "not_fused", "renamed": {}, "dropped": set(), "added": set()},
    # distributed jobs
    "RankInfo": {"$def": "rank_info", "renamed": {}, "dropped": {"job"}, "added": set()},
    "GraphSplit": {"$def": "graph_split", "renamed": {}, "dropped": set(), "added": set()},
    # higher-order ops' subgraphs
    "Subgraph": {"$def": "subgraph", "renamed": {}, "dropped": set(), "added": set()},
    "Collective": {"$def": "collective", "renamed": {}, "dropped": set(), "added": set()},
    # timing decisions
    "Decision": {"$def": "decision", "renamed": {}, "dropped": set(), "added": set()},
    "DecisionReplay": {"$def": "decision_replay", "renamed": {}, "dropped": set(), "added": set()},
    # a program's own Triton kernels
    "UserKernel": {"$def": "user_kernel", "renamed": {}, "dropped": set(), "added": set()},
    "UserKernelLine": {"$def": "user_kernel_line", "renamed": {}, "dropped": set(), "added": set()},
    # foreach sub-kernels (8.0)
    "KernelPart": {"$def": "kernel_part", "renamed": {}, "dropped": set(), "added": set()},
    "OptimizerParam": {"$def": "optimizer_param", "renamed": {}, "dropped": set(), "added": set()},
    # memory (docs/memory.md): the graph's timeline, and per model line the run's `memory`
    # the wrapper's file in Inductor's cache is this machine's temporary path: not dumped
    "GraphMemory": {"$def": "graph_memory", "renamed": {}, "dropped": {"wrapper_file"}, "added": set()},
    "MemoryBuffer": {"$def": "memory_buffer", "renamed": {}, "dropped": set(), "added": set()},
    "MemoryEvent": {"$def": "memory_event", "renamed": {}, "dropped": set(), "added": set()},
    "EagerMemory": {"$def": "eager_memory", "renamed": {}, "dropped": set(), "added": set()},
    "EagerLine": {"$def": "eager_line", "renamed": {}, "dropped": set(), "added": set()},
    # --memory: dumped as run.memory.measured, each line with the timeline's prediction and model line
    "MeasuredMemory": {"$def": "memory_measured", "renamed": {}, "dropped": set(), "added": set()},
    "MeasuredLine": {"$def": "memory_measured_line", "renamed": {"line": "wrapper_line"}, "dropped": set(),
                     "added": {"predicted_bytes", "buffer", "file", "line", "module"}},
    # numerics (store/parts/numerics.py)
    "NumericsReport": {"$def": "numerics", "renamed": {"outputs": "kernels"}, "dropped": {"seconds"},
                       "added": {"lines"}},
    "NumericsOutput": {"$def": "numerics_output", "renamed": {}, "dropped": {"source"},
                       "added": {"file", "line", "over"}},
    "NumericsDivergence": {"$def": "numerics_divergence", "renamed": {}, "dropped": {"source"},
                           "added": {"file", "line", "code"}},
    "NumericsFix": {"$def": "numerics_fix", "renamed": {}, "dropped": set(), "added": set()},
}
DUMP_FIELD_CHANGES["RunRecord"]["added"] = DUMP_FIELD_CHANGES["RunRecord"]["added"] | {"memory"}
# --memory's measurement is dumped inside run.memory (beside the prediction), as `measured`
DUMP_FIELD_CHANGES["RunRecord"]["dropped"] = DUMP_FIELD_CHANGES["RunRecord"]["dropped"] | {"measured_memory"}
# --aot (docs/aot.md): the package kept in the run's folder; the store keeps its facts in the run's config
DUMP_FIELD_CHANGES["AotPackage"] = {"$def": "aot_package", "renamed": {"local_path": "file"}, "dropped": set(),
                                    "added": set()}

# `# kernel path: /tmp/tmpab12/tmpcd34/ti/cti66....py`: Inductor's cache dir is a fresh
# temporary directory per recording; the last two components name the code itself.
_KERNEL_PATH_COMMENT = re.compile(r"^(\s*# kernel path: ).*?([^/\\\s]+[/\\][^/\\\s]+\.py)\s*$", re.MULTILINE)
_PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")


@dataclass(frozen=True)
class DumpOptions:
    include_volatile: bool = False  # add run.volatile: id, created, timings, peak memory
    absolute_paths: bool = False  # source and generated-file paths absolute on this machine


def dump_run(conn: sqlite3.Connection, run_id: int | None, options: DumpOptions = DumpOptions(),
             store_root: Path | None = None) -> dict:
    """The run as schema-valid JSON data (the latest run when `run_id` is None).

    `store_root` is where the run's files are; by default the directory of the
    connection's database.
    """
    run_id = resolve_run_id(conn, run_id)
    run = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    root = store_root if store_root is not None else _database_dir(conn)
    context = _DumpContext(conn, root, run_id, run["workspace"], options)
    graphs = [context.graph(graph) for graph in conn.execute("SELECT * FROM graphs WHERE run_id = ?", (run_id,))]
    graph_breaks = [
        {"reason": context.portable(row["reason"]), "compile_id": row["compile_id"], "source": context.source(row),
         "explanation": context.portable(row["explanation"]),
         "hints": [context.portable(hint) for hint in json.loads(row["hints_json"])], "url": row["url"],
         "stack": [context.frame(*frame) for frame in json.loads(row["stack_json"])]}
        for row in conn.execute("SELECT * FROM graph_breaks WHERE run_id = ?", (run_id,))
    ]
    failures = why.dump_failures(conn, run_id, context.portable, context.frame)
    recompiles = [
        {"compile_id": row["compile_id"], "reason": context.portable(row["reason"]),
         "failures": failures.get(row["compile_id"], [])}
        for row in conn.execute("SELECT * FROM recompiles WHERE run_id = ?", (run_id,))
    ]
    dumped = {
        "target": run["target"],
        "device": run["device"],
        "mode": run["mode"],
        "dynamic": bool(run["dynamic"]),
        "torch_version": run["torch_version"],
        "triton_version": run["triton_version"],
        "provenance": run["provenance"],
        "execute_max_error": run["execute_max_error"],
        **_config_and_package(json.loads(run["config_json"])),
        "warnings": sorted(context.portable(warning) for warning in json.loads(run["warnings_json"])),
        "coverage": json.loads(run["coverage_json"]),
        "graphs": sorted(graphs, key=lambda graph: graph["key"]),
        "graph_breaks": sorted(graph_breaks, key=_break_order),
        "recompiles": sorted(recompiles, key=lambda rec: (rec["compile_id"], rec["reason"])),
        "rank": _rank(conn, run_id),
        "guards": why.dump_guards(conn, run_id, context.portable, context.frame),
        **decisions.dump_decisions(conn, run_id, context.portable),
        "memory": memory.dump_run_memory(conn, run_id, context.source_path),
        "eager_memory": memory.dump_eager_memory(conn, run_id, context.frame),
        "numerics": numerics.dump_numerics(numerics.read_numerics(conn, run_id)),
    }
    if options.include_volatile:
        dumped["volatile"] = {
            "id": run["id"],
            "created": run["created"],
            "timings": json.loads(run["timings_json"]),
            "peak_memory_mb": run["peak_memory_mb"],
        }
    data = {"schema_version": SCHEMA_VERSION, "kernelscope_version": __version__, "run": dumped}
    profile = dump_profile(conn, run_id)  # device times, only for a run with a trace attached
    if profile is not None:
        data["profile"] = profile
    return data


def dump_json(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def portable_text(text: str, workspace: str) -> str:
    """`text` without what ties it to one machine or one recording: the workspace
    directory (`/home/me/proj/examples/mlp.py` -> `examples/mlp.py`), Inductor's
    temporary cache directory in `# kernel path:` comments, and site-packages
    directories. Hashes of generated files are taken over this text."""
    text = _KERNEL_PATH_COMMENT.sub(lambda match: f"{match.group(1)}{INDUCTOR_CACHE}/{match.group(2)}", text)
    for prefix in _workspace_prefixes(workspace):
        text = text.replace(prefix, "")
    return text


def portable_source_path(stored: str) -> str:
    """A stored source path as the default dump writes it: `<site-packages>/...` for
    installed packages, unchanged otherwise (workspace-relative already, or an
    absolute path outside the workspace and any package directory)."""
    for marker in _PACKAGE_DIRS:
        index = stored.rfind(marker)
        if index >= 0:
            return f"{SITE_PACKAGES}/{stored[index + len(marker):]}"
    return stored


class _DumpContext:
    """Reads one run's graphs, turning stored paths and texts into dumped ones."""

    def __init__(self, conn: sqlite3.Connection, root: Path, run_id: int, workspace: str, options: DumpOptions):
        self.conn = conn
        self.root = root
        self.run_dir = paths.run_dir(run_id)
        self.workspace = workspace
        self.options = options
        self.run_id = run_id
        self._stacks: dict[int, list[dict]] | None = None

    def portable(self, text: str) -> str:
        return text if self.options.absolute_paths else portable_text(text, self.workspace)

    def source(self, row: sqlite3.Row) -> dict | None:
        if row["source_file"] is None:
            return None
        return {"file": self._source_path(row["source_file"]), "line": row["source_line"],
                "function": row["source_function"], "code": row["source_code"]}

    def frame(self, file: str, line: int, function: str, code: str) -> dict:
        return {"file": self._source_path(file), "line": line, "function": function, "code": code}

    def stacks(self) -> dict[int, list[dict]]:
        """Every call stack of the run, by id, its frames outermost first."""
        if self._stacks is None:
            self._stacks = {}
            for row in self.conn.execute(
                "SELECT f.* FROM stack_frames f JOIN stacks s ON s.id = f.stack_id WHERE s.run_id = ? "
                "ORDER BY f.stack_id, f.depth", (self.run_id,),
            ):
                self._stacks.setdefault(row["stack_id"], []).append(
                    self.frame(row["file"], row["line"], row["function"], row["code"]))
        return self._stacks

    def source_path(self, stored: str) -> str:
        """A stored source path as this dump writes it."""
        return self._source_path(stored)

    def _source_path(self, stored: str) -> str:
        if not self.options.absolute_paths:
            return portable_source_path(stored)
        if stored.startswith("<") or PurePosixPath(stored).is_absolute() or os.path.isabs(stored):
            return stored
        return (PurePosixPath(Path(self.workspace).as_posix()) / stored).as_posix()

    def file_ref(self, row: sqlite3.Row) -> dict:
        """`{"path", "portable_sha256", "lines"}` of a generated file, read from disk."""
        stored_path = row["path"]
        on_disk = paths.generated_path(self.root, stored_path)
        text = self.text(row)
        if self.options.absolute_paths:
            path = on_disk.absolute().as_posix()
        else:
            path = stored_path[len(self.run_dir) + 1:] if stored_path.startswith(self.run_dir + "/") else stored_path
        digest = hashlib.sha256(portable_text(text, self.workspace).encode("utf-8")).hexdigest()
        return {"path": path, "portable_sha256": digest, "lines": row["line_count"]}

    def text(self, row: sqlite3.Row) -> str:
        """A generated file's text, read from disk."""
        on_disk = paths.generated_path(self.root, row["path"])
        try:
            return on_disk.read_bytes().decode("utf-8")
        except OSError as error:
            raise StoreError(
                f"the store lost {on_disk} ({error.strerror}): record the run again or delete it "
                "with `kernelscope runs`"
            ) from error

    def graph(self, graph: sqlite3.Row) -> dict:
        conn = self.conn
        graph_id = graph["id"]
        files = {}
        kernel_files = {}
        cpp_loops: dict[int, list[dict]] = {}
        for row in conn.execute("SELECT * FROM files WHERE graph_id = ?", (graph_id,)):
            if row["kind"] == "kernel":
                kernel_files[row["kernel_id"]] = self.file_ref(row)
                if row["path"].endswith(".cpp"):  # a C++ kernel: its loops, read from its code (9.0)
                    cpp_loops[row["kernel_id"]] = [loop.to_dict() for loop in x86.cpp_loops(self.text(row))]
            else:
                files[row["kind"]] = self.file_ref(row)

        from_pre_grad: dict[int, list[str]] = {}
        for row in conn.execute(
            "SELECT l.post_node_id, l.pre_node_name FROM node_links l JOIN nodes n ON n.id = l.post_node_id "
            "WHERE n.graph_id = ?",
            (graph_id,),
        ):
            from_pre_grad.setdefault(row["post_node_id"], []).append(row["pre_node_name"])
        recomputed = dump_recomputes(conn, graph_id)
        nodes: dict[str, list[dict]] = {"pre": [], "post": []}
        for row in conn.execute("SELECT * FROM nodes WHERE graph_id = ?", (graph_id,)):
            nodes[row["stage"]].append({
                "name": row["name"],
                "op": row["op"],
                "target": row["target"],
                "source": self.source(row),
                "source_via": row["source_via"],
                "graph_line": row["graph_line"],
                "from_pre_grad": sorted(from_pre_grad.get(row["id"], [])),
                "stack": self.stacks().get(row["stack_id"], []),
                "module_path": row["module_path"],
                "module_class": row["module_class"],
                "lineage": [{"pass_name": pass_name, "action": action, "node": node}
                            for pass_name, action, node in json.loads(row["lineage_json"] or "[]")],
                **recomputed.get(row["id"], NOT_RECOMPUTED),
            })

        lines = _line_origins(conn, graph_id, self.portable)
        kernel_nodes: dict[int, list[str]] = {}
        for row in conn.execute(
            "SELECT kn.kernel_id, kn.node_name FROM kernel_nodes kn JOIN kernels k ON k.id = kn.kernel_id "
            "WHERE k.graph_id = ?",
            (graph_id,),
        ):
            kernel_nodes.setdefault(row["kernel_id"], []).append(row["node_name"])
        kernel_calls: dict[int, list[int]] = {}
        for row in conn.execute("SELECT kernel_id, wrapper_line FROM kernel_calls WHERE graph_id = ?", (graph_id,)):
            kernel_calls.setdefault(row["kernel_id"], []).append(row["wrapper_line"])
        launches = asm_dump.launches(conn, graph_id, self.portable)
        builds = asm_dump.builds(conn, self.root, self.run_id, graph_id, self.portable, self.options.absolute_paths)
        kernels = []
        for row in conn.execute("SELECT * FROM kernels WHERE graph_id = ?", (graph_id,)):
            inductor_nodes = (None if row["inductor_nodes_json"] is None
                              else sorted(json.loads(row["inductor_nodes_json"])))
            kernels.append({
                "name": row["name"],
                "kind": row["kind"],
                "file": kernel_files.get(row["id"]),
                "nodes": sorted(kernel_nodes.get(row["id"], [])),
                "lines": lines.get(row["id"], []),
                "inductor_nodes": inductor_nodes,
                "wrapper_lines": sorted(kernel_calls.get(row["id"], [])),
                "launch": launches.get(row["id"]),
                "asm": builds.get(row["id"]),
                "cpp_loops": cpp_loops.get(row["id"]) if row["kind"] == "cpp" else None,
                "user": dump_user_kernel(conn, row["id"], self.source),
                "parts": dump_parts(conn, row["id"]),
            })

        node_order = lambda node: (node["graph_line"], node["name"], node["target"])  # noqa: E731
        return {
            "key": graph["key"],
            "compile_id": graph["compile_id"],
            "frame_id": graph["frame_id"],
            "frame_compile_id": graph["frame_compile_id"],
            "attempt": graph["attempt"],
            "kind": graph["kind"],
            "pre_grad_file": files.get("pre_grad"),
            "post_grad_file": files.get("post_grad"),
            "wrapper_file": files.get("wrapper"),
            "wrapper_language": "cpp" if (files.get("wrapper") or {}).get("path", "").endswith(".cpp") else "python",
            "pre_grad_nodes": sorted(nodes["pre"], key=node_order),
            "post_grad_nodes": sorted(nodes["post"], key=node_order),
            "kernels": sorted(kernels, key=lambda kernel: (kernel["name"], kernel["wrapper_lines"])),
            "wrapper_lines": lines.get(None, []),
            "wrapper_attributable": graph["wrapper_attributable"],
            "inductor_mapping": (None if graph["inductor_mapping_json"] is None
                                 else json.loads(graph["inductor_mapping_json"])),
            "split": _split(conn, graph_id),
            "subgraph": dump_subgraph(conn, graph_id),
            "memory": memory.dump_graph_memory(conn, graph_id),
            "collectives": self.collectives(graph_id),
            "not_fused": why.dump_not_fused(conn, graph_id),
        }

    def collectives(self, graph_id: int) -> list[dict]:
        found = []
        for row in self.conn.execute("SELECT * FROM collectives WHERE graph_id = ?", (graph_id,)):
            frame = None if row["frame_file"] is None else self.frame(
                row["frame_file"], row["frame_line"], row["frame_function"], row["frame_code"])
            model = None if row["model_file"] is None else self.frame(
                row["model_file"], row["model_line"], row["model_function"], row["model_code"])
            found.append({
                "node": row["node_name"], "op": row["op"], "role": row["role"],
                "peers": sorted(json.loads(row["peers_json"])),
                "group": row["group_name"], "group_size": row["group_size"], "reduce_op": row["reduce_op"],
                "bytes": row["bytes"], "issued_by": row["issued_by"], "style": row["style"], "frame": frame,
                "redistribute": row["redistribute"], "model_line": model,
            })
        return sorted(found, key=lambda collective: collective["node"])


def _rank(conn: sqlite3.Connection, run_id: int) -> dict | None:
    row = conn.execute("SELECT * FROM run_ranks WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    return {"rank": row["rank"], "world_size": row["world_size"], "backend": row["backend"],
            "local_rank": row["local_rank"]}


def _split(conn: sqlite3.Connection, graph_id: int) -> dict | None:
    row = conn.execute("SELECT * FROM graph_splits WHERE graph_id = ?", (graph_id,)).fetchone()
    if row is None:
        return None
    return {"part": row["part"], "parts": row["parts"], "params": json.loads(row["params_json"]),
            "bucket_bytes": row["bucket_bytes"], "cap_bytes": row["cap_bytes"], "splitter": row["splitter"]}


def _line_origins(conn: sqlite3.Connection, graph_id: int, portable) -> dict[int | None, list[dict]]:
    """The LineOrigins of a graph, keyed by kernel id (None for wrapper lines)."""
    origins: dict[tuple, dict] = {}
    for row in conn.execute("SELECT * FROM generated_lines WHERE graph_id = ? ORDER BY id", (graph_id,)):
        key = (row["kernel_id"], row["origin_index"])
        if key not in origins:
            origins[key] = {"line": row["line"], "text": portable(row["text"]), "reason": row["reason"], "nodes": []}
        if row["node_name"] is not None:
            origins[key]["nodes"].append(row["node_name"])
    by_kernel: dict[int | None, list[dict]] = {}
    for (kernel_id, _), origin in origins.items():
        origin["nodes"].sort()
        by_kernel.setdefault(kernel_id, []).append(origin)
    for origin_list in by_kernel.values():
        origin_list.sort(key=lambda origin: (origin["line"], origin["reason"], origin["nodes"], origin["text"]))
    return by_kernel


def _break_order(brk: dict) -> tuple:
    source = brk["source"] or {"file": "", "line": 0}
    return (brk["compile_id"], source["file"], source["line"], brk["reason"])


def _database_dir(conn: sqlite3.Connection) -> Path:
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            return Path(row[2]).parent
    raise StoreError("the store's database is not a file on disk; pass the store root to dump_run")


def _workspace_prefixes(workspace: str) -> list[str]:
    """`workspace/` as recorded and with symlinks resolved, longest first."""
    if not workspace:
        return []
    forms = {workspace, os.path.realpath(workspace), Path(workspace).as_posix()}
    stripped = {form.rstrip("/\\") for form in forms}
    return sorted({form + sep for form in stripped if form for sep in ("/", os.sep)}, key=len, reverse=True)


# -- the schema -------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaProblem:
    path: str  # JSON path of the offending value, e.g. `$.run.graphs[0].kind`
    message: str


class InvalidDumpError(UserError):
    """A dump does not match the schema; `problems` says where and why."""

    exit_code = 1

    def __init__(self, problems: list[SchemaProblem]):
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"invalid dump at {first.path}: {first.message}{more}")


def _config_and_package(config: dict) -> dict:
    """`run.config`, and `run.aot_package` (`--aot`), which the store keeps in the config."""
    package = config.pop("aot_package", None)
    return {"config": config, "aot_package": package}


@cache
def load_schema(version: str = SCHEMA_VERSION) -> dict:
    """The JSON Schema of dump format `version` (the current one by default)."""
    from importlib import resources  # only validation needs the schema files

    folder, name = SCHEMA_RESOURCES[version]
    resource = resources.files("kernelscope").joinpath(folder).joinpath(name)  # one part per call on Python 3.10
    return json.loads(resource.read_text(encoding="utf-8"))


def schema_problems(data) -> list[SchemaProblem]:
    """Every place `data` breaks the dump schema of its `schema_version` (the current
    schema when that version is unknown), sorted by path; empty when it is valid."""
    from jsonschema import Draft202012Validator  # imported here: only validation needs it

    version = data.get("schema_version") if isinstance(data, dict) else None
    schema = load_schema(version if version in SCHEMA_RESOURCES else SCHEMA_VERSION)
    validator = Draft202012Validator(schema)
    problems = [SchemaProblem(path=error.json_path, message=error.message) for error in validator.iter_errors(data)]
    return sorted(problems, key=lambda problem: (problem.path, problem.message))


def validate_dump(data) -> None:
    """Raise InvalidDumpError unless `data` matches the dump schema."""
    problems = schema_problems(data)
    if problems:
        raise InvalidDumpError(problems)
