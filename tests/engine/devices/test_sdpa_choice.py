"""virtual-cuda's scaled_dot_product_attention against what a real H100 did.

bench/sdpa_choices.py recorded, on an H100 with torch 2.11, which backend the GPU
picks for 2,400 input combinations and which ATen ops the op decomposes into
(forward and backward); run again, it also records one call per check of the rule
(`checks`) and every call the model suite makes (`suite_calls`, with --suite).
virtual-cuda cannot ask a GPU; these tests hold its rule (sdpa_choice.py, a port of
ATen's select_sdp_backend) and its decomposition to that record, and to the decisions
the H100 made for the model suite (bench/suite.py --compare), reproduced small in
tests/data/sdpa_suite_shapes.py.
"""
from __future__ import annotations

import contextlib
import json
import sys
import warnings

import pytest
from conftest import DATA, REPO

sys.path.insert(0, str(REPO / "bench"))
import sdpa_choices  # noqa: E402  (the recording script: its case builder is reused here)

RECORD = json.loads((REPO / "bench/results/sdpa_choices_h100_torch2.11.json").read_text())
BACKEND_NAMES = {"efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH",
                 "flash": "FLASH_ATTENTION"}
SHAPES = DATA / "sdpa_suite_shapes.py"


def test_the_record_covers_the_backends_of_its_grid():
    assert RECORD["capability"] == "9.0" and RECORD["torch"].startswith("2.11")
    assert {case["backend"] for case in RECORD["cases"]} == set(BACKEND_NAMES.values()) - {"FLASH_ATTENTION"}


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


@pytest.mark.parametrize(
    "recorded", RECORD["decompositions"],
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


# -- the rule on the model suite's calls --------------------------------------------------


def _info(meta):
    from kernelscope.engine.devices import sdpa_choice

    if meta is None:
        return None
    return sdpa_choice.TensorInfo(tuple(meta["shape"]), tuple(meta["stride"]), meta["dtype"], meta["requires_grad"],
                                  meta["storage_offset"], meta["element_size"])


def _call(meta):
    from kernelscope.engine.devices import sdpa_choice

    return sdpa_choice.SdpaCall(_info(meta["query"]), _info(meta["key"]), _info(meta["value"]),
                                _info(meta["attn_mask"]), meta["dropout"], meta["is_causal"], meta["enable_gqa"],
                                meta["grad_enabled"])


def _qkv(head, dtype="float32", offsets=(0, 0, 0), heads=(4, 4, 4), grad=False):
    """(batch 2, seq 32) query/key/value metadata laid out as Hugging Face's (batch, seq, heads, dim) views."""
    width = sum(heads) * head
    return [dict(shape=[2, h, 32, head], stride=[32 * width, head, width, 1], dtype=dtype, requires_grad=grad,
                 storage_offset=offset, element_size=4 if dtype == "float32" else 2)
            for h, offset in zip(heads, offsets)]


def _choose(query, key, value, mask=None, dropout=0.0, gqa=False, grad=False, torch_version=(2, 11)):
    from kernelscope.engine.devices import sdpa_choice

    meta = dict(query=query, key=key, value=value, attn_mask=mask, dropout=dropout, is_causal=False,
                enable_gqa=gqa, grad_enabled=grad)
    return sdpa_choice.choose(_call(meta), sdpa_choice.H100, sdpa_choice.Settings(), torch_version)


def _mask(shape, stride, dtype="bool", grad=False):
    return dict(shape=list(shape), stride=list(stride), dtype=dtype, requires_grad=grad, storage_offset=0,
                element_size=1 if dtype == "bool" else 4)


@pytest.mark.parametrize("mask, expected", [
    # BERT, BART's encoder (the H100 ran math): the broadcast boolean mask has last stride 0
    (_mask((2, 1, 32, 32), (0, 32, 1, 0)), "math"),
    # T5's position bias, permuted (math on the H100): last stride 4
    (_mask((2, 4, 32, 32), (4096, 1, 128, 4), "float32"), "math"),
    # BART's decoder, T5's cross attention (the memory-efficient kernel on the H100): last stride 1
    (_mask((2, 1, 32, 32), (0, 1024, 32, 1)), "efficient"),
    (_mask((2, 4, 32, 32), (4096, 1024, 32, 1), "float32"), "efficient"),
], ids=["bert-broadcast-bool", "t5-permuted-bias", "bart-decoder-bool", "t5-cross-bias"])
def test_a_fused_kernel_needs_the_masks_last_stride_to_be_1(mask, expected):
    assert _choose(*_qkv(16), mask=mask) == expected
    assert _choose(*_qkv(16), mask=mask, dropout=0.1, grad=True) == expected


@pytest.mark.parametrize("head, expected", [(4, "efficient"), (8, "efficient"), (36, "efficient"), (60, "efficient"),
                                            (18, "math"), (6, "math")])
def test_fp32_takes_the_efficient_kernel_at_head_sizes_a_multiple_of_4(head, expected):
    # MobileViT (36, 60) and the UNet (4) ran the memory-efficient kernel on the H100
    assert _choose(*_qkv(head)) == expected


def test_grouped_query_attention_rules_out_the_efficient_kernel_only_when_the_heads_differ():
    assert _choose(*_qkv(16, heads=(4, 4, 4)), gqa=True) == "efficient"
    assert _choose(*_qkv(16, heads=(4, 2, 2)), gqa=True) == "math"
    assert _choose(*_qkv(16, "bfloat16", heads=(4, 2, 2)), gqa=True) == "cudnn"


def test_half_precision_head_sizes_cudnn_refuses_take_flash_attention():
    assert _choose(*_qkv(64, "bfloat16")) == "cudnn"
    assert _choose(*_qkv(36, "bfloat16")) == "flash"  # cuDNN wants a multiple of 8; flash pads to one
    # with a mask flash is out; cuDNN takes no 3-d mask; the efficient kernel wants a multiple of 8
    three_d = _mask((4, 32, 32), (1024, 32, 1), "bfloat16")
    assert _choose(*_qkv(64, "bfloat16"), mask=three_d) == "efficient"
    assert _choose(*_qkv(36, "bfloat16"), mask=three_d) == "math"


def test_torch_2_13_adds_three_checks():
    # the memory-efficient kernel's storage-offset alignment (16 bytes for fp32)
    misaligned = _qkv(16, offsets=(0, 1, 0))
    assert _choose(*misaligned, torch_version=(2, 11)) == "efficient"
    assert _choose(*misaligned, torch_version=(2, 13)) == "math"
    # cuDNN's dropout resolution (1/16)
    assert _choose(*_qkv(64, "bfloat16"), dropout=0.1, grad=True, torch_version=(2, 11)) == "cudnn"
    assert _choose(*_qkv(64, "bfloat16"), dropout=0.1, grad=True, torch_version=(2, 13)) == "flash"
    assert _choose(*_qkv(64, "bfloat16"), dropout=0.125, grad=True, torch_version=(2, 13)) == "cudnn"


def test_the_global_switches_are_read():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from kernelscope.engine.devices import sdpa_choice

    call = _call(dict(zip(("query", "key", "value"), _qkv(64, "bfloat16")), attn_mask=None, dropout=0.0,
                      is_causal=False, enable_gqa=False, grad_enabled=False))
    assert sdpa_choice.choose(call, torch_version=(2, 11)) == "cudnn"
    with sdpa_kernel([SDPBackend.MATH]):
        assert sdpa_choice.choose(call, torch_version=(2, 11)) == "math"
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION], set_priority=True):
        assert sdpa_choice.choose(call, torch_version=(2, 11)) == "flash"
    torch.use_deterministic_algorithms(True)
    try:
        assert sdpa_choice.choose(call, torch_version=(2, 11)) == "flash"
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("entry", RECORD.get("checks", []), ids=lambda e: f"{e['call']['query']['dtype']}-{e['name']}")
def test_backend_rule_matches_every_recorded_check(entry):
    from kernelscope.engine.devices import sdpa_choice

    settings = sdpa_choice.Settings(deterministic=entry["deterministic"])
    chosen = sdpa_choice.choose(_call(entry["call"]), sdpa_choice.H100, settings, _recorded_torch(RECORD))
    assert BACKEND_NAMES[chosen] == entry["backend"]


SUITE_CALLS = RECORD.get("suite_calls", [])


@pytest.mark.parametrize("entry", SUITE_CALLS, ids=lambda e: f"{e['model']}-{e['mode']}")
def test_backend_rule_and_decomposition_match_every_call_of_the_model_suite(entry):
    import torch

    from kernelscope.engine.devices import sdpa_choice
    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    chosen = sdpa_choice.choose(_call(entry["call"]), sdpa_choice.H100, sdpa_choice.Settings(), _recorded_torch(RECORD))
    assert BACKEND_NAMES[chosen] == entry["backend"]
    with attention_as_on_cuda(), _dropout_as_on_cuda():
        ops = sdpa_choices.decomposition_of(torch, entry["call"], "cpu")
    assert _without_getitems(ops) == _without_getitems(entry["ops"])


@contextlib.contextmanager
def _dropout_as_on_cuda():
    """ATen's C++ `dropout` as on a GPU, for these eager CPU traces: the math path's attention
    dropout is `native_dropout` where `is_fused_kernel_acceptable` (a cuda input, 0 < p < 1,
    elements), where the CPU takes its bernoulli path. (A virtual-cuda compile needs no such
    thing: AOTAutograd traces with the Python dispatcher, whose `dropout` kernel is
    `native_dropout` on every device.)"""
    import torch

    def dropout(input, p, train):
        if train and 0 < p < 1 and input.numel() > 0:
            return torch.ops.aten.native_dropout(input, p, train)[0]
        return input

    library = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            library.impl("dropout", dropout, "CompositeImplicitAutograd")
        yield
    finally:
        library._destroy()


def test_the_math_path_applies_a_boolean_mask_as_masked_out_positions():
    """ATen converts a boolean mask to an additive one before every backend but cuDNN's own way;
    the math op itself would add the booleans as 0 and 1."""
    import torch

    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    torch.manual_seed(0)
    query, key, value = (torch.randn(2, 4, 8, 18) for _ in range(3))  # head size 18: math on the GPU
    keep = torch.rand(2, 1, 8, 8) > 0.3
    keep[..., 0] = True
    with attention_as_on_cuda():
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=keep)
    expected = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=keep)
    assert torch.allclose(output, expected, atol=1e-5)


@pytest.mark.parametrize("dtype, head, heads, gqa", [("bfloat16", 36, (4, 4), False), ("bfloat16", 64, (4, 2), True),
                                                     ("bfloat16", 36, (4, 2), True)],
                         ids=["flash", "cudnn-gqa", "flash-gqa"])
def test_cpu_stand_ins_of_flash_and_grouped_query_attention(dtype, head, heads, gqa):
    import torch

    from kernelscope.engine.devices import sdpa_choice
    from kernelscope.engine.devices.cuda_attention import attention_as_on_cuda

    torch.manual_seed(0)
    dtype = getattr(torch, dtype)
    query = torch.randn(2, heads[0], 33, head, dtype=dtype, requires_grad=True)
    key, value = (torch.randn(2, heads[1], 33, head, dtype=dtype, requires_grad=True) for _ in range(2))
    call = sdpa_choice.SdpaCall.of(query, key, value, enable_gqa=gqa, grad_enabled=True)
    backend = "flash" if head == 36 else "cudnn"
    assert sdpa_choice.choose(call, torch_version=(2, 11)) == backend
    with attention_as_on_cuda():
        ops = sdpa_choices.traced_ops(
            torch, lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=gqa),
            query, key, value)
    assert f"aten._scaled_dot_product_{backend}_attention.default" in ops
    if backend == "flash":  # padded to a head size of 40, the output sliced back to 36
        assert ops.count("aten.constant_pad_nd.default") == 3 and "aten.slice.Tensor" in ops
    with attention_as_on_cuda():
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, enable_gqa=gqa)
        grads = torch.autograd.grad(output.float().square().sum(), (query, key, value))
    reference = torch.nn.functional.scaled_dot_product_attention(query, key, value, enable_gqa=gqa)
    expected = torch.autograd.grad(reference.float().square().sum(), (query, key, value))
    assert output.shape == reference.shape
    assert torch.allclose(output.float(), reference.float(), atol=5e-2, rtol=5e-2)
    for got, want in zip(grads, expected):
        assert got.shape == want.shape and torch.allclose(got.float(), want.float(), atol=0.5, rtol=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("factory, present, absent", [
    ("make_bert_like", ["extern_kernels.bmm", "_safe_softmax"], ["_scaled_dot_product_efficient_attention"]),
    ("make_t5_like", ["extern_kernels.bmm", "_safe_softmax"], ["_scaled_dot_product_efficient_attention"]),
    ("make_mobilevit_like", ["_scaled_dot_product_efficient_attention"], ["_safe_softmax", "extern_kernels.bmm"]),
])
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
def test_the_suites_attention_compiles_to_the_kernels_the_h100_ran(recordings, factory, present, absent, train):
    run = recordings.get_spec(f"{SHAPES}:{factory}", train=train)
    # the ops of the post-grad graphs; the extern calls and kernel names (origins) of the wrappers
    text = "\n".join(graph.post_grad_text + graph.wrapper_text for graph in run.graphs)
    for op in present:
        assert op in text, (factory, op)
    for op in absent:
        assert op not in text, (factory, op)
