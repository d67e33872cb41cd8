"""The engine worker: `python -m kernelscope.engine.worker [--preload-device DEVICE]`.

A long-lived subprocess in the user's interpreter that keeps torch imported, so
a recompile after an edit costs what Inductor needs for the graph and not a
fresh `import torch`. Front ends (watch mode, the language server, the TUI)
never import torch; they drive this process with `kernelscope.watch.worker_client`.

Protocol: JSON-RPC 2.0, one JSON message per line (UTF-8, `\\n`-terminated).
Requests arrive on stdin, responses and notifications leave on stdout. At start
the worker moves its protocol streams to private file descriptors and points fd 1
at stderr and fd 0 at /dev/null, so whatever the user's code prints (Python or
C) goes to stderr and cannot corrupt the protocol. One request at a time.

Methods
- `initialize {}` -> `{protocol, pid, python, torch, import_seconds, preload_error}`
- `record {target | script, args?, store, workspace?, keep?, options?: {device, train, dynamic, execute,
  asm, decisions, world_size, rank, job}}`
  -> `{run_id, target, device, mode, graphs, kernels, warnings, files, pruned, timings, asm, decisions}`
  `target` is a factory (`PATH.py:FACTORY`, recorded as `kernelscope compile` does); `script`
  instead is a whole program (`PATH.py`, run as `__main__` with `args` as its argv, recorded
  as `kernelscope run` does: no `train`/`dynamic`, the script decides; `sys.exit(0)` is a
  normal end, another status a failure at the line that exited). `world_size` (with `rank`,
  `job`) records one rank of a job on the fake process group, as `--world-size` does.
  `files` are the real paths of the workspace files the target imported
  (read after the factory or script ran; the target file first), `pruned` the run ids
  retention removed, and `timings` seconds per phase:
  `import` (torch if not yet imported, the user's modules, the factory),
  `capture`, `lower`, `codegen`, `store`, `total` (and `asm`). With `options.asm` the run's
  Triton kernels are compiled below Triton once the run is stored (as `asm` below does):
  `asm` is that build's summary, else null. `options.decisions` is what `--decisions`
  takes (a run id of the store, a dump or decisions file, `none`); absent or null: the
  workspace's default (kernelscope.decisions.sources). The result's `decisions` is the
  run's timing decisions counted, the guessed ones listed (null when it made none).
- `asm {store, run_id, kernel_files?}` -> `{built, failed, seconds, kernel_seconds}`: compile
  the run's Triton kernels (those of `kernel_files`, stored kernel paths, when given) below
  Triton — TTIR, TTGIR, PTX, SASS, facts — and store each that has no build yet
  (engine/asm_build.py); `phase {phase: "asm", detail}` notifications per kernel.
- `shutdown {}` -> `null`, then the worker exits. End of stdin also ends it.

While `record` runs the worker sends notifications `phase {phase, detail}`.

Errors: `{code, message, data}`. For a failed recording `code` is the exit code
the CLI would use (2 usage, 3 target, 4 compile, 5 store) and `data` is
`{kind, file, line, column, message, files, traceback}`: `kind` is one of
`syntax`, `target`, `compile`, `store`, `usage`, `internal`; `file`/`line`
locate the problem in the user's code when known (absolute path; null
otherwise); `message` is one line without the location; `files` the workspace
files imported before the failure (keep watching them); `traceback` the whole
chain behind the error (an Inductor exception, ...), shown on request only. Protocol problems use the
JSON-RPC codes (-32700 parse error, -32600 invalid request, -32601 unknown
method, -32602 invalid params, -32603 internal error). The worker survives
every failed request; a crash or kill ends the process and the client restarts it.

`--memory-limit-mb N` caps the worker's address space (RLIMIT_AS): user code
that allocates without end gets a MemoryError (reported like any exception)
or, where a C++ allocator aborts, ends only the worker.
"""
from __future__ import annotations

import argparse
import json
import linecache
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kernelscope.engine.worker_failures import describe_failure, out_of_memory
from kernelscope.errors import TargetError, UserError

PROTOCOL_VERSION = 1
_MEMORY_LIMIT_MB: int | None = None  # set by --memory-limit-mb

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603,
)

# "path/to/file.py:12: message" or "path/to/file.py: message", as UserErrors are written.


class RequestFailed(Exception):
    """Answered as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: dict | None = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Channel:
    """The protocol's two streams, on file descriptors the user's code does not use."""

    def __init__(self, incoming: TextIO, outgoing: TextIO):
        self.incoming, self.outgoing = incoming, outgoing

    @classmethod
    def take_over_stdio(cls) -> Channel:
        incoming = os.fdopen(os.dup(0), "r", encoding="utf-8", newline="\n")
        outgoing = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
        sys.stdout.flush()
        os.dup2(2, 1)  # the user's prints (Python and C) now go to stderr
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # input() in user code sees end of file, not our requests
        os.close(devnull)
        sys.stdout.reconfigure(line_buffering=True)
        return cls(incoming, outgoing)

    def read(self) -> str | None:
        line = self.incoming.readline()
        return line if line else None

    def send(self, message: dict) -> None:
        self.outgoing.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.outgoing.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


class Worker:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.import_seconds = 0.0
        self.preload_error: str | None = None
        self._imports = None  # WorkspaceImports of the last record request
        self._running = True

    # -- serving ---------------------------------------------------------------

    def serve(self) -> int:
        while self._running:
            line = self.channel.read()
            if line is None:
                break
            if line.strip():
                self._answer(line)
        return 0

    def _answer(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError as error:
            self._send_error(None, PARSE_ERROR, f"not JSON: {error}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" \
                or not isinstance(message.get("method"), str):
            self._send_error(message.get("id") if isinstance(message, dict) else None,
                             INVALID_REQUEST, "expected a JSON-RPC 2.0 request object")
            return
        request_id, method = message.get("id"), message["method"]
        params = message.get("params") or {}
        handler = {"initialize": self.initialize, "record": self.record, "asm": self.asm,
                   "shutdown": self.shutdown}.get(method)
        try:
            if handler is None:
                raise RequestFailed(METHOD_NOT_FOUND, f"unknown method {method!r}")
            if not isinstance(params, dict):
                raise RequestFailed(INVALID_PARAMS, "params must be an object")
            result = handler(params)
        except RequestFailed as failure:
            self._send_error(request_id, failure.code, failure.message, failure.data)
            return
        except BaseException as error:  # noqa: BLE001 - the worker outlives any request
            if isinstance(error, KeyboardInterrupt):
                raise
            self._send_error(request_id, INTERNAL_ERROR, f"{type(error).__name__}: {error}",
                             {"kind": "internal", "traceback": traceback.format_exc()})
            return
        if request_id is not None:
            self.channel.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _send_error(self, request_id, code: int, message: str, data: dict | None = None) -> None:
        error = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.channel.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    # -- methods -------------------------------------------------------------------

    def preload(self, device: str, execute: bool) -> None:
        """Import torch and Inductor before the first request (and report a failure then)."""
        from kernelscope.engine.record_options import RecordOptions
        from kernelscope.engine.recording import import_torch

        try:
            self.import_seconds = import_torch(RecordOptions(device=device, execute=execute))
        except UserError as error:
            self.preload_error = str(error)

    def initialize(self, params: dict) -> dict:
        torch = sys.modules.get("torch")
        return {
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "python": sys.executable,
            "torch": getattr(torch, "__version__", None),
            "import_seconds": round(self.import_seconds, 4),
            "preload_error": self.preload_error,
        }

    def shutdown(self, params: dict) -> None:
        self._running = False
        return None

    def record(self, params: dict) -> dict:
        from kernelscope.engine import targets

        target, store = _record_target(params), params.get("store")
        if not isinstance(store, str):
            raise RequestFailed(INVALID_PARAMS, "record needs 'store' (a directory)")
        workspace = Path(params.get("workspace") or os.getcwd()).resolve()
        keep = params.get("keep")
        if keep is not None and (not isinstance(keep, int) or keep < 1):
            raise RequestFailed(INVALID_PARAMS, f"'keep' must be a whole number from 1, got {keep!r}")
        target_file = Path(target.script or target.factory.rpartition(":")[0] or target.factory).resolve()
        imports = targets.WorkspaceImports([workspace, target_file.parent], excluded=[Path(store)])
        self._switch_imports(imports)
        imports.forget()
        _forget_dynamo_imports()
        linecache.clearcache()  # stack traces of the new graph must show the edited source
        started = time.perf_counter()
        try:
            run = self._record(target, params.get("options") or {}, workspace, Path(store))
        except BaseException as error:  # noqa: BLE001 - reported with the user's file:line
            if isinstance(error, KeyboardInterrupt):
                raise
            raise self._failure(error, imports, target_file) from error
        recorded = time.perf_counter()
        files = _with_target_first(imports.files(), target_file)
        phases = {phase: run.timings.get(phase, 0.0) for phase in ("import", "capture", "lower", "codegen")}
        # What the recorder does not time itself (loading the user's modules, calling the factory).
        phases["import"] += max(recorded - started - sum(phases.values()), 0.0)
        run.timings = {**run.timings, **{k: round(v, 4) for k, v in phases.items()}, "store": 0.0}
        run_id, pruned = self._store(run, store, keep)
        stored = time.perf_counter()
        timings = {**run.timings, "store": round(stored - recorded, 4), "total": round(stored - started, 4)}
        asm = None
        if (params.get("options") or {}).get("asm"):  # the run's kernels below Triton, right after it is stored
            asm = self.asm({"store": store, "run_id": run_id})
            timings["asm"] = asm["seconds"]
            timings["total"] = round(time.perf_counter() - started, 4)
        return {
            "run_id": run_id,
            "target": run.target,
            "device": run.device,
            "mode": run.mode,
            "graphs": len(run.graphs),
            "kernels": sum(1 for graph in run.graphs for kernel in graph.kernels if kernel.kind != "extern"),
            "warnings": run.warnings,
            "files": files,
            "pruned": pruned,
            "timings": timings,
            "asm": asm,
            "decisions": _decisions_summary(run, run_id),
        }

    def asm(self, params: dict) -> dict:
        from kernelscope.engine.asm_build import build_run_asm
        from kernelscope.store import StoreBackend

        store, run_id, files = params.get("store"), params.get("run_id"), params.get("kernel_files")
        if not isinstance(store, str) or not isinstance(run_id, int) or \
                (files is not None and not (isinstance(files, list) and all(isinstance(f, str) for f in files))):
            raise RequestFailed(INVALID_PARAMS, "asm needs 'store' (a directory), 'run_id' (a number) and "
                                "optionally 'kernel_files' (stored kernel paths)")
        try:
            with StoreBackend(store, create=False) as opened:
                kernel_ids = None if files is None else list(opened.asm.kernel_ids_of_files(files).values())
                summary = build_run_asm(opened, run_id, kernel_ids, on_kernel=lambda done, total, name:
                                        self.channel.notify("phase", {"phase": "asm",
                                                                      "detail": f"{done + 1}/{total} {name}"}))
        except UserError as error:
            raise RequestFailed(error.exit_code, str(error), {"kind": "store", "message": str(error)}) from error
        return summary.to_dict()

    def _switch_imports(self, imports) -> None:
        if self._imports is not None:
            self._imports.uninstall()
        imports.install()
        self._imports = imports

    def _record(self, target: RecordTarget, options: dict, workspace: Path, store: Path):
        from kernelscope.decisions import resolve
        from kernelscope.engine.record_options import RecordOptions
        from kernelscope.engine.recorder import record_factory, record_script

        _check_record_options(options, target)
        spec = options.get("decisions")
        store = store if store.is_absolute() else workspace / store
        record_options = RecordOptions(
            device=options.get("device", "auto"),
            train=bool(options.get("train", False)),
            dynamic=bool(options.get("dynamic", False)),
            execute=bool(options.get("execute", False)),
            workspace=workspace,
            world_size=options.get("world_size"),
            rank=options.get("rank") or 0,
            job=options.get("job"),
            on_phase=lambda phase, detail: self.channel.notify("phase", {"phase": phase, "detail": detail}),
            decisions=resolve(spec, store, workspace),
        )
        if target.script is not None:  # sys.exit: targets.run_script tells a normal end from a failure
            return record_script(Path(target.script).resolve(), target.args, record_options)
        try:
            return record_factory(target.factory, record_options)
        except SystemExit as exit_:
            raise TargetError(f"{target.factory}: the model called sys.exit({exit_.code!r})") from exit_

    def _store(self, run, store: str, keep: int | None) -> tuple[int, list[int]]:
        from kernelscope.store import StoreBackend

        with StoreBackend(store, create=True) as opened:
            run_id = opened.write_run(run)
            pruned = opened.prune_runs(run.target, keep) if keep else []
        return run_id, pruned

    def _failure(self, error: BaseException, imports, target_file: Path) -> RequestFailed:
        if isinstance(error, RequestFailed):
            return error
        data = describe_failure(error, imports)
        data["traceback"] = "".join(traceback.format_exception(error))
        files = imports.files()
        if data["file"] and imports.owns(data["file"]) and os.path.isfile(data["file"]):
            files.append(os.path.realpath(data["file"]))  # e.g. a module that failed to import
        data["files"] = _with_target_first(sorted(set(files)), target_file)
        if _MEMORY_LIMIT_MB and out_of_memory(error):
            data["kind"] = "memory"
            data["message"] += (f" (the engine worker's memory limit, {_MEMORY_LIMIT_MB} MB, was reached: "
                                "raise it with --memory-limit / the memoryLimit option)")
        code = error.exit_code if isinstance(error, UserError) else INTERNAL_ERROR
        where = f"{data['file']}:{data['line']}: " if data["file"] and data["line"] else \
            f"{data['file']}: " if data["file"] else ""
        return RequestFailed(code, where + data["message"], data)


@dataclass
class RecordTarget:
    """What a `record` request records: a factory spec, or a script and its argv."""

    factory: str = ""
    script: str | None = None
    args: list[str] = field(default_factory=list)


def _record_target(params: dict) -> RecordTarget:
    """The request's `target` (PATH.py:FACTORY) or `script` (PATH.py) and `args`; INVALID_PARAMS otherwise."""
    target, script, args = params.get("target"), params.get("script"), params.get("args")
    if (target is None) == (script is None) or not isinstance(target if script is None else script, str):
        raise RequestFailed(INVALID_PARAMS, "record needs one of 'target' (PATH.py:FACTORY) or 'script' (PATH.py)")
    if script is None:
        if args is not None:
            raise RequestFailed(INVALID_PARAMS, "'args' are a script's argv: only with 'script', not 'target'")
        return RecordTarget(factory=target)
    if args is not None and not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
        raise RequestFailed(INVALID_PARAMS, f"'args' must be a list of strings (the script's argv), got {args!r}")
    return RecordTarget(script=script, args=list(args or []))


def _check_record_options(options: dict, target: RecordTarget) -> None:
    """INVALID_PARAMS for an unknown option, one of the wrong type, or one the target's kind does not take."""
    unknown = set(options) - {"device", "train", "dynamic", "execute", "asm", "decisions", "world_size", "rank", "job"}
    if unknown:
        raise RequestFailed(INVALID_PARAMS, f"unknown record options: {', '.join(sorted(unknown))}")
    spec = options.get("decisions")
    if spec is not None and not isinstance(spec, str):
        raise RequestFailed(INVALID_PARAMS, f"'decisions' must be a run id, a file or 'none', got {spec!r}")
    world_size, rank, job = options.get("world_size"), options.get("rank"), options.get("job")
    if world_size is not None and (type(world_size) is not int or world_size < 1):
        raise RequestFailed(INVALID_PARAMS, f"'world_size' must be a whole number from 1, got {world_size!r}")
    if rank is not None and (type(rank) is not int or rank < 0):
        raise RequestFailed(INVALID_PARAMS, f"'rank' must be a whole number from 0, got {rank!r}")
    if job is not None and not isinstance(job, str):
        raise RequestFailed(INVALID_PARAMS, f"'job' must be a name, got {job!r}")
    if target.script is not None and (options.get("train") or options.get("dynamic")):
        raise RequestFailed(INVALID_PARAMS, "'train' and 'dynamic' are for a factory: a script decides for "
                            "itself what it compiles")


def _decisions_summary(run, run_id: int) -> dict | None:
    """The run's timing decisions as a front end shows them (counts, the guessed ones)."""
    if not run.decisions and run.replay is None:
        return None
    from kernelscope.render import decisions as decisions_view

    return {**decisions_view.summary_data(run.decisions, run.replay),
            "lines": decisions_view.summary_lines(run.decisions, run.replay, run_id)}


def _forget_dynamo_imports() -> None:
    """Dynamo caches `importlib.import_module(name)` for the life of the process
    (`torch._dynamo.symbolic_convert._import_module`, torch 2.11-2.13); after the
    user's modules are re-imported it would hand back the old module objects and
    guards on them fail. Absent on other versions: nothing to clear then."""
    convert = sys.modules.get("torch._dynamo.symbolic_convert")
    cached_import = getattr(convert, "_import_module", None)
    if callable(getattr(cached_import, "cache_clear", None)):
        cached_import.cache_clear()


def _with_target_first(files: list[str], target_file: Path) -> list[str]:
    target = os.path.realpath(target_file)
    return [target] + [file for file in files if file != target]


def limit_memory(megabytes: int) -> None:
    """Lower RLIMIT_AS to `megabytes` (never raise it above the hard limit)."""
    import resource

    global _MEMORY_LIMIT_MB
    _MEMORY_LIMIT_MB = megabytes
    wanted = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelscope.engine.worker",
        description="kernelscope's engine worker: JSON-RPC over stdio (see the module docstring).",
    )
    parser.add_argument("--preload-device", metavar="DEVICE",
                        help="import torch for this device target before serving "
                             "(auto, cuda, virtual-cuda, cpu-triton, cpu)")
    parser.add_argument("--execute", action="store_true",
                        help="with --preload-device cpu-triton: prepare Triton's interpreter")
    parser.add_argument("--memory-limit-mb", type=int, metavar="MB",
                        help="cap this process's address space (RLIMIT_AS): runaway allocations in user "
                             "code fail with MemoryError instead of taking the machine's memory")
    args = parser.parse_args(argv)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # compiles stay in-process
    if args.memory_limit_mb:
        limit_memory(args.memory_limit_mb)
    worker = Worker(Channel.take_over_stdio())
    if args.preload_device:
        worker.preload(args.preload_device, args.execute)
    return worker.serve()


if __name__ == "__main__":
    sys.exit(main())
