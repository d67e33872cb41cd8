"""Below the kernel in the terminal explorer (Pilot), on Hugging Face GPT-2 with eager
attention (a model nobody here wrote): `a` shows the kernel's SASS (then PTX) in the
wrapper pane's place; the SASS lines of the kernel pane's cursor line light up (the exp
line: its `MUFU.EX2` instructions), a SASS line lights up its kernel line and the model's
softmax line, the kernel list shows registers and spills; before a build the pane says
how to build, and `B` builds in the engine worker."""
from __future__ import annotations

import asyncio

import pytest
from conftest import gpt2_softmax_line
from tui_support import SIZE, links_for, settle, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.kernel_list import KernelList

pytestmark = pytest.mark.slow


async def open_softmax_line(pilot, app, path: str, line: int) -> None:
    """The model's softmax line in the source pane (modeling_gpt2.py: not the run's target file)."""
    await started(pilot, app)
    with StoreBackend(app.store_root) as store:
        key = store.run(1).locate(path).path  # as the store names it (workspace-relative when inside it)
    app.open_source(path, line, 1, app.workspace)
    await settle(pilot, lambda: app.view("source").path == key and app.last_query == ("source", line))
    await settle(pilot, lambda: app.view("kernel").path is not None)


def test_softmax_line_to_mufu_ex2_and_back_in_the_explorer(gpt2_asm):
    root, path, line, [kernel_file] = gpt2_asm
    with StoreBackend(root) as store:
        view = store.run(1)
        [info] = view.asm_builds().values()
        result = view.query(path, line)
        [kernel] = [k for chain in result.graphs for k in chain.kernels if k.kind == "triton"]
        exp_line = next(ref.line for ref in kernel.lines if "exp(" in ref.text)
        exp_sass = {asm.line for asm in view.asm_below(kernel_file, [exp_line], ("sass",)).lines}
        mufu = sorted(asm.line for asm in view.asm_below(kernel_file, [exp_line], ("sass",)).lines
                      if asm.opcode == "MUFU.EX2")
        ptx = {asm.line for asm in view.asm_below(kernel_file, [exp_line], ("ptx",)).lines}

    async def scenario():
        app = KernelscopeApp(root, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await open_softmax_line(pilot, app, path, line)
            assert app.view("kernel").path == kernel_file
            app.view("source").focus()
            await pilot.press("a")
            asm = app.view("asm")
            await settle(pilot, lambda: asm.path == info.files["sass"] and bool(asm.linked))
            assert not app.pane("wrapper").display and app.pane("asm").display
            assert set(mufu) <= asm.linked  # the model line's ops, exp among them
            title = str(app.pane("asm").border_title)
            assert f"SASS · {info.facts.registers} regs · 0 spills · occupancy" in title, title

            await links_for(pilot, app, "kernel", exp_line)  # the exp line alone
            await settle(pilot, lambda: asm.linked == exp_sass)
            assert "MUFU.EX2" in asm.lines[min(mufu) - 1]

            await links_for(pilot, app, "asm", mufu[0])  # up: its kernel line and model line
            assert app.view("kernel").linked == {exp_line}
            assert line in app.view("source").linked and app.view("source").path.endswith("modeling_gpt2.py")
            chain = str(app.query_one("#chain").render())
            assert chain.startswith(f"SASS :{mufu[0]} MUFU.EX2") and f"kernel line {exp_line}" in chain, chain

            kernels = app.query_one(KernelList)
            await settle(pilot, lambda: app.facts_loaded)
            assert "regs" in kernels.columns and "spills" in kernels.columns
            [row] = [row for row in kernels.rows if row.registers is not None]
            assert (row.name, row.registers, row.spill_bytes) == (info.name, info.facts.registers, 0)

            await links_for(pilot, app, "kernel", exp_line)
            await pilot.press("a")  # the PTX of the same line
            await settle(pilot, lambda: asm.path == info.files["ptx"] and asm.linked == ptx)
            assert any("ex2.approx" in asm.lines[number - 1] for number in ptx)
            await pilot.press("a")  # back to the wrapper
            await settle(pilot, lambda: app.pane("wrapper").display and not app.pane("asm").display)

    asyncio.run(scenario())


def test_not_built_says_how_and_B_builds_in_the_engine_worker(recordings, tmp_path):
    path, line = gpt2_softmax_line()
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(recordings.get_zoo("gpt2", "make_eager_attention"))

    async def scenario():
        app = KernelscopeApp(root, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await open_softmax_line(pilot, app, path, line)
            app.view("source").focus()
            await pilot.press("a")
            asm = app.view("asm")
            await settle(pilot, lambda: "press B" in "\n".join(asm.lines))
            assert "not compiled below Triton yet" in asm.lines[0] and asm.path is None
            await pilot.press("B")
            await settle(pilot, lambda: asm.path is not None and asm.path.endswith(".sass") and bool(asm.linked),
                         timeout=300)
            assert "1 kernel(s) compiled to PTX and SASS" in str(app.status.render())

    asyncio.run(scenario())
    with StoreBackend(root) as store:
        assert store.run(1).asm_status().built == 1
