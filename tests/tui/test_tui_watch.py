"""`kernelscope tui TARGET --watch`: the explorer records through the warm engine worker,
updates the panes in place after a save (the cursor stays on its source line), and a
broken save shows its error while the last good run stays on screen."""
from __future__ import annotations

import asyncio
import shutil
import time

import pytest
from conftest import EXAMPLES
from tui_support import SIZE, settle

from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.compile_driver import CompileRequest

BUILD_SECONDS = 240.0  # worker start (torch import) plus a build, on a busy 2-core machine


@pytest.mark.slow
def test_watch_rebuilds_on_save_and_keeps_the_cursor_line(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = workspace / "mlp.py"
    shutil.copy(EXAMPLES / "mlp.py", model)
    source = model.read_text()
    gelu = source.splitlines().index("        h = F.gelu(h)") + 1
    request = CompileRequest(target="mlp.py:make", store=workspace / ".kernelscope", workspace=workspace,
                             watch=True, device="virtual-cuda")

    async def scenario():
        app = KernelscopeApp(workspace / ".kernelscope", compile_request=request)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: app.run_id == 1 and app.last_links is not None, BUILD_SECONDS)
            assert app.view("source").path == "mlp.py"
            app.view("source").move_cursor(gelu, center=True)
            await settle(pilot, lambda: app.last_query == ("source", gelu))
            assert "gelu" in app.view("kernel").path

            model.write_text(source.replace("h = F.gelu(h)", "h = torch.relu(h)"))
            await settle(pilot, lambda: app.run_id == 2 and app.last_query == ("source", gelu), BUILD_SECONDS)
            assert app.view("source").cursor_line == gelu
            assert app.view("source").cursor_text.strip() == "h = torch.relu(h)"
            assert "relu" in app.view("kernel").path and "gelu" not in app.view("kernel").path
            assert "run 2" in app.status.run_text

            model.write_text(source.replace("h = F.gelu(h)", "h = F.gelu(h"))  # a syntax error
            await settle(pilot, lambda: "failed" in app.status.error, BUILD_SECONDS)
            assert f"mlp.py:{gelu}" in app.status.error or "mlp.py:" in app.status.error
            assert "run 2 stays" in app.status.error
            assert app.run_id == 2 and app.view("kernel").path is not None  # the last run stays on screen
        # Leaving the app stops the watch and its worker.
        deadline = time.monotonic() + 30
        while app.workers and any(worker.is_running for worker in app.workers) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

    asyncio.run(scenario())
