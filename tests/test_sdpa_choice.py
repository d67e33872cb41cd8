"""virtual-cuda's scaled_dot_product_attention against what a real H100 did.

bench/sdpa_choices.py recorded, on an H100 with torch 2.11, which backend the GPU
picks for 2,400 input combinations and which ATen ops the op decomposes into
(forward and backward). virtual-cuda cannot ask a GPU; these tests hold its rule
and its decomposition to that record.
"""
from __future__ import annotations

import json
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import sdpa_choices  # noqa: E402  (the recording script: its case builder is reused here)

RECORD = json.loads((REPO / "bench/results/sdpa_choices_h100_torch2.11.json").read_text())
BACKEND_NAMES = {"efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH"}


def test_the_record_covers_every_backend_the_rule_can_return():
    assert RECORD["capability"] == "9.0" and RECORD["torch"].startswith("2.11")
    assert {case["backend"] for case in RECORD["cases"]} == set(BACKEND_NAMES.values())


def _recorded_torch(record) -> tuple[int, int]:
    major, minor = record["torch"].split(".")[:2]
    return int(major), int(minor)


def test_backend_rule_matches_every_recorded_choice():
    import torch

    from kernelscope.engine.devices import sdpa_choice

    wrong = []
    for case in RECORD["cases"]:
        query, key, value, kwargs = sdpa_choices.make_case(
            torch, case["dtype"], case["mask"], case["head_dim"], case["requires_grad"], case["dropout"],
            case["gqa"], case["layout"], case["seq"], device="cpu")
        call = sdpa_choice.SdpaCall.of(query, key, value, kwargs["attn_mask"], kwargs["dropout_p"],
                                       kwargs["is_causal"], kwargs["enable_gqa"], grad_enabled=case["requires_grad"])
        chosen = sdpa_choice.choose(call, sdpa_choice.H100, sdpa_choice.Settings(), _recorded_torch(RECORD))
        if BACKEND_NAMES[chosen] != case["backend"]:
            wrong.append((case, chosen))
    assert len(RECORD["cases"]) == 2400 and wrong == []


def _without_getitems(ops):
    return [op for op in ops if "getitem" not in op]


@pytest.mark.parametrize("recorded", RECORD["decompositions"],
                         ids=lambda c: f"{c['dtype']}-{c['mask']}-seq{c['seq']}-{'grad' if c['requires_grad'] else 'nograd'}")
def test_cpu_capture_decomposes_as_the_gpu_did(recorded):
    import torch

    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    query, key, value, kwargs = sdpa_choices.make_case(
        torch, recorded["dtype"], recorded["mask"], 64, recorded["requires_grad"], 0.0, False, "transposed",
        recorded["seq"], device="cpu")
    mask = kwargs.pop("attn_mask")

    def forward(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)

    def forward_backward(q, k, v, m):
        return torch.autograd.grad(forward(q, k, v, m).sum(), (q, k, v))

    with attention_as_on_cuda(), (torch.enable_grad() if recorded["requires_grad"] else torch.no_grad()):
        ops = sdpa_choices.traced_ops(torch, forward_backward if recorded["requires_grad"] else forward,
                                      query, key, value, mask)
    assert _without_getitems(ops) == _without_getitems(recorded["ops"])


def test_outside_the_context_cpu_attention_is_untouched():
    import torch

    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    query = torch.randn(2, 4, 8, 16)
    with attention_as_on_cuda():
        pass
    ops = sdpa_choices.traced_ops(torch, torch.nn.functional.scaled_dot_product_attention, query, query, query)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in ops


@pytest.mark.parametrize("dtype, mask", [("float32", "bool"), ("float32", "float"), ("float32", "causal"),
                                         ("bfloat16", "float"), ("bfloat16", "none")])
def test_cpu_stand_ins_compute_attention_and_its_gradients(dtype, mask):
    """The stand-ins run the captured graph on the CPU: they must agree with plain attention."""
    import torch

    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    torch.manual_seed(0)
    query, key, value, kwargs = sdpa_choices.make_case(torch, dtype, mask, 64, True, 0.0, False, "transposed",
                                                       33, device="cpu")
    with attention_as_on_cuda():
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, **kwargs)
        grads = torch.autograd.grad(output.float().square().sum(), (query, key, value))
    reference = torch.nn.functional.scaled_dot_product_attention(query, key, value, **kwargs)
    expected = torch.autograd.grad(reference.float().square().sum(), (query, key, value))
    tolerance = 1e-4 if dtype == "float32" else 5e-2
    assert torch.allclose(output.float(), reference.float(), atol=tolerance, rtol=tolerance)
    for got, want in zip(grads, expected):
        assert torch.allclose(got.float(), want.float(), atol=tolerance * 10, rtol=tolerance * 10)
