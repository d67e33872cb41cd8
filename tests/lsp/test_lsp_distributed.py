"""Distributed jobs in the language server, driven by a real LSP client (pytest-lsp): a
wrapper line that issues or waits on a collective, and the model line that needed it,
answer the op, group, bytes, model line, layer, ParallelStyle and placements; go to
definition from the collective's wrapper line lands on the model line; a code lens sits
on that model line; the status and the run list carry the rank. Fast on a synthetic rank
(the MLP with an all_reduce); slow on the Llama TP block as rank 0 of a faked 8-rank job
and on a real 2-rank gloo job under torchrun."""
from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import REPO, _plain, start_session, uri
from synthetic_runs import FC2_LINE, MLP_PATH, rank_run, workspace  # noqa: F401 - fixture
from synthetic_runs import RANK_FW_WRAPPER as FW_WRAPPER

from kernelscope.store import StoreBackend

EXAMPLES = REPO / "examples" / "distributed"


def line_of(path: Path, needle: str) -> int:
    """1-based."""
    return next(number for number, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


async def test_collective_lines_answer_model_line_layer_and_style(workspace):
    with StoreBackend(workspace / ".kernelscope") as store:
        store.write_run(rank_run(workspace, 1))
    wrapper = workspace / ".kernelscope" / FW_WRAPPER.format(run=1)
    model = workspace / MLP_PATH
    session = await start_session(workspace, {})
    try:
        session.open(model)
        hover = (await session.hover(wrapper, 13 - 1)).contents.value
        assert "**collectives**" in hover
        assert "issue all_reduce (sum) group 0 over 2 ranks in [0/0 forward], 1 KiB" in hover
        assert f"model line: {MLP_PATH}:{FC2_LINE} in forward  | return self.fc2(h)" in hover
        assert "layer: fc2 (Linear)" in hover and "placements: P(sum) -> R" in hover
        assert "issued by: RowwiseParallel output at torch/distributed/tensor/parallel/style.py:298" in hover
        assert "rank 1/2" in hover.splitlines()[0]  # the run's label names the rank
        on_model = (await session.hover(model, FC2_LINE - 1)).contents.value
        assert "issue all_reduce (sum) group 0 over 2 ranks" in on_model and "layer: fc2 (Linear)" in on_model
        no_collective = (await session.hover(model, FC2_LINE - 2)).contents.value  # the GELU line
        assert "collectives" not in no_collective
        [target] = await session.definition(wrapper, 13 - 1)
        assert (target.uri, target.range.start.line) == (uri(model), FC2_LINE - 1)
        lenses = [lens for lens in await session.lenses(uri(model)) if lens.command.title.startswith("⇄")]
        assert [(lens.range.start.line, lens.command.title) for lens in lenses] == [
            (FC2_LINE - 1, "⇄ all_reduce over 2 ranks (fc2 · RowwiseParallel output P(sum) -> R)")]
        assert (await session.wait_for_status(lambda status: status.get("runId") == 1))["rank"] == "1/2"
        runs = _plain(await session.command("kernelscope.runs"))
        assert [run["rank"] for run in runs["runs"]] == [{"rank": 1, "worldSize": 2, "backend": "gloo",
                                                          "job": "torchrun:abc"}]
        overview = _plain(await session.request("kernelscope/runOverview", {}))
        distributed = overview["distributed"]
        assert overview["run"]["rank"] == {"rank": 1, "worldSize": 2}
        assert distributed["rank"]["label"] == "rank 1 of 2 (gloo)"
        [graph] = [graph for graph in distributed["graphs"] if graph["collectives"]]
        assert graph["graph"] == "0/0 forward" and "all_reduce" in graph["order"]
        assert graph["collectives"][0]["module"] == "fc2"
        assert graph["collectives"][0]["modelLine"] == FC2_LINE - 1
        assert any(step["kind"] == "issue" and step["line"] == 13 - 1 for step in graph["steps"])
    finally:
        await session.stop()


@pytest.mark.slow
async def test_tensor_parallel_collectives_faked_8_ranks_and_a_real_2_rank_job(recordings, gloo_ranks, tmp_path):
    """The Llama TP block: rank 0 of a faked 8-rank job (run 1) and both ranks of a real
    2-rank gloo job (runs 2, 3): each wrapper line that issues a collective answers the
    model line and the layer, and go to definition lands on that model line."""
    source = EXAMPLES / "llama_tp.py"
    attention_call = line_of(source, "h = x + self.attention(self.attention_norm(x))")
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        assert store.write_run(recordings.get_distributed("llama_tp.py:make", world_size=8, train=True)) == 1
        for rank in (0, 1):
            store.merge_from(gloo_ranks / f"rank-{rank}")
        graphs = {run_id: store.run(run_id).distributed().graphs[0] for run_id in (1, 2, 3)}
    session = await start_session(REPO, {"store": str(root)})
    try:
        for run_id, graph in graphs.items():
            first = next(c for c in graph.collectives if c.role == "issue")
            assert (first.op, first.module) == ("all_gather_into_tensor", "attention")
            wrapper = root / graph.wrapper_file
            hover = (await session.hover(wrapper, first.wrapper_lines[0] - 1)).contents.value
            size = 8 if run_id == 1 else 2
            assert "issue all_gather_into_tensor group" in hover and f"over {size} ranks" in hover, hover
            assert f"llama_tp.py:{attention_call} in forward" in hover and "layer: attention (Attention)" in hover
            assert "issued by: PrepareModuleInput input" in hover and "placements: S(1) -> R" in hover
            rank = "rank 0/8" if run_id == 1 else f"rank {run_id - 2}/2"
            assert rank in hover.splitlines()[0], hover.splitlines()[0]
            targets = await session.definition(wrapper, first.wrapper_lines[0] - 1)
            assert [(t.uri, t.range.start.line) for t in targets] == [(uri(source), attention_call - 1)]
            wait = next(step.line for step in graph.order if step.kind == "wait")  # the line that waits on it
            waits = (await session.hover(wrapper, wait - 1)).contents.value
            assert "wait wait_tensor group" in waits and "layer: attention (Attention)" in waits, waits
            assert f"waits on: all_gather_into_tensor at {graph.wrapper_file}:{first.wrapper_lines[0]}" in waits
        session.open(source)
        on_model = (await session.hover(source, attention_call - 1)).contents.value  # the latest run: rank 1 of 2
        assert "issue all_gather_into_tensor" in on_model and "layer: attention (Attention)" in on_model
        runs = _plain(await session.command("kernelscope.runs"))
        assert sorted((run["rank"]["rank"], run["rank"]["worldSize"]) for run in runs["runs"]) == [(0, 2), (0, 8),
                                                                                                   (1, 2)]
        overview = _plain(await session.request("kernelscope/runOverview", {"runId": 3}))
        assert overview["distributed"]["code"] == ["identical code on ranks 0, 1 (every graph's wrapper and kernels)"]
        forward = overview["distributed"]["graphs"][0]
        assert forward["order"].count("all_gather_into_tensor") == 2
    finally:
        await session.stop()
