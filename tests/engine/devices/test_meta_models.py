"""Models built on the meta device record on virtual-cuda without materializing a weight.

A factory that builds its model under `with torch.device("meta")` (how models too big
for the machine are built) records forward and training; the code is the code of the
same model with real weights; the run says what could not happen without values; a
target that needs values refuses with one line naming a meta parameter.
"""
from __future__ import annotations

import textwrap

import pytest
from conftest import REPO, assert_full_links

FACTORIES = textwrap.dedent('''
    import torch
    import transformers


    def _config():
        return transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


    def _inputs():
        torch.manual_seed(0)
        return (torch.randint(0, 256, (2, 16)),)


    def make_real():
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(_config()), _inputs()


    def make_meta():
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM(_config())
        return model, _inputs()


    def make_meta_params_cpu_buffers():
        """accelerate's init_empty_weights(): parameters on meta, buffers left on the CPU."""
        model = make_real()[0]
        for module in model.modules():
            for name, parameter in list(module.named_parameters(recurse=False)):
                module.register_parameter(name, torch.nn.Parameter(parameter.to("meta")))
        return model, _inputs()
''')


@pytest.fixture(scope="module")
def factories(tmp_path_factory):
    path = tmp_path_factory.mktemp("meta") / "llama_meta.py"
    path.write_text(FACTORIES)
    return path


def record(spec: str, train: bool, device: str = "virtual-cuda"):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    return record_factory(spec, RecordOptions(device=device, train=train, workspace=REPO))


def code_of(run) -> dict[str, str]:
    """Each graph's kernels and wrapper, without the temporary paths Inductor names."""
    import re

    code = {}
    for graph in run.graphs:
        code[f"{graph.kind} wrapper"] = re.sub(r"# kernel path: \S+", "", graph.wrapper_text)
        for kernel in graph.kernels:
            code[f"{graph.kind} {kernel.name}"] = kernel.source
    return code


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True], ids=["inference", "train"])
def test_a_meta_model_records_the_code_of_the_same_model_with_weights(factories, train, monkeypatch):
    import torch

    from kernelscope.engine.devices.program_mode import mode_classes

    materialized = []
    original = torch.Tensor.to

    def to(self, *args, **kwargs):  # a meta weight copied anywhere would be materialized
        result = original(self, *args, **kwargs)
        if self.is_meta and not result.is_meta:
            materialized.append(tuple(self.shape))
        return result

    # The real model runs as a GPU program (devices/factory_program.py), whose mode knows
    # `Tensor.to` by identity (made once per process: made here before the patch) and runs
    # `model.to("cuda")` on the virtual GPU: the patch stays around the meta model's recording.
    mode_classes()
    with monkeypatch.context() as patched:
        patched.setattr(torch.Tensor, "to", to)
        meta = record(f"{factories}:make_meta", train)
    assert materialized == []
    real = record(f"{factories}:make_real", train)
    assert code_of(meta) == code_of(real)
    assert_full_links(meta)
    (note,) = [w for w in meta.warnings if "meta device" in w]
    assert "model.embed_tokens.weight" in note and "no output value was computed" in note
    assert not any("meta device" in w for w in real.warnings)


@pytest.mark.slow
def test_parameters_on_meta_with_buffers_on_the_cpu_record(factories):
    run = record(f"{factories}:make_meta_params_cpu_buffers", train=True)
    assert {g.kind for g in run.graphs} == {"forward", "backward"}
    assert any("meta device" in w for w in run.warnings)


@pytest.mark.slow
def test_a_target_that_needs_values_names_a_meta_parameter(factories, run_cli, tmp_path):
    result = run_cli(["compile", f"{factories}:make_meta", "--target", "cpu-triton",
                      "--store", str(tmp_path / ".kernelscope")])
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "`model.embed_tokens.weight` is on the meta device" in lines[0]
    assert "--target virtual-cuda" in lines[0]
    assert not (tmp_path / ".kernelscope" / "runs").exists()


def test_the_meta_check_refuses_cuda_and_names_the_first_meta_tensor():
    import torch

    from kernelscope.engine.record_options import RecordOptions
    from kernelscope.engine.user_model import check_meta_model
    from kernelscope.errors import TargetError

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(TargetError, match=r"--target cuda needs weight values, and `0.weight` is on the meta device"):
        check_meta_model(model, (torch.ones(2, 4),), RecordOptions(), "cuda")
    assert check_meta_model(model, (torch.ones(2, 4),), RecordOptions(), "virtual-cuda") == ["0.weight", "0.bias"]
    plain = torch.nn.Linear(4, 4)
    assert check_meta_model(plain, (torch.ones(2, 4),), RecordOptions(), "cuda") == []
    with pytest.raises(TargetError, match="`input 0` is on the meta device"):
        check_meta_model(plain, (torch.ones(2, 4, device="meta"),), RecordOptions(), "cpu-triton")


def test_the_meta_check_refuses_an_aot_package_which_holds_the_weights():
    import torch

    from kernelscope.engine.record_options import RecordOptions
    from kernelscope.engine.user_model import check_meta_model
    from kernelscope.errors import TargetError

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(TargetError, match=r"--aot packages the model's weights, and `0.weight` is on the meta device"):
        check_meta_model(model, (torch.ones(2, 4),), RecordOptions(aot=True), "virtual-cuda")
