"""Helpers of the language-server tests: start `python -m kernelscope lsp` with a real
LSP client (pytest-lsp) on a store, and build such stores from real recordings."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, client_capabilities

REPO = Path(__file__).resolve().parent.parent


def uri(path: Path | str) -> str:
    return from_fs_path(str(path))


class Session:
    """A started server with its client, the statuses it sent and the refreshes it asked for."""

    def __init__(self, client):
        self.client = client
        self.statuses: list[dict] = []
        self.refreshes: list[str] = []

    async def hover(self, file: Path, line: int):
        return await self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(file)), position=types.Position(line=line, character=4)))

    async def definition(self, file: Path, line: int):
        return await self.client.text_document_definition_async(types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri(file)), position=types.Position(line=line, character=4)))

    async def references(self, file_uri: str, line: int):
        return await self.client.text_document_references_async(types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri=file_uri), position=types.Position(line=line, character=0),
            context=types.ReferenceContext(include_declaration=False)))

    async def lenses(self, file_uri: str):
        return await self.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=file_uri)))

    async def request(self, method: str, params):
        return await self.client.protocol.send_request_async(method, params)

    async def raw_request(self, method: str, params, request_id: str = "raw-1"):
        """Send a request as raw JSON, bypassing the client's types (for malformed parameters)."""
        future = asyncio.get_running_loop().create_future()
        self.client.protocol._request_futures[request_id] = future
        self.client.protocol._send_data({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await asyncio.wait_for(future, 10)

    async def command(self, name: str, *arguments):
        return await self.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=name, arguments=list(arguments)))

    def open(self, file: Path, text: str | None = None, version: int = 1) -> None:
        """Open `file` as an editor does: a stored C++ kernel (`.cpp`) as C++, anything else as Python."""
        language = "cpp" if Path(file).suffix == ".cpp" else "python"
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri(file), language_id=language, version=version,
            text=file.read_text() if text is None else text)))

    async def wait_for_status(self, predicate, timeout: float = 120.0) -> dict:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            for status in self.statuses:
                if predicate(status):
                    return status
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching kernelscope/status within {timeout}s; got {self.statuses}")

    async def wait_for_diagnostics(self, file: Path, predicate, timeout: float = 30.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            diagnostics = self.client.diagnostics.get(uri(file))
            if diagnostics is not None and predicate(diagnostics):
                return diagnostics
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching diagnostics for {file}: {self.client.diagnostics.get(uri(file))}")

    async def stop(self) -> None:
        await self.client.shutdown_session()


async def start_session(root: Path, options: dict, client: str = "visual-studio-code") -> Session:
    env = dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1")
    config = ClientServerConfig(server_command=[sys.executable, "-m", "kernelscope", "lsp"], server_env=env)
    lsp_client = await config.start()
    session = Session(lsp_client)

    @lsp_client.feature("kernelscope/status")
    def on_status(params):
        session.statuses.append(_plain(params))

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_lens_refresh(params):
        session.refreshes.append("codeLens")

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def on_hint_refresh(params):
        session.refreshes.append("inlayHint")

    capabilities = client_capabilities(client)
    if client == "visual-studio-code" and capabilities.workspace is not None:
        # pytest-lsp's recorded VS Code capabilities predate inlay hints; VS Code >= 1.67 declares this.
        capabilities.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=uri(root), initialization_options=options))
    return session


def _plain(value):
    """pygls hands custom notifications over as objects; tests compare dicts."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if hasattr(value, "__dict__"):
        return {key: _plain(item) for key, item in vars(value).items()}
    return value


def line_of(file: Path, needle: str) -> int:
    """The 0-based line of the first line of `file` containing `needle`."""
    for number, text in enumerate(file.read_text().splitlines()):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {file}")
