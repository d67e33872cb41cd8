"""`U` in the terminal UI: the program's own Triton kernels — each generated copy with the
autotune config the run launched and the copy's first lines — and Enter opens the copy in
the kernel pane (examples/user_triton_kernel.py, conftest's user_triton_store)."""
from __future__ import annotations

import asyncio

import pytest
from tui_support import SIZE, settle, started

from kernelscope.tui.app import KernelscopeApp

pytestmark = pytest.mark.slow


def test_user_kernels_show_their_copy_and_config_and_open_the_copy(user_triton_store):
    root, runs = user_triton_store

    async def scenario():
        app = KernelscopeApp(root, run_id=runs["inference"])
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("U")
            await settle(pilot, lambda: type(app.screen).__name__ == "UserKernelsScreen")
            prompts = [str(option.prompt) for option in app.screen.query_one("OptionList").options]
            (silu,) = [prompt for prompt in prompts if prompt.startswith("user Triton kernel silu_forward_kernel ")]
            assert "launched with: BLOCK=256, num_warps=4, num_stages=3" in silu
            assert "@triton.autotune configs (2):" in silu
            assert "│ def silu_forward_kernel(" in silu  # the generated copy itself
            chosen = prompts.index(silu)
            copy = app.screen.kernels[chosen].file
            for _ in range(chosen):
                await pilot.press("down")
            await pilot.press("enter")
            await settle(pilot, lambda: app.view("kernel").path.endswith(copy.rpartition("/")[2]))
            assert type(app.screen).__name__ != "UserKernelsScreen"

    asyncio.run(scenario())
