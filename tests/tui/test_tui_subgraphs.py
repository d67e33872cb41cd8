"""Higher-order ops' subgraphs in the terminal explorer (Pilot): on a `torch.cond` branch
line the chain line names the branch's subgraph by its label and the kernel pane opens the
branch's own kernel. Recorded once per session (conftest.RecordingCache), virtual-cuda."""
from __future__ import annotations

import asyncio

import pytest
from conftest import example_line
from tui_support import SIZE, links_for, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp

pytestmark = pytest.mark.slow


def test_cond_branch_line_shows_its_subgraph_label(recordings, tmp_path):
    run = recordings.get("cond_branch")
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        run_id = store.write_run(run)
    (true_branch,) = [g for g in run.graphs if g.subgraph is not None and g.subgraph.role == "true branch"]
    line = example_line("cond_branch", "torch.sigmoid(h)")

    async def scenario():
        app = KernelscopeApp(root, run_id=run_id)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert app.view("source").path.endswith("examples/cond_branch.py"), app.view("source").path
            await links_for(pilot, app, "source", line)
            chain = str(app.query_one("#chain").render())
            assert true_branch.subgraph.label in chain, chain
            assert f"/graphs/{true_branch.key}/" in app.view("kernel").path, app.view("kernel").path

    asyncio.run(scenario())
