"""FlexAttention's score_mod and mask_mod, recorded for real (virtual-cuda): each is a subgraph
nested in the graph whose flex_attention (or flex_attention_backward) calls it, labelled by
what it is and the user's function, its nodes traced to the function's lines; the Triton
template lines that inline it link to those nodes, so a mask_mod line's query reaches the
template line that applies it. Two recordings, shared by the session (conftest.RecordingCache):
examples/flex_attention.py (a forward with a score_mod only) and examples/flex_attention_train.py
(training: a score_mod and an `and_masks` block mask, forward and backward)."""
from __future__ import annotations

import pytest
from conftest import REPO, example_line

from kernelscope.store import StoreBackend
from kernelscope.store.writing.coverage import compute_coverage

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def train_run(recordings):
    return recordings.get_script("flex_attention_train", "--steps", "1")


@pytest.fixture(scope="module")
def train_store(train_run, tmp_path_factory):
    store = StoreBackend(tmp_path_factory.mktemp("flex-mods") / ".kernelscope")
    return store, store.write_run(train_run)


def mods(run) -> dict[str, list]:
    """label -> the subgraphs of that label (one per layer)."""
    found: dict[str, list] = {}
    for graph in run.graphs:
        if graph.subgraph is not None and graph.subgraph.op.startswith("flex_attention"):
            found.setdefault(graph.subgraph.label, []).append(graph)
    return found


def template_lines(run, kind: str, node: str) -> list:
    """The lines of the graph's FlexAttention template that link to `node` (`sdpa_mask0.ge`)."""
    [graph] = [graph for graph in run.graphs if graph.kind == kind and graph.subgraph is None]
    [template] = [kernel for kernel in graph.kernels if kernel.kind == "template"]
    return [origin for origin in template.lines if node in origin.nodes]


def assert_attributed(run) -> None:
    """Kernel and wrapper lines at the issue's floor; every kernel has nodes; a template's
    lines are its own: the mods' nodes, else the flex_attention node ("template code of"),
    hardly ever the kernel's shared set."""
    coverage = compute_coverage(run)
    assert coverage["kernel_lines"]["share"] >= 0.95, coverage["kernel_lines"]
    assert coverage["wrapper_lines"]["share"] >= 0.95, coverage["wrapper_lines"]
    kernels = [kernel for graph in run.graphs for kernel in graph.kernels]
    assert kernels and all(kernel.nodes for kernel in kernels)
    for graph in run.graphs:
        for template in (kernel for kernel in graph.kernels if kernel.kind == "template"):
            own = [origin for origin in template.lines if not origin.reason.startswith("shared:")]
            assert len(own) >= 0.95 * len(template.lines), (template.name, len(own), len(template.lines))
            code = {node for origin in own if origin.reason == "template code of" for node in origin.nodes}
            assert code and all(node.startswith("flex_attention") for node in code), code


def test_a_score_mod_is_a_subgraph_whose_nodes_reach_the_template_lines(recordings):
    run = recordings.get("flex_attention")
    assert_attributed(run)
    bias_line = example_line("flex_attention", "bias = (q_idx - kv_idx)")
    where_line = example_line("flex_attention", "return torch.where(")
    [score] = mods(run)[f"flex_attention score_mod causal_bias (flex_attention.py:{where_line})"]
    [parent] = [graph for graph in run.graphs if graph.subgraph is None]
    assert score.subgraph.parent == parent.key and score.subgraph.role == "score_mod"
    assert score.subgraph.call_sites == ["flex_attention"]
    lines = {node.name: node.source.line for node in score.post_grad_nodes if node.op == "call_function"}
    assert lines["sub"] == lines["mul"] == bias_line and lines["ge"] == lines["where"] == where_line
    [compare] = [origin for origin in template_lines(run, "inference", "sdpa_score0.ge") if ">=" in origin.text]
    assert compare.text.strip().endswith(">= tmp1") and compare.reason == "computes"
    [select] = template_lines(run, "inference", "sdpa_score0.where")
    assert "tl.where(" in select.text


def test_training_records_every_mod_of_forward_and_backward(train_run):
    assert_attributed(train_run)
    alibi = example_line("flex_attention_train", "score = score + slopes[h]")
    causal = example_line("flex_attention_train", "return q_idx >= kv_idx")
    found = {label: len(graphs) for label, graphs in mods(train_run).items()}
    assert found == {  # two layers, each its own subgraphs
        f"flex_attention score_mod alibi_soft_cap (flex_attention_train.py:{alibi})": 2,
        f"flex_attention mask_mod causal, sliding_window (flex_attention_train.py:{causal})": 2,
        f"flex_attention_backward score_mod (backward) alibi_soft_cap (flex_attention_train.py:{alibi})": 2,
        f"flex_attention_backward score_mod gradient (backward) alibi_soft_cap (flex_attention_train.py:{alibi})": 2,
        f"flex_attention_backward mask_mod (backward) causal, sliding_window (flex_attention_train.py:{causal})": 2,
    }
    [first_mask] = [graph for graph in mods(train_run)[f"flex_attention mask_mod causal, sliding_window "
                                                        f"(flex_attention_train.py:{causal})"]
                    if graph.subgraph.name == "sdpa_mask0"]
    [ge] = [node for node in first_mask.post_grad_nodes if node.name == "ge"]
    assert (ge.source.line, ge.module_path) == (causal, "blocks.0")  # the layer whose flex_attention runs it
    for kind, mask in (("forward", "sdpa_mask0"), ("backward", "mask_graph0")):
        compares = [origin for origin in template_lines(train_run, kind, f"{mask}.ge") if ">=" in origin.text]
        assert compares and all(origin.reason == "computes" for origin in compares), kind
    tanh = [origin for origin in template_lines(train_run, "backward", "joint_graph0.tanh")]
    assert tanh and "libdevice.tanh(" in tanh[0].text  # the gradient's template recomputes the soft cap


def test_a_mask_mod_line_queries_down_to_the_template_line_and_back(train_store):
    store, run_id = train_store
    causal = example_line("flex_attention_train", "return q_idx >= kv_idx")
    run = store.run(run_id)
    answer = run.query(str(REPO / "examples" / "flex_attention_train.py"), causal, "down", detail=True)
    kernel_lines = [(kernel.name, line) for chain in answer.graphs for kernel in chain.kernels
                    for line in kernel.lines]
    compares = [(name, line) for name, line in kernel_lines if line.text.strip().endswith(">= tmp16")]
    assert {name.startswith("triton_tem_fused") for name, _ in compares} == {True}
    assert len({name for name, _ in compares}) == 2  # the forward's template and the backward's
    name, line = compares[0]
    up = run.query(run.absolute_path(line.file), line.line, "up")
    sources = {(source.file, source.line) for chain in up.graphs for source in chain.sources}
    assert ("examples/flex_attention_train.py", causal) in sources


TWO_SCORE_MODS = '''import torch
from torch import nn
from torch.nn.attention.flex_attention import flex_attention


def near_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.5


def far_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.25


class TwoBiases(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, q, k, v):
        near = flex_attention(q, k, v, score_mod=near_bias)
        far = flex_attention(self.proj(near), k, v, score_mod=far_bias)
        return far


def make():
    torch.manual_seed(0)
    return TwoBiases(), tuple(torch.randn(1, 2, 128, 64) for _ in range(3))
'''


def test_two_score_mods_with_the_same_ops_each_take_their_own_lines(tmp_path):
    """Two score_mods of the same ops (add, sub, mul) in one graph: each subgraph's nodes
    reach its own function's lines — Dynamo's copy of the function is found through the
    pre-grad flex_attention call, not by which copy has the most ops in common (which ties)."""
    from kernelscope.engine.recorder import RecordOptions, record_factory

    model = tmp_path / "two_biases.py"
    model.write_text(TWO_SCORE_MODS)
    run = record_factory(f"{model}:make", RecordOptions(device="virtual-cuda", workspace=tmp_path))
    lines = {name: number for number, text in enumerate(TWO_SCORE_MODS.splitlines(), 1)
             for name in ("near_bias", "far_bias") if f"def {name}" in text}
    found = {graph.subgraph.label: graph for graph in run.graphs
             if graph.subgraph is not None and graph.subgraph.role == "score_mod"}
    assert set(found) == {f"flex_attention score_mod near_bias (two_biases.py:{lines['near_bias'] + 1})",
                          f"flex_attention score_mod far_bias (two_biases.py:{lines['far_bias'] + 1})"}, set(found)
    for label, graph in found.items():
        function = "near_bias" if "near_bias" in label else "far_bias"
        calls = [node for node in graph.post_grad_nodes if node.op == "call_function"]
        assert calls and {node.source.line for node in calls} == {lines[function] + 1}
        assert all(node.source_via.startswith("Dynamo's trace of the function (node ") for node in calls
                   if node.source_via.startswith("Dynamo"))


def test_every_mod_of_training_takes_its_own_dynamo_copy(train_run):
    """Forward and backward, the score_mod, its gradient and the mask_mod: each subgraph's
    copy of the function is found through its call's pre-grad node, never by op counts."""
    vias = {node.source_via for graph in train_run.graphs if graph.subgraph is not None
            for node in graph.post_grad_nodes if node.source_via.startswith("Dynamo's trace")}
    assert vias and not any("most ops in common" in via for via in vias), vias
    roles = {graph.subgraph.role for graph in train_run.graphs if graph.subgraph is not None
             for node in graph.post_grad_nodes if node.source_via.startswith("Dynamo's trace of the function (")}
    assert roles >= {"score_mod", "score_mod gradient"}, roles
