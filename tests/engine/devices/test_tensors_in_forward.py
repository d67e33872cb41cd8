"""Tensors a model makes inside `forward` never reach a CUDA runtime under virtual-cuda.

Every call that makes a tensor on the input's device while the graph is traced on fake
cuda tensors — `torch.tensor` / `as_tensor` with data (empty data too: transformers'
DynamicCache), factories with `device=`, `new_*`, `*_like`, `.to(device)`, tensors made
on the CPU and moved, index tensors an autograd formula makes in the backward from the
gradient's options — must make a fake cuda tensor. Each model of
tests/data/tensors_in_forward.py is recorded, inference and training, with the CUDA
runtime made to raise on any use (`torch.cuda._lazy_init`, what every CUDA factory and
device guard of torch's Python API calls first; on this CPU build anything below it
raises by itself): a call that slips through fails the recording.

Also: a Hugging Face decoder built with the library's defaults (`use_cache` as shipped,
so DynamicCache makes `torch.tensor([], device=...)` inside the graph) records with full
line links, and real computation torch does while compiling runs on the CPU.
"""
from __future__ import annotations

import re

import pytest
from conftest import DATA, REPO, assert_full_links

MODELS = DATA / "tensors_in_forward.py"


class CudaRuntimeUsed(AssertionError):
    pass


@pytest.fixture
def cuda_runtime_raises(monkeypatch):
    """The CUDA runtime raises on any use for the whole recording; returns the calls seen."""
    import torch

    calls = []

    def refuse(*args, **kwargs):
        calls.append("torch.cuda._lazy_init")
        raise CudaRuntimeUsed("the CUDA runtime was asked for")

    monkeypatch.setattr(torch.cuda, "_lazy_init", refuse)
    if hasattr(torch._C, "_cuda_init"):
        def refuse_init(*args, **kwargs):
            calls.append("torch._C._cuda_init")
            raise CudaRuntimeUsed("the CUDA runtime was initialized")

        monkeypatch.setattr(torch._C, "_cuda_init", refuse_init)
    return calls


def record(spec: str, train: bool):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    return record_factory(spec, RecordOptions(device="virtual-cuda", train=train, workspace=REPO))


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
@pytest.mark.parametrize("factory", ["make_factories", "make_new_and_to", "make_cache_like",
                                     "make_sinusoidal_positions", "make_overlapping_windows",
                                     "make_fourier_mixing"])
def test_tensors_made_in_forward_never_reach_the_cuda_runtime(factory, train, cuda_runtime_raises):
    run = record(f"{MODELS}:{factory}", train)
    assert cuda_runtime_raises == []
    assert {g.kind for g in run.graphs} == ({"forward", "backward"} if train else {"inference"})
    if factory != "make_new_and_to":  # that one makes tensors on the CPU on purpose, then moves them
        for graph in run.graphs:
            # every tensor the graph makes is made on the GPU, as on a GPU
            assert "device(type='cpu')" not in graph.post_grad_text, graph.post_grad_text
            assert "empty_strided_cpu(" not in graph.wrapper_text
    assert_full_links(run)


@pytest.mark.slow
def test_a_constant_moved_to_the_gpu_is_a_cuda_constant_in_the_wrapper(cuda_runtime_raises):
    run = record(f"{MODELS}:make_new_and_to", False)
    (graph,) = run.graphs
    # `torch.tensor(table).to(x.device)`: Inductor copies the CPU constant to the GPU under a
    # new name, which the kernels read; the copy says cuda, as the GPU's copy does
    moved = [line for line in graph.wrapper_text.splitlines() if "_cuda0 = None  # device(type='cuda'" in line]
    assert moved, graph.wrapper_text[:3000]


@pytest.mark.slow
def test_a_decoder_with_the_library_defaults_records(cuda_runtime_raises):
    import transformers

    from kernelscope.engine.recorder import RecordOptions, record_factory

    source = DATA / "hf_defaults.py"
    run = record_factory(f"{source}:make_llama", RecordOptions(device="virtual-cuda", workspace=REPO))
    assert cuda_runtime_raises == []
    assert_full_links(run)
    # the DynamicCache line that made `torch.tensor([], device=...)` is in the graph
    cache_utils = transformers.cache_utils.__file__
    assert any(node.source and node.source.file == cache_utils and "tensor" in node.target
               for graph in run.graphs for node in graph.pre_grad_nodes), "DynamicCache's tensor is not recorded"


def _kernel_names(graph) -> list[str]:
    return re.findall(r"\b(triton_(?:poi|per|red)_\w+?) = async_compile", graph.wrapper_text)


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
def test_a_tensor_made_from_data_is_lifted_as_a_cuda_constant(train, cuda_runtime_raises):
    """On a GPU, `torch.tensor(data, device=x.device)` lifts a cuda constant: the graph has no
    copy to the device (the H100's kernels say `lift_fresh` where virtual-cuda's said
    `_to_copy`: GPT-Neo, GPT-J, XGLM, TrOCR, MegatronBERT, ConvBERT, Longformer)."""
    run = record(f"{MODELS}:make_factories", train)
    names = [name for graph in run.graphs for name in _kernel_names(graph)]
    for graph in run.graphs:
        assert not re.search(r'_tensor_constant\d+: "[^"]*cpu"', graph.post_grad_text), graph.post_grad_text
        assert "device_put" not in graph.post_grad_text and "_to_copy.default" not in graph.post_grad_text
    assert any("lift_fresh" in name for name in names), names
    assert not any("lift_fresh" in name and "_to_copy" in name for name in names), names


@pytest.mark.slow
def test_new_tensor_makes_a_cuda_constant(cuda_runtime_raises):
    """`x.new_tensor(data)` makes its tensor on x's device: a cuda constant (torch 2.11 keeps
    the call in Dynamo's graph, where C++ read the CPU-backed fake's device)."""
    run = record(f"{MODELS}:make_new_and_to", False)
    (graph,) = run.graphs
    made = graph.post_grad_text.split("code: made = x.new_tensor", 1)[1].split("# File:", 1)[0]
    assert re.search(r'_tensor_constant\d+: "f32\[16\]\[1\]cuda:0"', made), made


@pytest.mark.slow
def test_the_gradient_of_a_dtype_change_is_not_copied(cuda_runtime_raises):
    """The backward of `_to_copy` converts the gradient with `grad.to(self.options())`: the
    options of a GPU tensor say cuda, so nothing is copied (FNet's backward on the H100)."""
    run = record(f"{MODELS}:make_fourier_mixing", True)
    backward = [graph for graph in run.graphs if graph.kind == "backward"]
    assert backward and not any("_to_copy" in name for graph in backward for name in _kernel_names(graph))


def test_real_computation_while_compiling_runs_on_the_cpu():
    import torch

    from kernelscope.engine.devices import real_compute

    with real_compute.cuda_runtime_forbidden():
        with pytest.raises(real_compute.CudaRuntimeReached):
            torch.full([1], 0.0, device="cuda")
        with real_compute.computing_on_cpu():
            made = torch.full([2], 3.0, device="cuda")  # a factory: no runtime is initialized
            moved = torch.ops.prims.device_put.default(torch.ones(2), torch.device("cuda"))
    assert made.device.type == "cpu" and made.tolist() == [3.0, 3.0]
    assert moved.device.type == "cpu"
    # the guard and the mode are gone afterwards
    assert torch.cuda._lazy_init is not None and "refuse" not in torch.cuda._lazy_init.__name__
    assert torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is None
