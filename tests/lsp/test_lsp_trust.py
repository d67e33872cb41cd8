"""The language server in an untrusted workspace (`trusted: false`, what the VS Code
extension sends in Restricted Mode), driven by a real LSP client (pytest-lsp).

The workspace holds a small real store and code that writes a marker file when it runs:
a factory (`evil.py:make`, also the workspace's pyproject target) and an "interpreter"
script given as the `python` option. Reading the store keeps working; every request that
would compile (compile, watch, PTX/SASS build, also with `asmAfterCompile`) is refused with
a message that says why and how to trust the workspace; nothing runs, no process starts."""
from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import _plain, line_of, start_session, uri
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from synthetic_runs import make_mlp_run

from kernelscope.lsp.server import UNTRUSTED
from kernelscope.store import StoreBackend

EVIL_FACTORY = '''\
from pathlib import Path

Path(__file__).with_name("MARKER-factory").write_text("the workspace's code ran")


def make():
    raise SystemExit("never compiled")
'''


@pytest.fixture
def untrusted_workspace(tmp_path):
    """A workspace with a recorded run of examples/mlp.py, and code that must never run."""
    workspace = tmp_path / "cloned"
    workspace.mkdir()
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(make_mlp_run(workspace))
    (workspace / "evil.py").write_text(EVIL_FACTORY)
    (workspace / "pyproject.toml").write_text('[tool.kernelscope]\ntarget = "evil.py:make"\n')
    script = workspace / "fake-python"
    script.write_text(f'#!/bin/sh\necho ran > "{workspace}/MARKER-python"\nexec python3 "$@"\n')
    script.chmod(0o755)
    return workspace


def markers(workspace: Path) -> list[str]:
    return sorted(path.name for path in workspace.glob("MARKER-*"))


def children(pid: int) -> list[int]:
    """The processes `pid` started (an engine worker would be one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


async def test_untrusted_workspace_browses_but_compiles_nothing(untrusted_workspace):
    workspace = untrusted_workspace
    source = workspace / "examples" / "mlp.py"
    session = await start_session(workspace, {
        "trusted": False, "python": str(workspace / "fake-python"), "asmAfterCompile": True})
    try:
        status = await session.wait_for_status(lambda s: s["state"] == "idle", timeout=30)
        assert status["trusted"] is False and "untrusted workspace" in status["message"], status
        assert status["runId"] == 1
        logged = [m.message for m in session.client.log_messages]
        assert any("not trusted" in message for message in logged), logged

        # Reading the store works: hover, definition, references, lenses, the run overview, the runs.
        session.open(source)
        gelu = line_of(source, "gelu(h)")
        hover = await session.hover(source, gelu)
        assert hover is not None and "triton_poi_fused_gelu" in hover.contents.value
        definition = await session.definition(source, gelu)
        assert definition and any("triton_poi_fused_gelu" in target.uri for target in definition)
        assert await session.references(uri(source), gelu)
        assert await session.lenses(uri(source))
        overview = _plain(await session.request("kernelscope/runOverview", {}))
        assert overview["run"]["id"] == 1 and overview["kernels"]
        assert [run["id"] for run in _plain(await session.command("kernelscope.runs"))["runs"]] == [1]

        # Every compile is refused, with why and how to trust the workspace.
        refused = [
            ("kernelscope.compile", {}),  # the pyproject target, evil.py:make
            ("kernelscope.compile", {"target": "evil.py:make", "uri": uri(source)}),
            ("kernelscope.toggleWatch", {}),
            ("kernelscope.buildAsm", {"uri": uri(source), "line": gelu}),
            ("kernelscope.buildAsm", {}),
        ]
        for command, argument in refused:
            with pytest.raises(JsonRpcException) as raised:
                await session.command(command, argument)
            assert raised.value.code == UNTRUSTED, (command, raised.value)
            message = str(raised.value)
            assert "workspace is not trusted" in message and "Manage Workspace Trust" in message, message

        # A later configuration cannot give trust back to this server (the extension restarts it).
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"kernelscope": {"trusted": True, "target": "evil.py:make"}}))
        with pytest.raises(JsonRpcException, match="workspace is not trusted"):
            await session.command("kernelscope.compile", {})
        # Saving the model file compiles nothing either.
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri(source))))
        hover = await session.hover(source, gelu)  # still answering, after the save
        assert hover is not None and "run 1" in hover.contents.value

        assert markers(workspace) == []
        assert children(session.client._server.pid) == [], "the server started a process"
    finally:
        await session.stop()
    assert markers(workspace) == []


async def test_trust_can_be_taken_back_but_not_given_later(untrusted_workspace):
    """A trusted server told `trusted: false` stops compiling; `trusted: true` later changes nothing."""
    session = await start_session(untrusted_workspace, {})
    try:
        await session.wait_for_status(lambda s: s["state"] == "idle", timeout=30)
        assert session.statuses[-1]["trusted"] is True
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"kernelscope": {"trusted": False}}))
        with pytest.raises(JsonRpcException, match="workspace is not trusted"):
            await session.command("kernelscope.compile", {})
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"kernelscope": {"trusted": True}}))
        with pytest.raises(JsonRpcException, match="workspace is not trusted"):
            await session.command("kernelscope.toggleWatch", {})
        assert markers(untrusted_workspace) == []
    finally:
        await session.stop()


async def test_untrusted_hover_says_building_is_off_instead_of_how_to_build(untrusted_workspace):
    """Where a trusted server's hover says how to build PTX/SASS, an untrusted one's says that
    building is off until the workspace is trusted (it refuses `kernelscope.buildAsm`): on a
    model line, on a kernel line, and in `kernelscope/asmForLine`'s `how`."""
    from pygls.uris import to_fs_path

    workspace = untrusted_workspace
    source = workspace / "examples" / "mlp.py"
    session = await start_session(workspace, {"trusted": False})
    try:
        await session.wait_for_status(lambda s: s["state"] == "idle", timeout=30)
        session.open(source)
        gelu = line_of(source, "gelu(h)")
        off = "not built yet — building is off until the workspace is trusted"
        hover = (await session.hover(source, gelu)).contents.value
        assert f"**PTX/SASS**: {off}" in hover, hover
        assert "Build PTX/SASS" not in hover and "kernelscope.buildAsm" not in hover, hover

        target = next(t for t in await session.definition(source, gelu) if "triton_poi_fused_gelu" in t.uri)
        kernel = Path(to_fs_path(target.uri))
        on_kernel = (await session.hover(kernel, target.range.start.line)).contents.value
        assert f"**PTX/SASS**: {off}" in on_kernel, on_kernel
        assert "Build PTX/SASS" not in on_kernel and "--asm" not in on_kernel, on_kernel

        below = _plain(await session.request("kernelscope/asmForLine", {
            "textDocument": {"uri": uri(source)}, "position": {"line": gelu, "character": 0}}))
        assert below["kernels"] and {k["status"] for k in below["kernels"]} == {"not built"}
        assert below["how"].startswith("building is off until the workspace is trusted"), below["how"]
        assert "buildAsm" not in below["how"]
    finally:
        await session.stop()
    assert markers(workspace) == []
