"""The TUI's `b` screen lists each recompile at the line whose guard failed, with the
values and advice, and Enter jumps there (docs/why.md). A synthetic run (fast)."""
from __future__ import annotations

import asyncio

from synthetic_runs import FC1_LINE, MLP_PATH, make_why_run, workspace  # noqa: F401  (fixture)
from tui_support import SIZE, settle, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp


def test_recompiles_are_listed_at_their_lines_and_jump_there(workspace):  # noqa: F811
    store_dir = workspace / ".kernelscope"
    with StoreBackend(store_dir) as store:
        store.write_run(make_why_run(workspace))

    async def scenario():
        app = KernelscopeApp(store_dir, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("b")
            await settle(pilot, lambda: type(app.screen).__name__ == "BreaksScreen")
            prompts = [str(option.prompt) for option in app.screen.query_one("OptionList").options]
            [recompile] = [prompt for prompt in prompts if prompt.startswith("recompile")]
            assert f"{MLP_PATH}:{FC1_LINE}" in recompile and "x.size()[0]=16" in recompile
            assert "advice: torch._dynamo.mark_dynamic(x, 0)" in recompile
            [pair] = [prompt for prompt in prompts if prompt.startswith("not fused")]
            assert f"{MLP_PATH}:{FC1_LINE}" in pair and "extern: node1 is extern or nop" in pair
            await pilot.press("down", "enter")  # past the graph break, onto the recompile
            await settle(pilot, lambda: app.last_query == ("source", FC1_LINE))
            assert app.view("source").cursor_line == FC1_LINE

    asyncio.run(scenario())
