"""A rank torchrun started, on the virtual GPU (devices/real_ranks.py), without a compile: each
test runs inside `cuda_program(real_job=True)` with torchrun's environment for local rank 1 of
2. The whole 2-rank job under torchrun is tests/engine/test_torchrun_gpu.py."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kernelscope.engine.devices.cuda_program import Unavailable, cuda_program  # noqa: E402
from kernelscope.engine.devices.real_ranks import _asks_for_nccl  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import virtual_device  # noqa: E402
from kernelscope.store.parts.distributed import comparable_code  # noqa: E402

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": "29500"}


@pytest.fixture
def rank1(monkeypatch):
    for name, value in TORCHRUN.items():
        monkeypatch.setenv(name, value)
    with cuda_program(real_job=True) as notes:
        yield notes


def test_each_rank_sees_its_hosts_gpus_and_works_on_its_own(rank1):
    assert torch.cuda.device_count() == 2 and torch.accelerator.device_count() == 2
    assert torch.cuda.current_device() == 0  # as on a GPU before set_device
    torch.cuda.set_device(1)
    assert torch.cuda.current_device() == 1 and torch.accelerator.current_device_index() == 1
    made = torch.ones(3, device="cuda")
    moved = torch.zeros(3).to(torch.device("cuda", 1))
    for tensor in (made, moved, made + moved, torch.nn.Linear(3, 3).to("cuda").weight):
        assert tensor.device == torch.device("cuda", 1) and tensor.get_device() == 1 and tensor.is_cuda
    assert "device='cuda:1'" in repr(made)
    assert torch.cuda.current_stream().device == torch.device("cuda", 1)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.cuda.set_device(2)


def test_the_virtual_gpu_is_cuda_0_again_after_the_rank():
    assert virtual_device() == torch.device("cuda", 0)
    with cuda_program():
        assert torch.ones(1, device="cuda").device == torch.device("cuda", 0) and torch.cuda.device_count() == 1


def test_nccl_is_served_by_gloo_with_real_values_and_said_in_the_warnings(rank1):
    import torch.distributed as dist

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=torch.device("cuda", 1))
    try:
        assert dist.get_backend() == "gloo"
        values = torch.arange(4.0, device="cuda")
        dist.all_reduce(values)
        assert values.tolist() == [0.0, 1.0, 2.0, 3.0] and values.device.type == "cuda"
    finally:
        dist.destroy_process_group()
    [note] = rank1
    assert note.startswith(f"{__file__}:") and "init_process_group(backend='nccl') served by gloo" in note


def test_gloo_asked_for_is_given_unchanged(rank1):
    import torch.distributed as dist

    dist.init_process_group(backend="gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert dist.get_backend() == "gloo"
    finally:
        dist.destroy_process_group()
    assert rank1 == []  # nothing served in its place: nothing to say


def test_what_asks_for_nccl():
    assert _asks_for_nccl("nccl") and _asks_for_nccl("NCCL") and _asks_for_nccl(None)
    assert _asks_for_nccl("cpu:gloo,cuda:nccl") and not _asks_for_nccl("gloo") and not _asks_for_nccl("cpu:gloo")


def test_nccls_own_api_is_refused_in_one_line(rank1):
    with pytest.raises(Unavailable) as caught:
        torch.cuda.nccl.all_reduce([torch.ones(2, device="cuda")])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{__file__}:"), message
    assert "torch.cuda.nccl.all_reduce(...)" in message and "dist.all_reduce" in message


def test_ranks_compare_without_the_gpu_index_of_torch_2_13s_stream_names():
    rank0 = "stream0 = get_raw_stream(0)\nraw_stream0 = get_raw_stream(0)\nx = empty((4,), device='cuda:0')\n"
    rank1 = "stream1 = get_raw_stream(1)\nraw_stream1 = get_raw_stream(1)\nx = empty((4,), device='cuda:1')\n"
    assert comparable_code(rank0, "/w") == comparable_code(rank1, "/w")
