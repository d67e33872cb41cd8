"""Tensors a model makes from data in `forward`, lifted as a GPU lifts them
(engine/devices/lifted_constants.py): `torch.tensor(data, device=x.device)` and
`x.new_tensor(data)` become a cuda constant of the graph — CPU data whose Python device
reads cuda:0 — and `lift_fresh_copy` of it, with no copy to the device (`_to_copy`,
`device_put`) that no GPU graph has.

The fast tests drive each piece directly: the CudaConstant class, the marking of a graph's
creator calls, the lift a marked call makes (seen by a dispatch mode), the lift's fake
value, `new_tensor` on a cuda tensor. The slow ones record a small function on
virtual-cuda, inference and training. (tests/engine/devices/test_tensors_in_forward.py
records the bigger models of tests/data/tensors_in_forward.py.)"""
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
    assert lifted_constants.creators_on_cuda(gm) is gm
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
    lifted_constants.creators_on_cuda(gm)
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
    assert calls == [([True], torch.device("cuda", 0)), ([], torch.device("cpu")), ([], "cpu")]
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
