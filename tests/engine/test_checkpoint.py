"""Activation checkpointing, recorded for real: examples/checkpoint_train.py (each block's
feed-forward under `torch.utils.checkpoint`, non-reentrant) run under `kernelscope run` on
virtual-cuda. The backward graph's copies of the checkpointed forward ops are marked as
recomputed, tied to the forward node and line they recompute, and every front end says so:
`query` (text and --json) on the forward line and on a backward kernel line, `show`, the
dump, and a language-server hover. Recorded once per session (conftest.RecordingCache)."""
from __future__ import annotations

import json

import pytest
from conftest import example_line
from lsp_support import REPO, start_session

import kernelscope.cli
from kernelscope.store import StoreBackend, validate_dump
from kernelscope.store.writing.coverage import compute_coverage

pytestmark = pytest.mark.slow

SCRIPT = "checkpoint_train"


def recorded(recordings):
    return recordings.get_script(SCRIPT, "--steps", "1")


def graphs_by_kind(run) -> dict:
    return {graph.kind: graph for graph in run.graphs}


def cli(capsys, *argv: str) -> str:
    assert kernelscope.cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_backward_copies_of_checkpointed_ops_are_recomputed_from_their_forward_nodes(recordings):
    run = recorded(recordings)
    graphs = graphs_by_kind(run)
    forward, backward = graphs["forward"], graphs["backward"]
    recomputed = [node for node in backward.post_grad_nodes if node.recompute]
    by_why = {why: [node for node in recomputed if node.recompute == why]
              for why in ("activation checkpointing", "partitioner")}
    assert len(by_why["activation checkpointing"]) >= 20, [node.name for node in recomputed]
    assert not any(node.recompute for node in forward.post_grad_nodes)
    block_lines = {example_line(SCRIPT, needle) for needle in ("h = self.up(", "F.gelu(h", "self.down(h)")}
    forward_by_name = {node.name: node for node in forward.post_grad_nodes}
    for node in by_why["activation checkpointing"]:
        twin = forward_by_name[node.recomputed_from]  # every checkpointed op has its forward twin
        assert (twin.target, twin.module_path, twin.source.line) == (node.target, node.module_path, node.source.line)
        assert node.source.line in block_lines and node.module_path.startswith("blocks.")
    # the GELU's tanh is computed twice: once in each graph
    gelu = example_line(SCRIPT, "F.gelu(h")
    assert [n.module_path for n in recomputed if n.target == "aten.tanh.default" and n.source.line == gelu] == [
        "blocks.0", "blocks.1"]
    # the gradient ops of the same line are the backward's own, not recomputations
    assert any(n.source and n.source.line == gelu and not n.recompute
               for n in backward.post_grad_nodes if n.op == "call_function")
    coverage = compute_coverage(run)
    assert coverage["kernel_lines"]["share"] == 1.0 and coverage["wrapper_lines"]["share"] == 1.0, coverage
    for kind in ("forward", "backward"):
        calls = [n for n in graphs[kind].post_grad_nodes if n.op == "call_function"]
        assert all(n.source is not None for n in calls), kind


def test_query_show_dump_say_what_the_backward_recomputes(recordings, tmp_path, capsys):
    run = recorded(recordings)
    store_dir = tmp_path / ".kernelscope"
    with StoreBackend(store_dir) as store:
        run_id = store.write_run(run)
        dumped = store.run(run_id).dump()
    gelu = example_line(SCRIPT, "F.gelu(h")
    text = cli(capsys, "query", f"examples/{SCRIPT}.py:{gelu}", "--store", str(store_dir))
    assert "recomputed in the backward (activation checkpointing): 18 nodes" in text, text
    assert f"tanh recomputed from examples/{SCRIPT}.py:{gelu} (forward node tanh, activation checkpointing)" in text
    answer = json.loads(cli(capsys, "query", f"examples/{SCRIPT}.py:{gelu}", "--json", "--store", str(store_dir)))
    recomputes = answer["recomputed"]
    assert len(recomputes) == 18 and {ref["graph"] for ref in recomputes} == {"0/0 backward"}
    assert {ref["forward_source"] for ref in recomputes} == {f"examples/{SCRIPT}.py:{gelu}"}
    assert all(ref["kernels"] and ref["forward_graph"] == "0/0 forward" for ref in recomputes)
    # the detailed chain marks the same nodes (and only those) in the backward graph
    backward = [chain for chain in answer["graphs"] if chain["graph"]["kind"] == "backward"]
    marked = {node["name"] for chain in backward for node in chain["post_nodes"] if node["recomputed_from"]}
    assert marked == {ref["node"] for ref in recomputes}
    # the checkpoint(...) call reaches every op it recomputes, by call
    call = example_line(SCRIPT, "checkpoint(block, x")
    calls = json.loads(cli(capsys, "query", f"examples/{SCRIPT}.py:{call}", "--json", "--store", str(store_dir)))
    assert {ref["node"] for ref in recomputes} < {ref["node"] for ref in calls["recomputed"]}
    # a backward kernel line that computes a recomputed op says which forward line it recomputes
    kernel = recomputes[0]["kernels"][0]
    kernel_file = next(store_dir.glob(f"runs/{run_id}/graphs/*-backward/kernels/{kernel}.py"))
    line = next(number for number, row in enumerate(kernel_file.read_text().splitlines(), 1)
                if "libdevice.tanh" in row or "tl.tanh" in row or "tanh(" in row)
    at_kernel = cli(capsys, "query", f"{kernel_file}:{line}", "--store", str(store_dir))
    assert f"recomputed from examples/{SCRIPT}.py:{gelu}" in at_kernel, at_kernel
    shown = cli(capsys, "show", str(run_id), "--store", str(store_dir))
    assert "recomputed in the backward" in shown
    assert f"from forward lines examples/{SCRIPT}.py:{example_line(SCRIPT, 'h = self.up(')}-" in shown
    shown_json = json.loads(cli(capsys, "show", str(run_id), "--json", "--store", str(store_dir)))
    counts = {graph["kind"]: graph["recomputed"] for graph in shown_json["graphs"]}
    assert counts["forward"] is None and counts["backward"]["nodes"]["activation checkpointing"] >= 20
    validate_dump(dumped)
    nodes = {graph["kind"]: graph["post_grad_nodes"] for graph in dumped["run"]["graphs"]}
    assert not any(node["recompute"] for node in nodes["forward"])
    tanh = [node for node in nodes["backward"] if node["target"] == "aten.tanh.default" and node["recompute"]]
    assert len(tanh) == 2 and all(node["recomputed_from"] for node in tanh)


async def test_hover_on_the_forward_line_names_what_the_backward_recomputes(recordings, tmp_path):
    run = recorded(recordings)
    root = tmp_path / ".kernelscope"
    with StoreBackend(root) as store:
        store.write_run(run)
    source = REPO / "examples" / f"{SCRIPT}.py"
    gelu = example_line(SCRIPT, "F.gelu(h")
    session = await start_session(REPO, {"store": str(root)})
    try:
        session.open(source)
        hover = (await session.hover(source, gelu - 1)).contents.value
        assert "**recomputed in the backward** (activation checkpointing): 18 nodes in graph 0/0 backward" in hover
        assert f"recomputed from [examples/{SCRIPT}.py:{gelu}](file://" in hover, hover
        plain = (await session.hover(source, example_line(SCRIPT, "self.head(x)") - 1)).contents.value
        # the head is outside every checkpoint: only its weight's transpose is recomputed, a view
        # the partitioner finds cheaper to compute again than to save
        assert "**recomputed in the backward** (partitioner): 1 node" in plain and "activation" not in plain
    finally:
        await session.stop()
