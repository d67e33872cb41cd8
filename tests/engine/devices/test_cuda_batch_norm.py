"""BatchNorm's backend chosen as a CUDA build chooses it (devices/cuda_batch_norm.py).

On the H100 (torch 2.11), `small_cnn --dynamic` fused post-grad nodes numbered after the
symbolic checks of cuDNN's path (`mul_14` where virtual-cuda said `mul_7`); the port of
ATen's `_batch_norm_impl_index` traces those checks as the GPU does.
"""
from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO, ZOO

from kernelscope.engine.devices import cuda_batch_norm


def _tensors():
    yield torch.empty(2, 3, 4, 5)
    yield torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    yield torch.empty(2, 3, 1, 1)  # N111: ambiguous, NCHW
    yield torch.empty(2, 1, 4, 5).to(memory_format=torch.channels_last)
    yield torch.empty(2, 3, 4, 5).transpose(2, 3)
    yield torch.empty(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d)
    yield torch.empty(2, 3, 4)
    yield torch.empty(0, 3, 4, 5)


@pytest.mark.parametrize("tensor", list(_tensors()), ids=lambda t: f"{list(t.shape)}@{list(t.stride())}")
def test_suggested_memory_format_is_c10s(tensor):
    from torch._prims_common import suggest_memory_format

    assert cuda_batch_norm.suggest_memory_format(tensor) == suggest_memory_format(tensor)


def _uses_cudnn(input_dtype=torch.float32, weight_dtype=torch.float32, shape=(4, 16, 8, 8), training=False,
                stats=True, eps=1e-5):
    input = torch.empty(shape, dtype=input_dtype, device="meta")
    weight, bias = (torch.empty(shape[1], dtype=weight_dtype, device="meta") for _ in range(2))
    mean, var = (torch.empty(shape[1], device="meta") for _ in range(2)) if stats else (None, None)
    # is_cuda is what the port asks first; a meta tensor stands in for a fake cuda one
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
        return cuda_batch_norm._uses_cudnn(input, weight, bias, mean, var, training, eps)


def test_cudnn_is_chosen_as_atens_select_batch_norm_backend_chooses_it():
    assert _uses_cudnn()
    assert _uses_cudnn(shape=(4, 16, 8))  # 3 dimensions
    assert not _uses_cudnn(shape=(4, 16))  # 2: the native kernel
    assert not _uses_cudnn(input_dtype=torch.bfloat16, weight_dtype=torch.bfloat16)
    assert not _uses_cudnn(input_dtype=torch.float16, weight_dtype=torch.float16)
    assert _uses_cudnn(input_dtype=torch.float16, weight_dtype=torch.float32)
    assert not _uses_cudnn(shape=(70000, 4, 2, 2))  # eval: at most 65535 in the batch
    assert _uses_cudnn(shape=(70000, 4, 2, 2), training=True)  # training: 880801
    assert not _uses_cudnn(stats=False)  # eval needs running statistics
    assert _uses_cudnn(stats=False, training=True)
    with torch.backends.cudnn.flags(enabled=False):
        assert not _uses_cudnn()


@pytest.mark.slow
def test_dynamic_small_cnn_fuses_the_nodes_the_h100_fused():
    from kernelscope.engine.recorder import RecordOptions, record_factory

    if not torch.__version__.startswith(("2.11", "2.13")):
        pytest.skip("the H100's node numbers are checked against torch 2.11 and 2.13")
    results = json.loads(
        (REPO / "bench" / "results" / "gpu_check_decisions_h100_torch2.11_before_batch_norm.json").read_text())
    h100 = {kernel["name"]: sorted(kernel["nodes_real"])
            for kernel in results["rows"]["small_cnn dynamic"]["replayed"]["differing_kernels"]}
    run = record_factory(f"{ZOO / 'small_cnn.py'}:make", RecordOptions(device="virtual-cuda", dynamic=True,
                                                                      workspace=REPO))
    kernels = {kernel.name: sorted(kernel.nodes) for graph in run.graphs for kernel in graph.kernels}
    assert h100 and {name: kernels.get(name) for name in h100} == h100
