"""The `M` memory view in the terminal explorer (Pilot), on a real training recording of
examples/mlp.py: the peak, the model lines saving the most for the backward, each graph's
timeline with the peak marked; enter on a timeline step opens its wrapper line, on a model
line the source line."""
from __future__ import annotations

import asyncio

import pytest
from conftest import example_line
from tui_support import SIZE, links_for, settle, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.memory_screen import MemoryScreen


@pytest.mark.slow
def test_memory_view_lists_the_timeline_and_opens_its_lines(recordings, tmp_path):
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        run_id = store.write_run(recordings.get("mlp", train=True))
        memory = store.run(run_id).memory()
    backward = next(graph for graph in memory.graphs if graph.kind == "backward")

    async def scenario():
        app = KernelscopeApp(root, run_id=run_id)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            fc1 = example_line("mlp", "self.fc1(x)")
            await links_for(pilot, app, "source", fc1)  # the chain line ends with what the line holds
            chain = str(app.query_one("#chain").render())
            # live at the backward's peak: fc1's weight gradient and its input; its saved output is
            # freed by then (the backward `del`s it after its last use)
            assert chain.endswith("saves 8.0 KiB for backward · 32.5 KiB live at peak"), chain
            await pilot.press("M")
            await settle(pilot, lambda: isinstance(app.screen, MemoryScreen))
            options = app.screen.query_one("#memory-list")
            texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            assert texts[0].startswith("peak ") and "0_0_0-backward" in texts[0]
            assert any(f"mlp.py:{fc1} (fc1)" in text and "saves 8.0 KiB for backward" in text for text in texts)
            peak_step = next(i for i, text in enumerate(texts) if "← peak" in text and f"L{backward.peak_line}" in text)
            options.highlighted = peak_step
            await pilot.press("enter")
            await settle(pilot, lambda: not isinstance(app.screen, MemoryScreen)
                         and app.view("wrapper").path.endswith("0_0_0-backward/wrapper.py")
                         and app.view("wrapper").cursor_line == backward.peak_line)

            await pilot.press("M")
            await settle(pilot, lambda: isinstance(app.screen, MemoryScreen))
            options = app.screen.query_one("#memory-list")
            texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            options.highlighted = next(i for i, text in enumerate(texts) if f"mlp.py:{fc1} (fc1)" in text)
            await pilot.press("enter")
            await settle(pilot, lambda: not isinstance(app.screen, MemoryScreen)
                         and app.view("source").path.endswith("mlp.py") and app.view("source").cursor_line == fc1)

    asyncio.run(scenario())
