"""The language server's compiles, end to end: the real engine worker records
examples/function.py into a temporary store while a real LSP client watches
`$/progress`, `kernelscope/status` and the refresh requests; the worker is killed
mid-compile, a compile hangs past the timeout, a model raises. The server survives
all of it and keeps showing the last good run."""
from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest
from lsp_support import REPO, _plain, line_of, start_session, uri
from lsprotocol import types
from pygls.exceptions import JsonRpcException

sys.path.insert(0, str(REPO / "bench"))
from faults.common import worker_pids  # noqa: E402 - the engine workers a process started

DEVICE = "cpu-triton"  # every device target goes through the same worker; this one is the lightest
FUNCTION = REPO / "examples" / "function.py"
TARGET = "examples/function.py:make"

pytestmark = pytest.mark.slow


async def test_compile_command_reports_progress_and_refreshes(tmp_path):
    session = await start_session(REPO, {"store": str(tmp_path / "store"), "deviceTarget": DEVICE})
    try:
        session.open(FUNCTION)
        first = _plain(await session.command("kernelscope.compile", {"target": TARGET}))
        assert isinstance(first["runId"], int)
        progress = list(session.client.progress_reports.values())
        assert progress, "no $/progress"
        values = progress[-1]
        assert isinstance(values[0], types.WorkDoneProgressBegin) and isinstance(values[-1], types.WorkDoneProgressEnd)
        assert any(isinstance(value, types.WorkDoneProgressReport) and "capture" in (value.message or "")
                   for value in values)
        states = [status["state"] for status in session.statuses]
        assert "compiling" in states and session.statuses[-1]["state"] == "idle"
        assert session.statuses[-1]["runId"] == first["runId"]
        line = line_of(FUNCTION, "torch.rsqrt(")
        hover = await session.hover(FUNCTION, line)
        assert hover is not None and f"run {first['runId']}" in hover.contents.value
        lenses_before = await session.lenses(uri(FUNCTION))
        assert lenses_before

        refreshes = len(session.refreshes)
        second = _plain(await session.command("kernelscope.compile", {"uri": uri(FUNCTION)}))  # make() of the file
        assert second["runId"] > first["runId"]
        for _ in range(100):
            if {"codeLens", "inlayHint"} <= set(session.refreshes[refreshes:]):
                break
            await asyncio.sleep(0.05)
        assert {"codeLens", "inlayHint"} <= set(session.refreshes[refreshes:])
        hover = await session.hover(FUNCTION, line)
        assert f"run {second['runId']}" in hover.contents.value
        runs = _plain(await session.command("kernelscope.runs"))["runs"]
        assert [run["id"] for run in runs] == [second["runId"], first["runId"]]
        assert [run["selected"] for run in runs] == [True, False]
    finally:
        await session.stop()


async def test_worker_killed_mid_compile_is_restarted_and_the_last_run_stays(tmp_path):
    session = await start_session(REPO, {"store": str(tmp_path / "store"), "deviceTarget": DEVICE,
                                         "train": True})  # forward and backward: a longer compile to kill
    try:
        good = _plain(await session.command("kernelscope.compile", {"target": TARGET}))["runId"]
        server_pid = session.client._server.pid
        (killed,) = worker_pids(server_pid)
        tokens = set(session.client.progress_reports)
        compile_ = asyncio.ensure_future(session.command("kernelscope.compile", {"target": TARGET}))
        for _ in range(600):  # until the engine reports its first phase of this compile
            new = [values for token, values in session.client.progress_reports.items() if token not in tokens]
            if new and any(isinstance(value, types.WorkDoneProgressReport) for value in new[0]):
                break
            await asyncio.sleep(0.01)
        os.kill(killed, signal.SIGKILL)  # mid-compile
        with pytest.raises(JsonRpcException, match="SIGKILL"):
            await compile_
        assert session.statuses[-1]["state"] == "failed"
        messages = [message.message for message in session.client.messages]
        assert any("restarted the engine worker" in message for message in messages), messages
        (restarted,) = worker_pids(server_pid)
        assert restarted != killed
        hover = await session.hover(FUNCTION, line_of(FUNCTION, "torch.rsqrt("))
        assert hover is not None and f"run {good}" in hover.contents.value  # the last good run, still shown
        again = _plain(await session.command("kernelscope.compile", {"target": TARGET}))["runId"]
        assert again > good
    finally:
        await session.stop()


async def test_hanging_and_raising_models_never_take_the_server_down(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(
        "import time\n"
        "\n"
        "\n"
        "def make():\n"
        "    time.sleep(120)\n"
        "\n"
        "\n"
        "def broken():\n"
        "    raise ValueError('the factory is broken')\n"
    )
    session = await start_session(tmp_path, {"store": str(tmp_path / "store"), "deviceTarget": DEVICE,
                                             "compileTimeout": 3})
    try:
        session.open(model)
        with pytest.raises(JsonRpcException, match="did not finish within 3s"):
            await session.command("kernelscope.compile", {"target": f"{model}:make"})
        assert session.statuses[-1]["state"] == "failed"
        assert _plain(await session.command("kernelscope.runs")) == {"runs": []}  # still answering
        with pytest.raises(JsonRpcException, match="the factory is broken") as raised:
            await session.command("kernelscope.compile", {"uri": uri(model), "target": f"{model}:broken"})
        assert raised.value.data["line"] == 9 and raised.value.data["file"] == str(model)
        found = await session.wait_for_diagnostics(model, lambda d: any(x.code == "compile-target" or
                                                                        "broken" in x.message for x in d))
        error = next(d for d in found if "broken" in d.message)
        assert error.severity == types.DiagnosticSeverity.Error and error.range.start.line == 8
    finally:
        await session.stop()


async def test_watch_rebuilds_on_save_and_refreshes(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(FUNCTION.read_text())
    session = await start_session(tmp_path, {"store": str(tmp_path / "store"), "deviceTarget": DEVICE})
    try:
        session.open(model)
        assert _plain(await session.command("kernelscope.toggleWatch", {"target": f"{model}:make"})) == {
            "watching": True}
        first = await session.wait_for_status(lambda s: s["state"] == "watching" and "run" in s["message"])
        line = line_of(model, "torch.rsqrt(")
        assert f"run {first['runId']}" in (await session.hover(model, line)).contents.value
        refreshes = len(session.refreshes)
        model.write_text(model.read_text().replace("1e-6", "1e-5"))  # a save, as the editor writes it
        second = await session.wait_for_status(
            lambda s: s["state"] == "watching" and s["runId"] is not None and s["runId"] > first["runId"])
        assert "codeLens" in session.refreshes[refreshes:]
        assert f"run {second['runId']}" in (await session.hover(model, line)).contents.value
        assert _plain(await session.command("kernelscope.toggleWatch")) == {"watching": False}
        assert session.statuses[-1]["state"] == "idle"
    finally:
        await session.stop()
