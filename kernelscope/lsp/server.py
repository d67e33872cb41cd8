"""Create the language server and register its features.

The server object every feature gets: options and trust (`require_trust`), the store as
the features see it (`provenance`), the engine worker (`compiler`), the open documents,
the `kernelscope/status` notification (`set_state`) and the refresh after new runs
(`on_runs_changed`, `runs_changed`; the store is polled for runs others write).

Each module listed in `kernelscope.lsp.features.FEATURES` registers its handlers with
`setup(server)`. A feature whose handler fails logs the error and answers that request
with an LSP error; the other features, and the server, go on. Requests whose parameters
do not parse get an InvalidParams error response (pygls alone would drop them).

Start-up: the server answers `initialize` before it loads the store side
(`kernelscope.store`, `provenance`, `render`, the engine worker client).
`provenance` and `compiler` are made on first use, and the feature modules import
those modules inside their handlers; the `initialized` notification that follows
the answer loads them (it reads the latest run). `kernelscope lsp` imports this
module with `attrs_cache.compiled_once()` (lsprotocol's classes without compiling
their methods again) and then freezes the imported objects out of the collector.
"""
from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from kernelscope import __version__
from kernelscope.errors import ENV_TRACEBACK_HINT, OneLineLogs, full_error, one_line, traceback_wanted
from kernelscope.lsp.features import FEATURES
from kernelscope.lsp.options import OptionsError, ServerOptions

if TYPE_CHECKING:
    from kernelscope.lsp.compiler import Compiler
    from kernelscope.lsp.provenance import Document, Provenance

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5  # how often the store is checked for runs written by others (the CLI, a watch)
UNTRUSTED = -32003  # error code of a compile, watch or PTX/SASS build refused in an untrusted workspace
UNTRUSTED_WHY = (
    "this workspace is not trusted, so kernelscope compiles nothing in it: a compile runs the "
    "workspace's code. Recorded runs can still be browsed (hovers, definitions, lenses, the run "
    "overview). To compile, trust the workspace (VS Code: \"Workspaces: Manage Workspace Trust\"); "
    "the server then restarts in trusted mode")


class _Rejected:
    """A request answered with an error while it was parsed; nothing to dispatch."""

    jsonrpc = None


class KernelscopeProtocol(LanguageServerProtocol):
    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], None, JsonRpcInvalidParams(
                    f"invalid parameters for {data['method']}: {error.message or 'they do not match the protocol'}"
                ).to_response_error())
                return _Rejected()
            raise

    def handle_message(self, message):
        if isinstance(message, _Rejected):
            return
        super().handle_message(message)

    def _serialize_message(self, data):
        """A response's envelope by hand: cattrs would walk the whole result, and our big
        answers (a model line's references: a thousand locations) are plain JSON already,
        which that walk made 10 times slower to send. Typed objects inside the result
        still reach cattrs one by one (json.dumps calls this for each)."""
        if _is_result(data):
            return {"jsonrpc": data.jsonrpc, "id": data.id, "result": data.result}
        return super()._serialize_message(data)


def _is_result(data) -> bool:
    """A successful response message (pygls' generic one or lsprotocol's per-method ones)."""
    fields = getattr(type(data), "__attrs_attrs__", None)
    return fields is not None and {field.name for field in fields} == {"id", "jsonrpc", "result"}


class KernelscopeServer(LanguageServer):
    def __init__(self):
        super().__init__("kernelscope", __version__, protocol_cls=KernelscopeProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full, max_workers=4)
        self.options = ServerOptions()
        self.root = Path.cwd()
        self._provenance: Provenance | None = None  # made on first use: see `provenance`
        self._compiler: Compiler | None = None
        self._lazy_lock = threading.Lock()
        self.watch_session = None  # a kernelscope.watch.WatchSession while watching
        self.compile_problems: dict[str, list[types.Diagnostic]] = {}  # file path -> diagnostics
        self.state = {"state": "idle", "runId": None, "message": "", "target": None, "rank": None, "trusted": True}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.failed_features: dict[str, str] = {}
        self._seen_runs: tuple | None = None
        self._monitor_stop = threading.Event()
        self._on_runs_changed: list = []  # callbacks(server), registered by features
        self.document_listeners: list = []  # callbacks(server, uri, event): open, change, save, close
        self.map_hint_shown = False  # said once that a store recorded elsewhere needs the pathMap option

    # -- configuration ------------------------------------------------------------------

    def configure(self, root: Path, raw_options) -> None:
        self.root = root
        was_trusted = self.options.trusted
        self.options = ServerOptions.from_dict(raw_options, self.options)
        if was_trusted and not self.options.trusted:
            self.stop_compiling()  # trust taken back: no watch session, no engine worker
        if self._provenance is not None:
            self._provenance.workspace = root
            self._provenance.set_store_dir(self.store_dir, self.options.path_map)
        if self._compiler is not None:
            self._compiler.workspace = root

    @property
    def provenance(self) -> Provenance:
        """The store as the features see it; made (and `kernelscope.store` imported) on
        first use, which is after the `initialize` answer."""
        if self._provenance is None:
            with self._lazy_lock:
                if self._provenance is None:
                    from kernelscope.lsp.provenance import Provenance

                    self._provenance = Provenance(self.root, self.store_dir, self.options.path_map)
        return self._provenance

    def store_damage_behind(self, error: BaseException):
        """The store's own error when `error` came from values a crafted or damaged store
        holds (StoreBackend.damage_behind), else None; never raises."""
        try:
            store = self.provenance.store() if self._provenance is not None else None
            return store.damage_behind(error) if store is not None else None
        except Exception:  # noqa: BLE001 - no readable store: the failure stays what it was
            return None

    def require_trust(self, what: str) -> None:
        """Refuse `what` (a compile, watch mode, a PTX/SASS build) with an error response that
        says why, when the client said the workspace is not trusted."""
        if not self.options.trusted:
            raise JsonRpcServerError(f"kernelscope: {what} refused: {UNTRUSTED_WHY}.", UNTRUSTED,
                                     data={"kind": "untrusted"})

    @property
    def compiler(self) -> Compiler:
        """Compiles through the engine worker; made on first use (a command, watch mode).
        Never in an untrusted workspace: the engine worker runs the workspace's code."""
        self.require_trust("starting the engine worker")
        if self._compiler is None:
            with self._lazy_lock:
                if self._compiler is None:
                    from kernelscope.lsp.compiler import Compiler

                    self._compiler = Compiler(self.root, on_output=self._worker_output)
        return self._compiler

    @property
    def store_dir(self) -> Path:
        store = Path(self.options.store)
        return store if store.is_absolute() else self.root / store

    # -- documents ----------------------------------------------------------------------

    def text_of(self, uri: str) -> str | None:
        """The editor's text of an open document; None when it is not open (read from disk)."""
        document = self.workspace.text_documents.get(uri)
        return None if document is None else document.source

    def document(self, uri: str) -> Document | None:
        return self.provenance.document(uri, self.text_of(uri))

    def open_uris(self) -> list[str]:
        return list(self.workspace.text_documents)

    def path_of(self, uri: str) -> Path | None:
        """The file a `file:` URI names (None for other schemes)."""
        from kernelscope.lsp.provenance import path_of

        return path_of(uri)

    # -- state and notifications ----------------------------------------------------------

    def set_state(self, state: str, message: str, run_id: int | None = None, target: str | None = None) -> None:
        run_id = run_id if run_id is not None else self.provenance.shown_run_id()
        self.state = {"state": state, "runId": run_id, "message": message,
                      "target": target if target is not None else self.state.get("target"),
                      "rank": self._rank_of(run_id), "trusted": self.options.trusted}
        self.protocol.notify("kernelscope/status", self.state)

    def _rank_of(self, run_id: int | None) -> str | None:
        """`1/2`: the shown run's rank in its distributed job (None for a run of one process)."""
        if run_id is None:
            return None
        try:
            rank = self.provenance.run(run_id).rank()
        except Exception:  # noqa: BLE001 - a status is sent whatever the store says
            log.debug("no rank for run %s", run_id, exc_info=True)
            return None
        return None if rank is None else f"{rank.rank}/{rank.world_size}"

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"kernelscope: {message}"))

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def _worker_output(self, line: str) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.log, f"[engine worker] {line}")

    def call_soon(self, callback, *args) -> None:
        """Run `callback` on the event loop (from any thread)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(callback, *args)

    # -- new runs ---------------------------------------------------------------------------

    def on_runs_changed(self, callback) -> None:
        self._on_runs_changed.append(callback)

    def runs_changed(self) -> None:
        """A run was written or deleted: refresh everything the editor shows."""
        self._seen_runs = self._runs_fingerprint()
        for callback in self._on_runs_changed:
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - one feature's refresh must not stop the others
                log.exception("refresh after a new run failed in %s", getattr(callback, "__module__", callback))
        capabilities = self.client_capabilities.workspace
        if capabilities is not None:
            if capabilities.code_lens is not None and capabilities.code_lens.refresh_support:
                self.workspace_code_lens_refresh(None)
            if capabilities.inlay_hint is not None and capabilities.inlay_hint.refresh_support:
                self.workspace_inlay_hint_refresh(None)

    def _runs_fingerprint(self) -> tuple | None:
        store = self.provenance.store()
        if store is None:
            return None
        return (str(self.store_dir), *store.fingerprint())

    def start_monitor(self) -> None:
        """Watch the store for runs others write (the CLI, another editor) in a thread."""
        self._seen_runs = self._runs_fingerprint()
        threading.Thread(target=self._monitor, name="kernelscope-lsp-runs", daemon=True).start()

    def _monitor(self) -> None:
        while not self._monitor_stop.wait(POLL_SECONDS):
            try:
                fingerprint = self._runs_fingerprint()
            except Exception:  # noqa: BLE001 - a store being replaced; try again later
                log.debug("store check failed", exc_info=True)
                continue
            if fingerprint != self._seen_runs:
                self._seen_runs = fingerprint
                self.call_soon(self.runs_changed)

    def stop_background(self) -> None:
        self._monitor_stop.set()
        self.stop_compiling()

    def stop_compiling(self) -> None:
        """End watch mode and the engine worker (the server goes on reading the store)."""
        if self.watch_session is not None:
            self.watch_session.stop()
            self.watch_session = None
        if self._compiler is not None:
            self._compiler.stop()

    # -- registering features ------------------------------------------------------------

    def guarded_feature(self, method: str, options=None):
        """`@server.feature` whose failures become an LSP error naming the feature."""
        def decorator(handler):
            @functools.wraps(handler)
            def wrapped(params):
                return call_guarded(method, handler, self, params)

            self.feature(method, options)(wrapped)
            return handler

        return decorator


def call_guarded(name: str, handler, server: KernelscopeServer, params):
    try:
        return handler(server, params)
    except JsonRpcException:
        raise
    except OptionsError as error:
        raise JsonRpcInvalidParams(str(error)) from error
    except Exception as error:  # noqa: BLE001 - answered as an error; the server goes on
        damage = server.store_damage_behind(error)
        if damage is not None:  # a crafted or damaged store, not a bug
            log.error("kernelscope %s: %s", name, one_line(damage))
            raise JsonRpcInternalError(f"kernelscope {name}: {one_line(damage)}") from error
        log.error("kernelscope %s failed: %s", name, full_error(error) if traceback_wanted() else one_line(error))
        hint = "full error in the server's log" if traceback_wanted() else ENV_TRACEBACK_HINT
        raise JsonRpcInternalError(f"kernelscope {name} failed: {one_line(error)} ({hint})") from error


def create_server() -> KernelscopeServer:
    server = KernelscopeServer()
    for name in FEATURES:
        try:
            importlib.import_module(f"kernelscope.lsp.features.{name}").setup(server)
        except Exception as error:  # noqa: BLE001 - the other features still work
            log.exception("kernelscope feature %s could not be set up", name)
            server.failed_features[name] = f"{type(error).__name__}: {error}"
    return server


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="kernelscope lsp: %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(OneLineLogs())  # KERNELSCOPE_TRACEBACK=1 keeps the tracebacks
    server = create_server()
    try:
        server.start_io()
    finally:
        server.stop_background()
    return 0
