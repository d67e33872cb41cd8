"""Activation checkpointing around FlexAttention in a GPU program under virtual-cuda.

tests/data/checkpointed_flex_train.py wraps its blocks as torchtitan does (`checkpoint_wrapper`,
full or with a selective policy, then `torch.compile` per block; or the checkpoint around an
eager block calling `torch.compile(flex_attention)`). Each is recorded in a subprocess as a
user runs it. Before fake_cuda's factories-in-a-backward rule was limited to the compile's own
fake mode, the backward's recomputation failed: FlexAttention's eager autograd fakes its
score_mod's inputs on the CPU, inside an autograd node, and they came out on cuda.
"""
from __future__ import annotations

import re

import pytest
from program_runs import kernelscope, recorded_run, recorded_text

pytestmark = pytest.mark.slow

SCRIPT = "tests/data/checkpointed_flex_train.py"
MODES = {"none": ("--ac", "none"), "full": ("--ac", "full"), "selective": ("--ac", "selective"),
         "selective-eager": ("--ac", "selective", "--eager-checkpoint")}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{mode: (store, stdout)}, each mode recorded once."""
    runs = {}
    for mode, args in MODES.items():
        store = tmp_path_factory.mktemp(f"checkpointed-{mode}") / ".kernelscope"
        done = kernelscope("run", SCRIPT, "--store", str(store), "--", *args)
        assert done.returncode == 0, (mode, done.stderr[-3000:])
        runs[mode] = store, done.stdout
    return runs


def _values(stdout):
    return [float(value) for value in re.findall(r"(?:loss|norm) (-?\d+\.\d+)", stdout)]


def test_checkpointed_steps_print_the_values_of_the_uncheckpointed_program(recorded):
    reference = _values(recorded["none"][1])
    assert len(reference) == 4  # two steps: loss and gradient norm
    for mode in ("full", "selective", "selective-eager"):
        assert _values(recorded[mode][1]) == pytest.approx(reference, rel=1e-4), mode


def _backward_post_grads(store):
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda" and run["graph_breaks"] == []
    # the blocks' own backward graphs, not FlexAttention's score_mod/mask_mod subgraphs inside them
    return [recorded_text(store, graph, "post_grad_file") for graph in run["graphs"]
            if graph["kind"] == "backward" and graph["subgraph"] is None]


def test_the_compiled_blocks_backward_recomputes_as_the_policy_says(recorded):
    matmuls = {}
    for mode in ("none", "full", "selective"):
        backwards = _backward_post_grads(recorded[mode][0])
        assert len(backwards) == 2, mode  # one per block
        for post_grad in backwards:
            assert "flex_attention_backward(" in post_grad and "cuda:0" in post_grad, mode
            recomputed = "torch.ops.higher_order.flex_attention(" in post_grad
            assert recomputed == (mode != "none"), mode
        matmuls[mode] = backwards[0].count("aten.mm.default(")
    # the selective policy saves the matmuls that full checkpointing recomputes
    assert matmuls["selective"] < matmuls["full"]
