"""FlexAttention in a program on the virtual GPU, run eagerly (no Inductor compile).

Each test runs its code inside `cuda_program()`, as `kernelscope run` runs a script:
`create_block_mask(..., device="cuda")` makes its BlockMask on the virtual GPU
(program_results: vmap's results), `flex_attention` runs forward and backward on the CPU
with real values (program_hops: the higher-order op's body on CPU aliases, its subgraphs
naming the CPU), checked against plain attention computed outside the program, and a
compiled frame that enters FlexAttention's own torch-function mode leaves the program
its mode (cuda_program). The recording of a whole training script with FlexAttention's
Triton templates for cuda is test_flex_attention_program.py.
"""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
flex = pytest.importorskip("torch.nn.attention.flex_attention")

from kernelscope.engine.devices.cuda_program import cuda_program  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class  # noqa: E402

B, H, S, D = 2, 2, 256, 16
DOCUMENT = torch.tensor([0] * 100 + [1] * 100 + [2] * 56)


@pytest.fixture
def program():
    with cuda_program():
        yield


def on_gpu(tensor) -> bool:
    return type(tensor) is tensor_class() and tensor.device == torch.device("cuda", 0)


def causal(b, h, q, kv):
    return q >= kv


def local(b, h, q, kv):
    return (q - kv).abs() < 64


def block_mask_tensors(mask):
    return [mask.kv_num_blocks, mask.kv_indices, mask.full_kv_num_blocks, mask.full_kv_indices, mask.q_num_blocks,
            mask.q_indices]


MASKS = {
    "causal": lambda document: causal,
    "and_masks": lambda document: flex.and_masks(causal, local),
    "or_masks": lambda document: flex.or_masks(causal, local),
    "noop_mask": lambda document: flex.noop_mask,
    "a document mask (a captured cuda tensor)": lambda document: flex.and_masks(
        causal, lambda b, h, q, kv: document[q] == document[kv]),
}


@pytest.mark.parametrize("name", MASKS)
def test_create_block_mask_makes_it_on_the_virtual_gpu(name):
    expected = flex.create_block_mask(MASKS[name](DOCUMENT), B, H, S, S, device="cpu")
    with cuda_program():
        mask = flex.create_block_mask(MASKS[name](DOCUMENT.to("cuda")), B, H, S, S, device="cuda")
        dense = flex.create_mask(MASKS[name](DOCUMENT.to("cuda")), B, H, S, S, device="cuda")
        assert all(on_gpu(tensor) for tensor in block_mask_tensors(mask)), name
        assert on_gpu(dense) and on_gpu(mask.to_dense())
    for got, want in zip(block_mask_tensors(mask), block_mask_tensors(expected)):
        assert torch.equal(got.cpu(), want), name  # the same mask as the CPU's


def test_vmap_keeps_what_it_makes_on_the_virtual_gpu(program):
    x = torch.arange(6.0, device="cuda")
    host = torch.arange(6.0)
    assert on_gpu(torch.vmap(lambda v: v * 2)(x)) and on_gpu(torch.func.vmap(torch.outer)(x[:, None], x[:, None]))
    assert type(torch.vmap(lambda v: v * 2)(host)) is torch.Tensor  # a CPU program's vmap stays on the CPU
    assert torch.equal(torch.vmap(lambda v: v * 2)(x).cpu(), host * 2)
    result, passed = torch.vmap(lambda v, w: (v + 1, w), in_dims=(0, None), out_dims=(0, None))(x, host)
    assert on_gpu(result) and passed is host and type(passed) is torch.Tensor  # an input keeps its class


def test_a_compiled_frame_that_enters_a_mode_keeps_the_programs(program):
    """Dynamo sets the whole mode stack back after a graph that entered a mode (FlexAttention's
    `TransformGetItemToIndex` in create_block_mask); the program mode is not in Dynamo's
    symbolic stack, and before cuda_program put it back the program lost it."""
    mode_class = type(torch._C._get_function_stack_at(0))
    mask = torch.compile(flex.create_block_mask, backend="eager")(causal, 1, 1, S, S, device="cuda")
    assert mask.shape == (1, 1, S, S)
    assert torch._C._len_torch_function_stack() == 1 and type(torch._C._get_function_stack_at(0)) is mode_class
    assert on_gpu(torch.zeros(2, device="cuda"))


def _plain_attention(q, k, v, bias, keep):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if bias is not None:
        scores = scores + bias
    return torch.softmax(scores.masked_fill(~keep, -math.inf), -1) @ v


def test_forward_and_backward_have_real_values_and_gradients(program):
    """A causal document mask and a relative-position bias the score_mod captures (a leaf that
    requires grad): the output and every gradient, the bias's included, are plain attention's."""
    torch.manual_seed(0)
    document = DOCUMENT.to("cuda")
    q, k, v = (torch.randn(B, H, S, D, device="cuda", requires_grad=True) for _ in range(3))
    bias = torch.randn(2 * S - 1, device="cuda", requires_grad=True)

    def relative(score, b, h, q_idx, kv_idx):
        return score + bias[q_idx - kv_idx + S - 1]

    mask = flex.create_block_mask(flex.and_masks(causal, lambda b, h, q, kv: document[q] == document[kv]), None,
                                  None, S, S, device="cuda")
    out = flex.flex_attention(q, k, v, score_mod=relative, block_mask=mask)
    (out * out).sum().backward()
    assert on_gpu(out) and all(on_gpu(t.grad) for t in (q, k, v, bias))

    index = torch.arange(S)
    keep = (index[:, None] >= index[None, :]) & (DOCUMENT[:, None] == DOCUMENT[None, :])
    leaves = [t.detach().cpu().requires_grad_() for t in (q, k, v, bias)]
    expected = _plain_attention(*leaves[:3], leaves[3][index[:, None] - index[None, :] + S - 1], keep)
    (expected * expected).sum().backward()
    assert torch.allclose(out.detach().cpu(), expected.detach(), atol=1e-5)
    for tensor, leaf in zip((q, k, v, bias), leaves):
        assert leaf.grad.abs().sum() > 0
        assert torch.allclose(tensor.grad.cpu(), leaf.grad, atol=1e-4, rtol=1e-4)


def test_without_a_block_mask_under_autocast(program):
    """No BlockMask: FlexAttention's noop_mask, captured on fake cuda tensors, makes its
    `new_ones(..., device=cuda:0)`; under autocast the op runs its body again below the
    program mode, where that device now names the CPU (program_hops)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, D, device="cuda", requires_grad=True) for _ in range(3))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = flex.flex_attention(q, k, v, score_mod=lambda score, b, h, q_idx, kv_idx: torch.tanh(score))
    out.float().sum().backward()
    assert on_gpu(out) and out.dtype == torch.bfloat16 and on_gpu(q.grad)
    host = [t.detach().cpu() for t in (q, k, v)]
    scores = torch.tanh(host[0] @ host[1].transpose(-2, -1) / math.sqrt(D))
    expected = torch.softmax(scores, -1) @ host[2]
    assert torch.allclose(out.float().cpu(), expected, atol=3e-2)
    assert torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0
