"""Tensors a model makes from data in `forward`, lifted as a GPU lifts them
(engine/devices/lifted_constants.py): `torch.tensor(data, device=x.device)` and
`x.new_tensor(data)` become a cuda constant of the graph — CPU data whose Python device
reads cuda:0 — and `lift_fresh_copy` of it, with no copy to the device (`_to_copy`,
`device_put`) that no GPU graph has.

Indexing a cuda tensor with Python data (`x[..., [-2], :]`, Falcon's multi-query split) lifts
its index as a cuda constant too, as on a GPU, so Inductor lowers `index` and the backward's
`index_put` to Triton kernels instead of falling back to ATen.

The fast tests drive each piece directly: the CudaConstant class, the marking of a graph's
creator and indexing calls, the lift a marked call makes (seen by a dispatch mode), the lift's
fake value, `new_tensor` on a cuda tensor. The slow ones record a small function on
virtual-cuda, inference and training, a multi-query split, and Falcon's training.
(tests/engine/devices/test_tensors_in_forward.py records the bigger models of
tests/data/tensors_in_forward.py.)"""
from __future__ import annotations

import copy
import pickle
import re
import textwrap
import types

import pytest

from kernelscope.engine.devices import lifted_constants


def _constant(values):
    import torch

    return torch.tensor(values).as_subclass(lifted_constants.cuda_constant_class())


def test_a_cuda_constant_is_cpu_data_whose_python_device_reads_cuda():
    import torch

    constant = _constant([1.0, 2.0, 3.0])
    assert lifted_constants.cuda_constant_class() is type(constant)  # made once
    assert (constant.device, constant.is_cuda, constant.is_cpu, constant.get_device()) == \
        (torch.device("cuda", 0), True, False, 0)
    assert lifted_constants.is_cuda_constant(constant)
    assert not lifted_constants.is_cuda_constant(torch.tensor([1.0, 2.0, 3.0]))
    # ops on it run on the CPU data and make plain tensors
    doubled = constant * 2
    assert type(doubled) is torch.Tensor and doubled.device.type == "cpu" and doubled.tolist() == [2.0, 4.0, 6.0]
    # a deep copy (Inductor copies graph modules) stays a constant of its own data
    copied = copy.deepcopy(constant)
    assert lifted_constants.is_cuda_constant(copied) and copied.tolist() == [1.0, 2.0, 3.0]
    assert copied.data_ptr() != constant.data_ptr()
    # pickled (the FX graph cache), it is its plain CPU data
    unpickled = pickle.loads(pickle.dumps(constant))
    assert type(unpickled) is torch.Tensor and unpickled.tolist() == [1.0, 2.0, 3.0]


def _creator_graph():
    """An FX graph as Dynamo captures one (devices already cuda): creator calls asked for
    cuda, for the CPU, and with no device."""
    import torch

    graph = torch.fx.Graph()
    graph.placeholder("x")
    on_cuda = graph.call_function(torch.tensor, ([1.0, 2.0],), {"device": torch.device("cuda", 0)})
    as_tensor = graph.call_function(torch.as_tensor, ([3.0],), {"device": "cuda"})
    on_cpu = graph.call_function(torch.tensor, ([4.0],), {"device": "cpu"})
    no_device = graph.call_function(torch.tensor, ([5.0],), {})
    graph.output((on_cuda, as_tensor, on_cpu, no_device))
    return torch.fx.GraphModule(torch.nn.Module(), graph), (on_cuda, as_tensor, on_cpu, no_device)


def test_creator_calls_asked_for_cuda_are_marked_and_read_as_before():
    import torch

    gm, (on_cuda, as_tensor, on_cpu, no_device) = _creator_graph()
    code_before = gm.code
    assert lifted_constants.lifts_on_cuda(gm) is gm
    assert on_cuda.target.kernelscope_lifts_on_cuda is torch.tensor
    assert as_tensor.target.kernelscope_lifts_on_cuda is torch.as_tensor
    assert on_cpu.target is torch.tensor and no_device.target is torch.tensor
    assert gm.code == code_before  # the targets keep their names: the graph reads as before


def test_the_lift_inside_a_marked_call_is_a_lift_on_cuda():
    """What the proxy and fake modes ask while a marked creator runs: its lift of the freshly
    built CPU tensor is a lift on cuda, and its fake value is a fake cuda tensor; the same
    call unmarked lifts nothing on cuda."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    fake_mode = FakeTensorMode()
    seen = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in (torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default):
                seen.append((lifted_constants.is_lift_on_cuda(func, args),
                             lifted_constants.lifted_fake(fake_mode, func, args)))
            return func(*args, **(kwargs or {}))

    gm, (on_cuda, *_) = _creator_graph()
    lifted_constants.lifts_on_cuda(gm)
    with Watch():
        made = on_cuda.target([1.0, 2.0], device="cpu")  # the marked creator (CPU data: no GPU here)
        plain = torch.tensor([1.0, 2.0], device="cpu")
    assert made.tolist() == plain.tolist() == [1.0, 2.0]
    (marked_on_cuda, marked_fake), (plain_on_cuda, plain_fake) = seen
    assert marked_on_cuda and not plain_on_cuda
    assert isinstance(marked_fake, FakeTensor) and marked_fake.device == torch.device("cuda", 0)
    assert marked_fake.shape == (2,) and marked_fake.dtype == torch.float32
    assert plain_fake is None
    assert not lifted_constants.is_lift_on_cuda(torch.ops.aten.lift_fresh.default, (plain,))  # outside any call


def _indexing_graph():
    """Dynamo's graph of `x[..., [-2], :]`, `x[[0, 1]] = 2.0`, `x[(0, 1),]`, `x[0, 1:]`: indexing
    with a list, with a tuple inside the index, and with ints and slices only."""
    import operator

    import torch

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    with_list = graph.call_function(operator.getitem, (x, (Ellipsis, [-2], slice(None))))
    assigned = graph.call_function(operator.setitem, (x, [0, 1], 2.0))
    with_tuple = graph.call_function(operator.getitem, (x, ((0, 1),)))
    basic = graph.call_function(operator.getitem, (x, (0, slice(1, None))))
    graph.output((with_list, with_tuple, basic))
    return torch.fx.GraphModule(torch.nn.Module(), graph), (with_list, assigned, with_tuple, basic)


def test_indexing_with_python_data_is_marked_and_reads_as_before():
    import operator

    gm, (with_list, assigned, with_tuple, basic) = _indexing_graph()
    code_before = gm.code
    lifted_constants.lifts_on_cuda(gm)
    assert with_list.target.kernelscope_lifts_on_cuda is operator.getitem
    assert assigned.target.kernelscope_lifts_on_cuda is operator.setitem
    assert with_tuple.target.kernelscope_lifts_on_cuda is operator.getitem
    assert basic.target is operator.getitem  # no data C++ makes a tensor of
    assert gm.code == code_before
    lifted_constants.lifts_on_cuda(gm)  # marked once
    assert with_list.target.kernelscope_lifts_on_cuda is operator.getitem


def test_indexing_a_cuda_tensor_lifts_its_index_on_cuda_and_its_python_value_on_the_cpu():
    """A marked getitem/setitem on a tensor whose Python device is cuda (a CudaConstant here:
    CPU data, as a CPU-backed fake cuda tensor's C++ side is): the index C++ makes from the list
    is lifted on cuda, with a fake cuda value; the 0-dim tensor of the assigned Python value is
    not (a GPU makes it on the CPU). On a CPU tensor nothing is lifted on cuda."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    fake_mode = FakeTensorMode()
    seen = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in (torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default):
                fake = lifted_constants.lifted_fake(fake_mode, func, args)
                seen.append((args[0].dim(), lifted_constants.is_lift_on_cuda(func, args),
                             None if fake is None else fake.device.type))
            return func(*args, **(kwargs or {}))

    gm, (with_list, assigned, *_) = _indexing_graph()
    lifted_constants.lifts_on_cuda(gm)
    on_cuda = _constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with Watch():
        picked = with_list.target(on_cuda, (Ellipsis, [-2], slice(None)))
    assert picked.tolist() == [[1.0, 2.0, 3.0]]  # row -2, every column
    assert seen == [(1, True, "cuda")]
    seen.clear()
    on_cuda_too = _constant([1.0, 2.0, 3.0])
    with Watch():
        assigned.target(on_cuda_too, [0, 1], 7.0)
    assert on_cuda_too.tolist() == [7.0, 7.0, 3.0]
    assert sorted(seen) == [(0, False, None), (1, True, "cuda")]
    seen.clear()
    with Watch():
        with_list.target(torch.ones(2, 3), (Ellipsis, [-2], slice(None)))
    assert seen == [(1, False, None)]
    assert lifted_constants._lifting == []


def test_the_lift_of_a_cuda_constant_is_a_fake_cuda_tensor():
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    fake_mode = FakeTensorMode()
    constant = _constant([[1.0, 2.0], [3.0, 4.0]])
    fake = lifted_constants.lifted_fake(fake_mode, torch.ops.aten.lift_fresh.default, (constant,))
    assert isinstance(fake, FakeTensor) and fake.fake_mode is fake_mode
    assert (fake.device, fake.shape, fake.dtype) == (torch.device("cuda", 0), (2, 2), torch.float32)
    # any other op, or a plain CPU tensor outside a creator asked for cuda: not ours
    assert lifted_constants.lifted_fake(fake_mode, torch.ops.aten.relu.default, (constant,)) is None
    assert lifted_constants.lifted_fake(fake_mode, torch.ops.aten.lift_fresh.default, (torch.ones(2),)) is None


def test_the_recorded_constant_becomes_a_cuda_constant_of_the_same_data():
    import torch

    tensor = torch.tensor([5.0, 6.0])
    tracer = types.SimpleNamespace(tensor_attrs={tensor: "_tensor_constant0"}, root=torch.nn.Module())
    lifted_constants.constant_as_cuda(tracer, tensor)
    constant = tracer.root._tensor_constant0
    assert lifted_constants.is_cuda_constant(constant) and constant.device == torch.device("cuda", 0)
    assert constant.tolist() == [5.0, 6.0] and constant.data_ptr() == tensor.data_ptr()
    assert tracer.tensor_attrs[constant] == "_tensor_constant0"
    # a tensor make_fx did not record as a constant is left alone
    other = torch.ones(1)
    lifted_constants.constant_as_cuda(tracer, other)
    assert other not in tracer.tensor_attrs and not hasattr(tracer.root, "_tensor_constant1")


def test_new_tensor_takes_the_python_device_and_lifts_on_cuda():
    import torch

    calls = []

    def original(self, data, *args, **kwargs):
        calls.append((list(lifted_constants._lifting), kwargs.get("device")))
        return data

    new_tensor = lifted_constants.new_tensor_on_the_python_device(original)
    on_cuda = types.SimpleNamespace(device=torch.device("cuda", 0))  # a fake cuda tensor's Python device
    on_cpu = types.SimpleNamespace(device=torch.device("cpu"))
    assert new_tensor(on_cuda, [1.0]) == [1.0]
    new_tensor(on_cpu, [1.0])
    new_tensor(on_cuda, [1.0], device="cpu")  # an explicit device wins
    assert calls == [([lifted_constants._every_tensor], torch.device("cuda", 0)), ([], torch.device("cpu")),
                     ([], "cpu")]
    assert lifted_constants._lifting == []


# -- recorded on virtual-cuda -----------------------------------------------------------------

MODEL = textwrap.dedent('''
    import torch


    def scale(x):
        weights = torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)
        shift = x.new_tensor([0.5, 0.5, 0.5, 0.5])
        return torch.relu(x * weights + shift)


    def make():
        return scale, (torch.randn(8, 4),)
''')


def _kernel_names(graph) -> list[str]:
    return re.findall(r"\b(triton_(?:poi|per|red)_\w+?) = async_compile", graph.wrapper_text)


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
def test_a_tensor_made_from_data_in_forward_is_a_cuda_constant(tmp_path, train):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    (tmp_path / "model.py").write_text(MODEL)
    run = record_factory(f"{tmp_path / 'model.py'}:make", RecordOptions(device="virtual-cuda", train=train,
                                                                        workspace=tmp_path))
    forward = next(graph for graph in run.graphs if graph.kind in ("inference", "forward"))
    # both constants are cuda constants of the graph, lifted where they were made
    constants = re.findall(r'_tensor_constant\d+: "([^"]*)"', forward.post_grad_text)
    assert constants == ["f32[4][1]cuda:0", "f32[4][1]cuda:0"], forward.post_grad_text
    assert forward.post_grad_text.count("lift_fresh_copy.default(_tensor_constant") == 2
    for graph in run.graphs:  # nothing is copied to the device
        assert "device_put" not in graph.post_grad_text and "_to_copy" not in graph.post_grad_text, \
            graph.post_grad_text
        assert not any("_to_copy" in name for name in _kernel_names(graph))
    # Inductor inlines them into the kernel that reads them, named after the lift as on a GPU
    assert any("lift_fresh" in name for name in _kernel_names(forward)), _kernel_names(forward)


MULTI_QUERY = textwrap.dedent('''
    import torch


    class MultiQuery(torch.nn.Module):
        """Falcon's multi-query split: the key and the value picked with a Python list."""

        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 48)

        def forward(self, x):
            qkv = self.proj(x).view(x.shape[0], x.shape[1], 6, 8)
            query, key, value = qkv[..., :-2, :], qkv[..., [-2], :], qkv[..., [-1], :]
            return (query * key + value).sum(-1)


    def make():
        return MultiQuery(), (torch.randn(2, 4, 16),)
''')


def _indexing_on_cuda_as_on_a_gpu(run) -> None:
    """What a GPU's compile has for indexing with a Python list: the indices are cuda values
    (no CPU constant), Inductor lowers `index` (forward) and the accumulating `index_put` of
    its gradient (backward) into Triton kernels, with no ATen fallback for either, and inlines
    the lifted index into kernels named after the lift."""
    graphs = {graph.kind: graph for graph in run.graphs}
    forward, backward = graphs["forward"], graphs["backward"]
    for graph in (forward, backward):
        assert not re.search(r'"i64\[[^"]*\]cpu"', graph.post_grad_text), graph.post_grad_text
        fallbacks = [kernel.name for kernel in graph.kernels if "aten.index" in kernel.name]
        assert fallbacks == [], fallbacks
    assert any("lift_fresh" in name for name in _kernel_names(forward)), _kernel_names(forward)
    assert "aten.index.Tensor" in forward.post_grad_text
    assert "aten.index_put.default" in backward.post_grad_text
    assert any("index_put" in name for name in _kernel_names(backward)), _kernel_names(backward)


@pytest.mark.slow
def test_a_list_index_of_a_cuda_tensor_lowers_to_triton_as_on_a_gpu(tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    (tmp_path / "model.py").write_text(MULTI_QUERY)
    run = record_factory(f"{tmp_path / 'model.py'}:make", RecordOptions(device="virtual-cuda", train=True,
                                                                        workspace=tmp_path))
    _indexing_on_cuda_as_on_a_gpu(run)


@pytest.mark.slow
def test_falcons_training_indexes_on_cuda_as_on_a_gpu(tmp_path):
    """Falcon (bench/models/device_branches.py, the GPU check's case): before, its forward
    called `aten.index` four times and its backward `aten.index_put_` four times, on CPU
    indices."""
    pytest.importorskip("transformers")
    from conftest import REPO

    from kernelscope.engine.recorder import RecordOptions, record_factory

    run = record_factory(f"{REPO / 'bench/models/device_branches.py'}:make_falcon_train",
                         RecordOptions(device="virtual-cuda", train=True, workspace=tmp_path))
    _indexing_on_cuda_as_on_a_gpu(run)
