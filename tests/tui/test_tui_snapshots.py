"""Snapshots of the explorer's main screens (pytest-textual-snapshot) on real recordings.

Deterministic: a fixed terminal size, a fresh store whose run ids are fixed, and
nothing on screen that names the machine (paths are workspace- or store-relative;
no times). Update after an intended change with
`pytest tests/tui/test_tui_snapshots.py --snapshot-update`, and look at the SVGs.
"""
from __future__ import annotations

import os

import pytest
from conftest import REPO, example_line
from tui_support import settle

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.kernel_list import KernelList

TERMINAL = (160, 48)


@pytest.fixture(scope="session")
def snapshot_store(recordings, tmp_path_factory):
    """Runs 1 (mlp) and 2 (graph_break, train) recorded from the repository root with
    relative targets, so the graphs' `# File:` comments name `examples/...`, not this
    checkout's absolute path."""
    previous = os.getcwd()
    os.chdir(REPO)
    try:
        mlp = recordings.get_spec("examples/mlp.py:make")
        graph_break = recordings.get_spec("examples/graph_break.py:make", train=True)
    finally:
        os.chdir(previous)
    root = tmp_path_factory.mktemp("tui-snapshots") / ".kernelscope"
    with StoreBackend(root) as store:
        assert store.write_run(mlp) == 1
        assert store.write_run(graph_break) == 2
    for post_grad in root.glob("runs/*/graphs/*/post_grad.py"):
        assert str(REPO) not in post_grad.read_text(), f"{post_grad} names this checkout"
    return root


async def ready(pilot) -> None:
    """The run, its kernel facts and the links of the cursor's line are on screen."""
    app = pilot.app
    await settle(pilot, lambda: app.last_links is not None and app.facts_loaded)
    await pilot.pause()


@pytest.mark.slow
def test_main_screen_gelu_line(snap_compare, snapshot_store):
    """mlp.py: the cursor on `h = F.gelu(h)` lights up the erf nodes, the fused kernel's
    erf lines and the kernel's launch in the wrapper."""
    gelu = example_line("mlp", "h = F.gelu(h)")

    async def run_before(pilot):
        app = pilot.app
        await ready(pilot)
        app.view("source").move_cursor(gelu, center=True)
        await settle(pilot, lambda: app.last_query == ("source", gelu))
        await pilot.pause()

    assert snap_compare(KernelscopeApp(snapshot_store, run_id=1), terminal_size=TERMINAL, run_before=run_before)


@pytest.mark.slow
def test_backward_kernel_from_the_filtered_list(snap_compare, snapshot_store):
    """graph_break.py trained: the kernel list filtered to backward Triton kernels, one opened."""

    async def run_before(pilot):
        app = pilot.app
        await ready(pilot)
        await pilot.press("5", "slash", *"kind:triton bw", "enter")
        kernels = app.query_one(KernelList)
        await settle(pilot, lambda: len(kernels.shown_rows) == 2)
        chosen = kernels.shown_rows[0]
        await pilot.press("enter")
        await settle(pilot, lambda: app.view("kernel").path == chosen.file
                     and app.last_query is not None and app.last_query[0] == "kernel")
        await pilot.pause()

    assert snap_compare(KernelscopeApp(snapshot_store, run_id=2), terminal_size=TERMINAL, run_before=run_before)


@pytest.mark.slow
def test_graph_breaks_screen(snap_compare, snapshot_store):
    """`b` lists the graph breaks with their reasons and user lines."""

    async def run_before(pilot):
        await ready(pilot)
        await pilot.press("b")
        await settle(pilot, lambda: type(pilot.app.screen).__name__ == "BreaksScreen")
        await pilot.pause()

    assert snap_compare(KernelscopeApp(snapshot_store, run_id=2), terminal_size=TERMINAL, run_before=run_before)


@pytest.mark.slow
def test_help_screen(snap_compare, snapshot_store):
    async def run_before(pilot):
        await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(KernelscopeApp(snapshot_store, run_id=1), terminal_size=TERMINAL, run_before=run_before)
