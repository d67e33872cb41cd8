"""`kernelscope run` of a FlexAttention training program under virtual-cuda: recorded as a GPU compiles it.

examples/flex_attention_train.py (written for a GPU: a block mask made on "cuda" with
`create_block_mask`, `flex_attention` with a score_mod that captures learned ALiBi slopes
and soft-caps, a compiled model trained with AdamW) is recorded once for this module, in
a subprocess as a user runs it: the forward and backward graphs hold Inductor's
FlexAttention Triton templates for cuda, and the printed losses and gradients are those
of plain attention computed on the CPU. A second script compiles `create_block_mask`
itself. The eager pieces, in process, are test_flex_attention_eager.py.
"""
from __future__ import annotations

import importlib.util
import math
import re

import pytest
from conftest import EXAMPLES
from program_runs import kernelscope, recorded_run, recorded_text

pytestmark = pytest.mark.slow

STEPS = 3


@pytest.fixture(scope="module")
def flex_train(tmp_path_factory):
    """examples/flex_attention_train.py recorded: (store, the script's stdout)."""
    store = tmp_path_factory.mktemp("flex-train") / ".kernelscope"
    done = kernelscope("run", "examples/flex_attention_train.py", "--store", str(store), "--", "--steps", str(STEPS))
    assert done.returncode == 0, done.stderr[-3000:]
    return store, done.stdout


def _kernel_text(store, graph, kernel):
    return (store / "runs" / "1" / kernel["file"]["path"]).read_text()


def test_forward_and_backward_hold_flex_attentions_triton_templates_for_cuda(flex_train):
    store, _ = flex_train
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda" and run["recompiles"] == [] and run["graph_breaks"] == []
    graphs = {graph["kind"]: graph for graph in run["graphs"] if graph["subgraph"] is None}  # not its mods
    assert sorted(graphs) == ["backward", "forward"]
    for kind, op in (("forward", "flex_attention"), ("backward", "flex_attention_backward")):
        graph = graphs[kind]
        post_grad, wrapper = recorded_text(store, graph, "post_grad_file"), recorded_text(store, graph, "wrapper_file")
        assert f"torch.ops.higher_order.{op}(" in post_grad, kind
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), kind  # every value on cuda
        assert "device_str='cuda'" in wrapper and "empty_strided_cpu(" not in wrapper, kind
        [template] = [kernel for kernel in graph["kernels"]
                      if kernel["name"].startswith("triton_tem_fused") and op in kernel["name"]]
        source = _kernel_text(store, graph, template)
        assert "@triton_heuristics.template(" in source and "DeviceProperties(type='cuda'" in source, kind
        assert "cc=90" in source and "libdevice.tanh(" in source, kind  # sm_90; the score_mod's soft cap inlined
    # the backward template adds the score_mod's gradient into the captured ALiBi slopes
    [backward_template] = [kernel for kernel in graphs["backward"]["kernels"]
                           if kernel["name"].startswith("triton_tem_fused")]
    assert "tl.atomic_add(" in _kernel_text(store, graphs["backward"], backward_template)
    # the flex nodes' lines are the program's attention call
    forward_nodes = [node for node in graphs["forward"]["post_grad_nodes"]
                     if node["target"] == "torch.ops.higher_order.flex_attention"]
    assert forward_nodes and all(node["source"]["file"] == "examples/flex_attention_train.py"
                                 for node in forward_nodes)


def _reference_steps():
    """The example's model trained on the CPU with plain attention in place of flex_attention:
    the same causal sliding-window mask, ALiBi slopes and soft cap, the same seed and data."""
    import torch
    import torch.nn.functional as F

    spec = importlib.util.spec_from_file_location("flex_attention_train", EXAMPLES / "flex_attention_train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def plain_attention(self, q, k, v, block_mask):
        index = torch.arange(q.size(-2))
        distance = index[None, :] - index[:, None]
        keep = (distance <= 0) & (-distance < example.WINDOW)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + self.alibi[:, None, None] * distance
        scores = example.SOFT_CAP * torch.tanh(scores / example.SOFT_CAP)
        return torch.softmax(scores.masked_fill(~keep, -math.inf), -1) @ v

    torch.manual_seed(0)
    model = example.TinyLM()
    model.blocks[0].__class__.attention = plain_attention
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tokens = torch.randint(0, 256, (4, 257))
    steps = []
    for _ in range(STEPS):
        logits = model(tokens[:, :-1], None)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        loss.backward()
        steps.append((loss.item(), torch.linalg.vector_norm(model.blocks[0].alibi.grad).item()))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return steps


def test_the_printed_losses_and_gradients_are_plain_attentions(flex_train):
    """Each step's loss and the ALiBi slopes' gradient norm, printed by the program, are those
    of plain attention trained on the CPU: the forward ran with the mask and the score_mod,
    and the backward's gradients (the captured slopes' included) moved AdamW the same way."""
    _, stdout = flex_train
    assert "block mask on cuda:0" in stdout
    printed = [(float(loss), float(grad)) for loss, grad in
               re.findall(r"step \d+: loss ([0-9.]+)  alibi grad ([0-9.]+)", stdout)]
    assert len(printed) == STEPS
    expected = _reference_steps()
    for (loss, grad), (want_loss, want_grad) in zip(printed, expected):
        assert loss == pytest.approx(want_loss, abs=1e-4)
        assert grad > 0 and grad == pytest.approx(want_grad, rel=1e-3, abs=1e-6)
    assert printed[-1][0] < printed[0][0]  # it trains


def test_a_compiled_create_block_mask_is_on_the_virtual_gpu(tmp_path):
    """torch.compile(create_block_mask), as FlexAttention's docs suggest for large masks: its
    graph unbatches the mask_mod's vmap itself, and it enters FlexAttention's own mode."""
    script = tmp_path / "compiled_mask.py"
    script.write_text(
        "import torch\n"
        "from torch.nn.attention.flex_attention import create_block_mask, flex_attention\n\n"
        "def causal(b, h, q, kv):\n"
        "    return q >= kv\n\n"
        "mask = torch.compile(create_block_mask)(causal, None, None, 256, 256, device='cuda')\n"
        "print('mask', mask.kv_num_blocks.device, mask.to_dense().flatten().tolist())\n"
        "q = torch.randn(1, 2, 256, 16, device='cuda')\n"
        "print('out', torch.compile(flex_attention)(q, q, q, block_mask=mask).device)\n")
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", str(script), "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mask cuda:0 [1, 0, 1, 1]" in done.stdout and "out cuda:0" in done.stdout
    graphs = recorded_run(store)["graphs"]
    kinds = sorted(graph["kind"] for graph in graphs if graph["subgraph"] is None)
    assert kinds == ["inference", "inference"]  # the mask's graph and attention's
    labels = [graph["subgraph"]["label"] for graph in graphs if graph["subgraph"] is not None]
    assert "flex_attention mask_mod causal (compiled_mask.py:5)" in labels, labels  # attention's mask_mod
