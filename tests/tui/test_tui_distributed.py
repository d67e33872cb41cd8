"""Distributed jobs in the terminal explorer (Pilot): the rank in the status line and the
run picker, a collective's wrapper line (and its model line) answered in the chain line
with its model line and layer, and the `o` screen with each graph's compute/communication
order. Fast on a synthetic rank; slow on the Llama TP block as rank 0 of a faked 8-rank
job and on a real 2-rank gloo job under torchrun."""
from __future__ import annotations

import asyncio

import pytest
from conftest import EXAMPLES
from synthetic_runs import FC2_LINE, MLP_PATH, rank_run, workspace  # noqa: F401 - fixture
from tui_support import SIZE, links_for, settle, started

from kernelscope.store import StoreBackend
from kernelscope.tui.app import KernelscopeApp
from kernelscope.tui.comm_screen import CommScreen
from kernelscope.tui.run_picker import RunPicker


def chain_text(app) -> str:
    return str(app.query_one("#chain").render())


def test_collective_lines_rank_and_order_in_the_explorer(workspace):
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(rank_run(workspace, 1))

    async def scenario():
        app = KernelscopeApp(workspace / ".kernelscope", run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert "run 1 · rank 1/2 · " in str(app.status.render())
            await links_for(pilot, app, "source", FC2_LINE)
            expected = ("⇄ all_reduce (sum) over 2 ranks, 1 KiB · layer fc2 (Linear) · RowwiseParallel output "
                        f"P(sum) -> R · model line {MLP_PATH}:{FC2_LINE}")
            assert chain_text(app).startswith(expected), chain_text(app)
            assert app.view("wrapper").path.endswith("0_0_0-forward/wrapper.py")
            await links_for(pilot, app, "wrapper", 13)  # the wrapper line that issues it
            assert chain_text(app).startswith(expected), chain_text(app)
            assert app.view("source").linked == {FC2_LINE}
            await links_for(pilot, app, "wrapper", 11)  # the GELU kernel's launch: no collective
            assert "⇄" not in chain_text(app)

            await pilot.press("o")
            await settle(pilot, lambda: isinstance(app.screen, CommScreen))
            options = app.screen.query_one("#comm-list")
            texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            assert texts[0].startswith("rank 1 of 2 (gloo) · job torchrun:abc")
            order = next(text for text in texts if text.startswith("[0/0 forward] compute/communication order"))
            assert "all_reduce" in order, order
            collective = next(i for i, text in enumerate(texts) if text.strip().startswith("⇄ all_reduce"))
            options.highlighted = collective
            await pilot.press("enter")
            await settle(pilot, lambda: not isinstance(app.screen, CommScreen) and app.view("wrapper").cursor_line == 13
                         and app.last_query == ("wrapper", 13))
            assert chain_text(app).startswith(expected)

            await pilot.press("r")
            await settle(pilot, lambda: isinstance(app.screen, RunPicker))
            table = app.screen.query_one("#run-table")
            assert [str(column.label) for column in table.ordered_columns][4] == "rank"
            assert table.get_row_at(0)[4] == "1/2"

    asyncio.run(scenario())


def line_of(path, needle: str) -> int:
    return next(number for number, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


@pytest.mark.slow
def test_tensor_parallel_collectives_faked_8_ranks_and_a_real_2_rank_job(recordings, gloo_ranks, tmp_path):
    source = EXAMPLES / "distributed" / "llama_tp.py"
    attention_call = line_of(source, "h = x + self.attention(self.attention_norm(x))")
    faked, real = tmp_path / "faked" / ".kernelscope", tmp_path / "real" / ".kernelscope"  # (two workspaces)
    with StoreBackend(faked) as store:
        assert store.write_run(recordings.get_distributed("llama_tp.py:make", world_size=8, train=True)) == 1
        lines = {(faked, 1): next(c for c in store.run(1).distributed().graphs[0].collectives
                                  if c.role == "issue").wrapper_lines[0]}
    with StoreBackend(real) as store:
        for rank in (0, 1):
            store.merge_from(gloo_ranks / f"rank-{rank}")
        lines[real, 2] = next(c for c in store.run(2).distributed().graphs[0].collectives
                              if c.role == "issue").wrapper_lines[0]

    async def scenario(root, run_id: int, ranks: str, label: str):
        app = KernelscopeApp(root, run_id=run_id)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            assert f"run {run_id} · rank {label} · " in str(app.status.render())
            await links_for(pilot, app, "source", attention_call)
            await settle(pilot, lambda: app.view("wrapper").path is not None
                         and app.view("wrapper").path.endswith("0_0_0-forward/wrapper.py"))
            await links_for(pilot, app, "wrapper", lines[root, run_id])
            chain = chain_text(app)
            assert chain.startswith(f"⇄ all_gather_into_tensor over {ranks} ranks"), chain
            assert "layer attention (Attention) · PrepareModuleInput input S(1) -> R" in chain
            assert f"llama_tp.py:{attention_call}" in chain
            await pilot.press("o")
            await settle(pilot, lambda: isinstance(app.screen, CommScreen))
            options = app.screen.query_one("#comm-list")
            texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            if root == real:
                assert "identical code on ranks 0, 1 (every graph's wrapper and kernels)" in texts
            forward = next(text for text in texts if text.startswith("[0/0 forward] compute/communication order"))
            assert forward.count("all_gather_into_tensor") == 2 and forward.count("reduce_scatter_tensor") == 2

    asyncio.run(scenario(faked, 1, "8", "0/8"))
    asyncio.run(scenario(real, 2, "2", "1/2"))
