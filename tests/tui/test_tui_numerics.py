"""`e` in the terminal UI: the run's numerics, and Enter jumps to the line where compiled and
eager part ways (a store recorded by `kernelscope numerics`)."""
from __future__ import annotations

import asyncio

import pytest
from program_runs import kernelscope
from tui_support import SIZE, settle, started

from kernelscope.tui.app import KernelscopeApp

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def numerics_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("tui-numerics") / "store"
    done = kernelscope("numerics", "examples/numerics_fp16_overflow.py:make", "--no-fixes", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    return store


def test_numerics_are_listed_and_jump_to_the_diverging_line(numerics_store):
    async def scenario():
        app = KernelscopeApp(numerics_store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("e")
            await settle(pilot, lambda: type(app.screen).__name__ == "NumericsScreen")
            prompts = [str(option.prompt) for option in app.screen.query_one("OptionList").options]
            assert prompts[0].startswith("first divergence: examples/numerics_fp16_overflow.py:13 node mul")
            assert any("examples/numerics_fp16_overflow.py:15" in prompt and "beyond tolerance" in prompt
                       for prompt in prompts[1:])
            await pilot.press("enter")
            await settle(pilot, lambda: app.last_query == ("source", 13))
            assert app.view("source").cursor_line == 13

    asyncio.run(scenario())
