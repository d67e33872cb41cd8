"""A factory with a `device` parameter is called with the target's device; a model that
mixes CPU and GPU tensors under `--target cuda` gets an error saying what to do."""
from __future__ import annotations

import textwrap

import pytest

from kernelscope.engine import targets

FACTORIES = textwrap.dedent('''
    import torch

    def make(device="unset"):
        model = torch.nn.Linear(4, 4).to(device)
        return model, (torch.randn(2, 4, device=device),)

    def make_plain():
        return torch.nn.Linear(4, 4), (torch.randn(2, 4),)

    def make_closure():
        # A function closing over a CPU model: kernelscope cannot move it to the GPU.
        model = torch.nn.Linear(4, 4)
        return (lambda x: model(x)), (torch.randn(2, 4),)
''')


@pytest.fixture
def factory_file(tmp_path):
    path = tmp_path / "factories.py"
    path.write_text(FACTORIES)
    return path


@pytest.mark.parametrize("target_device, factory_device", [
    ("virtual-cuda", "cpu"), ("cpu-triton", "cpu"), ("cuda", "cuda")])
def test_the_device_a_factory_gets(target_device, factory_device):
    assert targets.factory_device(target_device) == factory_device


def test_a_factory_with_a_device_parameter_is_called_with_it(factory_file):
    model, inputs = targets.load_factory(targets.FactoryTarget(factory_file, "make"), device="cpu")
    assert next(model.parameters()).device.type == "cpu" and inputs[0].device.type == "cpu"
    with pytest.raises(Exception) as raised:  # the device reaches the factory: a bogus one fails there
        targets.load_factory(targets.FactoryTarget(factory_file, "make"), device="no-such-device")
    assert "no-such-device" in str(raised.value)


def test_a_factory_without_one_is_called_as_before(factory_file):
    model, _ = targets.load_factory(targets.FactoryTarget(factory_file, "make_plain"), device="cuda")
    assert next(model.parameters()).device.type == "cpu"


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU (--target cuda)")
def test_cuda_target_builds_on_the_gpu_through_the_device_parameter(factory_file, tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    run = record_factory(f"{factory_file}:make", RecordOptions(device="cuda", workspace=tmp_path))
    assert run.graphs


@pytest.mark.slow
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU (--target cuda)")
def test_cuda_target_says_what_to_do_when_a_model_stays_on_the_cpu(factory_file, tmp_path):
    from kernelscope.engine.recorder import RecordOptions, record_factory
    from kernelscope.errors import TargetError

    with pytest.raises(TargetError) as raised:
        record_factory(f"{factory_file}:make_closure", RecordOptions(device="cuda", workspace=tmp_path))
    message = str(raised.value)
    assert "mixes CPU and GPU tensors" in message and "`device` parameter" in message
