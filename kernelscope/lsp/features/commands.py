"""Commands: kernelscope.compile, kernelscope.toggleWatch, kernelscope.runs, kernelscope.selectRun,
kernelscope.buildAsm.

Compiles run in the engine worker from a thread, with `$/progress` and
`kernelscope/status` notifications; a failed compile answers with an error
response, puts an error diagnostic at the user's line and keeps the last good
run shown. Nothing is compiled unless one of these commands asks (or watch mode
is on and a file is saved), and nothing at all when the client said the workspace is
not trusted (`trusted: false`): compile, toggleWatch and buildAsm then answer with an
UNTRUSTED error that says why and how to trust it; runs and selectRun still work.

Below the kernel: `kernelscope.buildAsm` compiles Triton kernels to PTX and SASS in the
engine worker (those of a line, of a kernel file, or the whole shown run), each stored
as soon as it is built; with the `asmAfterCompile` option every compile (and every
watch build) does the same for its new run, in the same worker request.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import sys
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcServerError

from kernelscope.errors import ENV_TRACEBACK_HINT, TargetError, traceback_wanted
from kernelscope.lsp.editor import checked_run_id, recorded_line
from kernelscope.lsp.features import diagnostics
from kernelscope.lsp.lookup import ASM

if TYPE_CHECKING:  # loaded on the first command, after `initialize` (see server.py)
    from kernelscope.lsp.compiler import CompileFailed

log = logging.getLogger(__name__)

COMPILE, TOGGLE_WATCH, RUNS, SELECT_RUN, BUILD_ASM = (
    "kernelscope.compile", "kernelscope.toggleWatch", "kernelscope.runs", "kernelscope.selectRun",
    "kernelscope.buildAsm")
COMPILE_FAILED = -32001  # error code of a compile that failed in the user's code or the worker
BUSY = -32002


def setup(server) -> None:
    @server.command(COMPILE)
    async def compile_command(ls, *args):
        return await run_compile(server, _object_argument(args, COMPILE))

    @server.command(TOGGLE_WATCH)
    async def toggle_watch_command(ls, *args):
        return await toggle_watch(server, _object_argument(args, TOGGLE_WATCH))

    @server.command(RUNS)
    def runs_command(ls, *args):
        return list_runs(server)

    @server.command(SELECT_RUN)
    def select_run_command(ls, *args):
        return select_run(server, args[0] if args else None)

    @server.command(BUILD_ASM)
    async def build_asm_command(ls, *args):
        return await build_asm(server, _object_argument(args, BUILD_ASM))


def _object_argument(args: tuple, command: str) -> dict:
    if not args or args[0] is None:
        return {}
    if not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(f"{command} takes no argument or one object {{target?, uri?}}, got {args[0]!r}")
    return args[0]


def _target(server, argument: dict):
    from kernelscope.lsp.targets import TargetNotFound, resolve_target

    requested, uri = argument.get("target"), argument.get("uri")
    if requested is not None and not isinstance(requested, str) or uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams("'target' and 'uri' must be strings")
    current = server.path_of(uri) if uri else None
    try:
        return resolve_target(server.root, server.options, requested, current, server.text_of(uri) if uri else None)
    except TargetNotFound as error:
        raise JsonRpcInvalidParams(str(error)) from None


async def run_compile(server, argument: dict) -> dict:
    from kernelscope.lsp.compiler import CompileFailed

    server.require_trust("compiling")
    target = _target(server, argument)
    _refuse_when_busy(server)
    loop = asyncio.get_running_loop()
    token = await _begin_progress(server, "kernelscope: compiling", target.spec)
    server.set_state("compiling", f"compiling {target.spec} ({target.device})", target=target.spec)
    on_phase, on_restart = _worker_callbacks(server, loop, token)
    compile_ = functools.partial(server.compiler.compile, target, server.store_dir, server.options.python,
                                 server.options.compile_timeout, on_phase, on_restart, server.options.memory_limit,
                                 server.options.asm_after_compile, server.options.decisions)
    try:
        result = await loop.run_in_executor(None, compile_)
    except CompileFailed as failure:
        _end_progress(server, token, f"failed: {failure}")
        record_failure(server, failure, target.spec)
        raise JsonRpcServerError(f"kernelscope: compile of {target.spec} failed: {failure}", COMPILE_FAILED,
                                 data={"kind": failure.kind, "file": failure.file, "line": failure.line,
                                       "message": failure.message}) from None
    _end_progress(server, token, f"run {result.run_id}: {result.kernels} kernels in {result.seconds:.1f}s")
    record_success(server)
    server.runs_changed()
    server.set_state("idle", f"run {result.run_id}: {result.graphs} graphs, {result.kernels} kernels",
                     server.provenance.shown_run_id(), target.spec)
    if result.decisions:
        server.log("\n".join([f"run {result.run_id}:", *result.decisions.get("lines", [])]), types.MessageType.Info)
    return {"runId": result.run_id, "decisions": result.decisions}


def record_failure(server, failure: CompileFailed, target_spec: str) -> None:
    """An error diagnostic at the failing line (or the target file) and a visible message."""
    file = failure.file or _target_file(server, target_spec)
    if file:
        server.compile_problems[file] = [diagnostics.compile_problem(file, failure.line, str(failure.message),
                                                                     failure.kind)]
    kept = server.provenance.latest_run_id()
    note = f"run {kept} stays shown" if kept is not None else "no run recorded yet"
    server.set_state("failed", f"{failure} ({note})", target=target_spec)
    if traceback_wanted() and failure.traceback:
        server.log(f"compile of {target_spec} failed:\n{failure.traceback}", types.MessageType.Error)
        how = "full error in the log"
    else:
        how = ENV_TRACEBACK_HINT
    server.show(f"compile failed: {failure} ({note}; {how})", types.MessageType.Error)
    diagnostics.republish_all(server)


def record_success(server) -> None:
    server.compile_problems.clear()


def _target_file(server, spec: str) -> str | None:
    path = server.root / spec.rpartition(":")[0]
    return str(path.resolve()) if path.is_file() else None


async def toggle_watch(server, argument: dict) -> dict:
    server.require_trust("watch mode (compiling on save)")
    loop = asyncio.get_running_loop()
    if server.watch_session is not None:
        session, server.watch_session = server.watch_session, None
        await loop.run_in_executor(None, session.stop)
        server.set_state("idle", "watch stopped")
        return {"watching": False}
    target = _target(server, argument)
    from kernelscope.watch.session import WatchOptions, WatchSession  # needs watchdog

    options = WatchOptions(
        target=target.spec, store=server.store_dir, workspace=server.root, device=target.device,
        train=target.train, dynamic=target.dynamic, build_timeout=server.options.compile_timeout,
        python=server.options.python or sys.executable, memory_limit_mb=server.options.memory_limit,
        asm=server.options.asm_after_compile, decisions=server.options.decisions,
    )
    try:
        session = WatchSession(options, on_event=lambda event: server.call_soon(on_watch_event, server, event))
    except TargetError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    server.watch_session = session
    session.start()
    server.set_state("watching", f"watching {target.spec}", target=target.spec)
    return {"watching": True}


def on_watch_event(server, event) -> None:
    from kernelscope.lsp.compiler import CompileFailed
    from kernelscope.watch import events

    if isinstance(event, events.BuildStarted):
        server.set_state("compiling", f"build {event.build}", target=server.state.get("target"))
    elif isinstance(event, events.BuildFinished):
        record_success(server)
        server.runs_changed()
        server.set_state("watching", f"run {event.run_id}: {event.graphs} graphs, {event.kernels} kernels",
                         server.provenance.shown_run_id())
    elif isinstance(event, events.BuildFailed):
        record_failure(server, CompileFailed(event.kind, event.message, event.file, event.line),
                       server.state.get("target") or "")
        if server.watch_session is not None:
            server.set_state("watching", f"build {event.build} failed: {event.message}")
    elif isinstance(event, events.WorkerRestarted):
        server.show(f"engine worker restarted (pid {event.pid}) after: {event.reason}", types.MessageType.Warning)
    elif isinstance(event, events.WorkerReady) and event.problem:
        server.show(f"engine worker: {event.problem}", types.MessageType.Error)
    elif isinstance(event, events.WorkerOutput):
        server.log(f"[engine worker] {event.line}")


def list_runs(server) -> dict:
    store = server.provenance.store()
    if store is None:
        return {"runs": []}
    shown = server.provenance.shown_run_id()
    runs = store.runs()
    ranks = store.ranks_of_runs([run.id for run in runs])  # the runs of a distributed job's ranks
    return {"runs": [
        {"id": run.id, "target": run.target, "device": run.device, "mode": run.mode, "created": run.created,
         "graphs": run.graph_count, "kernels": run.kernel_count, "selected": run.id == shown,
         "rank": _rank(ranks.get(run.id))}
        for run in runs
    ]}


def _rank(rank) -> dict | None:
    if rank is None:
        return None
    return {"rank": rank.rank, "worldSize": rank.world_size, "backend": rank.backend, "job": rank.job}


async def build_asm(server, argument: dict) -> dict:
    """Compile Triton kernels below Triton (PTX, SASS) in the engine worker: those of a line
    (`uri` and 0-based `line`: a model line's kernels, a kernel file's kernel), of a file
    (`uri`), or of run `runId` (else the shown run). Answers `{runId, asked, built, failed,
    seconds}`; kernels built already are not built again (`asked` 0: nothing to do)."""
    from kernelscope.lsp.compiler import CompileFailed

    server.require_trust("compiling kernels to PTX and SASS")
    run_id, kernel_files = _asm_request(server, argument)
    pending = server.provenance.run(run_id).asm_unbuilt(kernel_files) if kernel_files != [] else []
    if not pending:
        return {"runId": run_id, "asked": 0, "built": 0, "failed": [], "seconds": 0.0}
    _refuse_when_busy(server)
    loop = asyncio.get_running_loop()
    what = f"{len(pending)} kernel(s) of run {run_id}"
    token = await _begin_progress(server, "kernelscope: compiling to PTX and SASS", what)
    previous = server.state.get("state", "idle")
    server.set_state("compiling", f"compiling {what} to PTX and SASS")
    on_phase, on_restart = _worker_callbacks(server, loop, token)
    build = functools.partial(server.compiler.build_asm, server.store_dir, run_id, kernel_files,
                              server.options.python, server.options.compile_timeout, on_phase, on_restart,
                              server.options.memory_limit, server.options.device_target)
    try:
        summary = await loop.run_in_executor(None, build)
    except CompileFailed as failure:
        _end_progress(server, token, f"failed: {failure}")
        server.set_state(previous if previous != "compiling" else "idle",
                         f"compiling to PTX and SASS failed: {failure}")
        raise JsonRpcServerError(f"kernelscope: compiling {what} to PTX and SASS failed: {failure}",
                                 COMPILE_FAILED, data={"kind": failure.kind, "message": failure.message}) from None
    failed = f", {len(summary['failed'])} failed" if summary["failed"] else ""
    _end_progress(server, token, f"{summary['built']} kernel(s) built in {summary['seconds']:.1f}s{failed}")
    server.runs_changed()  # lenses, hints and hovers show the facts now
    server.set_state(previous if previous != "compiling" else "idle",
                     f"run {run_id}: {summary['built']} kernel(s) compiled to PTX and SASS{failed}")
    return {"runId": run_id, "asked": len(pending), **summary}


def _asm_request(server, argument: dict) -> tuple[int, list[str] | None]:
    """(run id, stored kernel files or None for the whole run) of a buildAsm argument."""
    uri, line, run_id = argument.get("uri"), argument.get("line"), argument.get("runId")
    if uri is not None and not isinstance(uri, str) or line is not None and (isinstance(line, bool) or
                                                                             not isinstance(line, int) or line < 0):
        raise JsonRpcInvalidParams("kernelscope.buildAsm takes {uri?, line? (0-based), runId?}")
    checked_run_id(run_id)
    if uri is None:
        run_id = run_id if run_id is not None else server.provenance.shown_run_id()
        if run_id is None or server.provenance.run_summary(run_id) is None:
            raise JsonRpcInvalidParams("no run to build: run kernelscope.compile first" if run_id is None
                                       else f"there is no run {run_id} in {server.store_dir}")
        return run_id, None
    document = server.document(uri)
    if document is None:
        raise JsonRpcInvalidParams(f"no run of {server.store_dir} knows {uri}")
    view = server.provenance.run(document.run_id)
    if document.location.kind == ASM:
        ref = view.asm_file(document.location)
        return document.run_id, [ref.kernel_file] if ref is not None else []
    if document.location.kind == "kernel":
        return document.run_id, [document.location.path]
    if document.is_source and line is not None:
        from kernelscope.lsp.below import kernel_hits

        recorded = recorded_line(document, types.Position(line=line, character=0))
        if recorded is None:
            return document.run_id, []
        answer = view.source_line(document.location, recorded)
        return document.run_id, [hit.kernel.file for hit in kernel_hits(answer)]
    return document.run_id, None


def select_run(server, run_id) -> dict:
    if run_id is not None and (isinstance(run_id, bool) or not isinstance(run_id, int)):
        raise JsonRpcInvalidParams(f"kernelscope.selectRun takes a run id or null, got {run_id!r}")
    if run_id is not None:
        if server.provenance.store() is None or server.provenance.run_summary(run_id) is None:
            raise JsonRpcInvalidParams(f"there is no run {run_id} in {server.store_dir}")
    server.provenance.selected_run = run_id
    server.runs_changed()
    shown = server.provenance.shown_run_id()
    server.set_state(server.state["state"], f"showing run {shown}" + (" (latest)" if run_id is None else ""), shown)
    return {"runId": run_id}


def _refuse_when_busy(server) -> None:
    if server.compiler.busy:
        raise JsonRpcServerError("a compile is already running: wait for it to finish", BUSY)


def _worker_callbacks(server, loop, token):
    """(on_phase, on_restart) for a worker request run in a thread: the worker's phases
    become `$/progress` reports, a restarted worker a warning."""
    def on_phase(phase: str, detail: str) -> None:
        loop.call_soon_threadsafe(_report_progress, server, token, f"{phase}: {detail}" if detail else phase)

    def on_restart(message: str) -> None:
        loop.call_soon_threadsafe(server.show, message, types.MessageType.Warning)

    return on_phase, on_restart


async def _begin_progress(server, title: str, message: str):
    window = server.client_capabilities.window
    if window is None or not window.work_done_progress:
        return None
    token = f"kernelscope-{uuid.uuid4().hex[:8]}"
    try:
        await server.work_done_progress.create_async(token)
    except Exception:  # noqa: BLE001 - the client refused: compile without progress
        log.debug("client refused a progress token", exc_info=True)
        return None
    server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message))
    return token


def _report_progress(server, token, message: str) -> None:
    if token is not None:
        server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))


def _end_progress(server, token, message: str) -> None:
    if token is not None:
        server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
