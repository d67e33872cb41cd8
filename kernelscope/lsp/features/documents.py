"""Initialization, configuration and the document lifecycle.

The workspace root and options are taken at `initialize`; `initialized` starts
the check for new runs (and, with `trusted: false`, logs that nothing is compiled).
Opening, editing, saving or closing a document never compiles anything (saves
rebuild only in watch mode, through the watch session's own file watcher); it only
refreshes what is shown for that document.
"""
from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from kernelscope.lsp.options import OptionsError
from kernelscope.lsp.server import UNTRUSTED_WHY

log = logging.getLogger(__name__)


def setup(server) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        root = _workspace_root(params) or server.root
        try:
            server.configure(root, params.initialization_options)
        except OptionsError as error:
            server.configure(root, None)
            server.show(f"ignored the initialization options: {error}", types.MessageType.Warning)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        server.loop = asyncio.get_running_loop()
        server.start_monitor()
        for name, problem in server.failed_features.items():
            server.show(f"feature {name} is off: {problem}", types.MessageType.Error)
        latest = server.provenance.latest_run_id()
        if server.provenance.problem:
            server.show(server.provenance.problem, types.MessageType.Error)
            server.set_state("failed", server.provenance.problem, None)
            return
        if not server.options.trusted:
            server.log(f"kernelscope: {UNTRUSTED_WHY}.", types.MessageType.Warning)
            message = ((f"run {latest}" if latest is not None else "no runs")
                       + " · untrusted workspace: compiling is off")
        else:
            message = f"run {latest}" if latest is not None else "no runs yet: run kernelscope.compile"
        server.set_state("idle", message, latest)

    @server.feature(types.SHUTDOWN)
    def shutdown(params) -> None:
        server.stop_background()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        section = settings.get("kernelscope") if isinstance(settings, dict) else None
        if section is None:
            return
        try:
            server.configure(server.root, section)
        except OptionsError as error:
            server.show(str(error), types.MessageType.Error)
            return
        server.runs_changed()

    def notify(uri: str, event: str) -> None:
        for callback in server.document_listeners:
            try:
                callback(server, uri, event)
            except Exception:  # noqa: BLE001 - one feature's failure must not stop the others
                log.exception("document %s handler failed for %s", event, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        server.thread_pool.submit(_warm, server, params.text_document.uri, params.text_document.text)
        notify(params.text_document.uri, "open")

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        notify(params.text_document.uri, "change")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        notify(params.text_document.uri, "save")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        notify(params.text_document.uri, "close")


def _warm(server, uri: str, text: str) -> None:
    """Answer every line of a freshly opened model file in the background (this thread's
    own StoreBackend), so the first hover in it is a lookup: the source index, and the line
    overviews (counted now if the run was written before the store kept them)."""
    try:
        document = server.provenance.document(uri, text)
        if document is not None and document.is_source:
            run = server.provenance.run(document.run_id)
            run.source_index(document.location)
            run.file_overviews(document.location)
        elif document is None:
            _explain_unknown_file(server, uri)
    except Exception:  # noqa: BLE001 - warming is an optimisation; requests compute what they need
        log.exception("indexing %s failed", uri)


def _explain_unknown_file(server, uri: str) -> None:
    """A workspace file no run knows, in a store whose runs were all recorded somewhere this
    workspace is not (a store recorded elsewhere): say once how to map it, instead of
    answering nothing on every line without a word."""
    path, store = server.path_of(uri), server.provenance.store()
    if path is None or store is None or path.suffix != ".py" or server.map_hint_shown:
        return
    recorded = store.recorded_workspaces()
    if not recorded or any(Path(candidate) in (path, *path.parents) for workspace in store.candidate_workspaces()
                           for candidate in (workspace, os.path.realpath(workspace))):
        return
    server.map_hint_shown = True
    server.show(f"no run of {server.store_dir} recorded {path.name}; its runs were recorded in "
                f"{', '.join(recorded[:3])}. If this workspace is a copy of that one, set the pathMap option, "
                f"e.g. {{\"{recorded[0]}\": \"{server.root}\"}} (or KERNELSCOPE_MAP_PATH="
                f"{recorded[0]}={server.root})", types.MessageType.Warning)


def _workspace_root(params: types.InitializeParams) -> Path | None:
    uri = params.root_uri
    if uri is None and params.workspace_folders:
        uri = params.workspace_folders[0].uri
    if uri is not None:
        path = to_fs_path(uri)
        return Path(path) if path else None
    return Path(params.root_path) if params.root_path else None
