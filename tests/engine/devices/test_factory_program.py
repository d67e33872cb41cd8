"""A factory under virtual-cuda runs as a GPU program (devices/factory_program.py): the factory
call, the capture, the compile and the eager run on the virtual GPU, so a model's
`x.device.type` branches take the GPU's way; cpu-triton, meta-device models and `--world-size`
ranks are captured on the CPU as before. What the program mode needed for the suite's models
(an integer `histc`, a `custom_op` body, `torch.cuda.CUDAGraph` in an annotation) is checked
here without a compile."""
from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

from conftest import REPO  # noqa: E402

from kernelscope.engine.devices.cuda_program import Unavailable, cuda_program  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class  # noqa: E402

FACTORIES = textwrap.dedent('''
    import torch


    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 16)

        def forward(self, x):
            h = self.proj(x)
            if h.device.type == "cuda":
                return h * torch.sigmoid(h)  # the GPU's branch
            return torch.tanh(h)  # the CPU's branch


    def seen(**what):  # what the factory saw, for the test to read
        import json
        from pathlib import Path

        Path(__file__).with_suffix(".seen.json").write_text(json.dumps(what))


    def make():
        seen(cuda_available=torch.cuda.is_available())
        return Gate(), (torch.randn(4, 16),)


    def make_on(device="unset"):
        seen(device=device)
        return Gate().to(device), (torch.randn(4, 16, device=device),)


    def make_closure():
        model = Gate()  # held in a closure: nothing moves it to the GPU
        return (lambda x: model(x)), (torch.randn(4, 16),)


    class FlexAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)

        def forward(self, x):
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention

            b, length, _ = x.shape
            q, k, v = self.qkv(x).view(b, length, 3, 2, 16).permute(2, 0, 3, 1, 4)
            mask = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None, length, length,
                                     device=x.device)
            return flex_attention(q, k, v, block_mask=mask)


    def make_flex():
        return FlexAttention(), (torch.randn(2, 128, 32),)


    def make_meta():
        with torch.device("meta"):
            model = Gate()
        return model, (torch.randn(4, 16),)
''')


@pytest.fixture
def factory_file(tmp_path):
    path = tmp_path / "gate_factories.py"
    path.write_text(FACTORIES)
    return path


def _record(spec: str, device: str, workspace):
    from kernelscope.engine.recorder import RecordOptions, record_factory

    return record_factory(spec, RecordOptions(device=device, workspace=workspace))


def _seen(factory_file) -> dict:
    return json.loads(factory_file.with_suffix(".seen.json").read_text())


def _targets(run) -> set[str]:
    return {node.target for graph in run.graphs for node in graph.post_grad_nodes}


@pytest.mark.slow
def test_a_factory_takes_the_gpus_device_branch_on_virtual_cuda_and_the_cpus_on_cpu_triton(factory_file, tmp_path):
    virtual = _record(f"{factory_file}:make", "virtual-cuda", tmp_path)
    assert "aten.sigmoid.default" in _targets(virtual) and "aten.tanh.default" not in _targets(virtual)
    assert _seen(factory_file) == {"cuda_available": True}  # the factory ran as a program
    cpu = _record(f"{factory_file}:make", "cpu-triton", tmp_path)
    assert "aten.tanh.default" in _targets(cpu) and "aten.sigmoid.default" not in _targets(cpu)
    assert _seen(factory_file) == {"cuda_available": False}


@pytest.mark.slow
def test_a_factory_with_a_device_parameter_builds_on_the_virtual_gpu(factory_file, tmp_path):
    run = _record(f"{factory_file}:make_on", "virtual-cuda", tmp_path)
    assert _seen(factory_file) == {"device": "cuda"}
    assert "aten.sigmoid.default" in _targets(run)


@pytest.mark.slow
def test_a_model_left_on_the_cpu_in_a_closure_gets_the_gpus_advice(factory_file, tmp_path):
    from kernelscope.errors import TargetError

    with pytest.raises(TargetError) as raised:  # as under --target cuda: a GPU program mixing devices
        _record(f"{factory_file}:make_closure", "virtual-cuda", tmp_path)
    message = str(raised.value)
    assert message.startswith("--target virtual-cuda: the model mixes CPU and GPU tensors")
    assert "`device` parameter" in message


@pytest.mark.slow
def test_flex_attention_trains_from_a_factory(factory_file, tmp_path):
    """Captured on the CPU, a factory's FlexAttention had no backward ("FlexAttention does not
    support backward on CPU"); on the virtual GPU it records the GPU's templates, both ways."""
    from kernelscope.engine.recorder import RecordOptions, record_factory

    run = record_factory(f"{factory_file}:make_flex", RecordOptions(device="virtual-cuda", train=True,
                                                                      workspace=tmp_path))
    templates = {graph.kind: [k.name for k in graph.kernels if "flex_attention" in k.name] for graph in run.graphs
                 if graph.subgraph is None}  # the forward and backward, not FlexAttention's mod subgraphs
    assert templates["forward"] and any("flex_attention_backward" in name for name in templates["backward"])


@pytest.mark.slow
def test_a_meta_device_factory_is_captured_on_the_cpu_as_before(factory_file, tmp_path):
    run = _record(f"{factory_file}:make_meta", "virtual-cuda", tmp_path)
    assert "aten.tanh.default" in _targets(run)  # meta models are captured as CPU ones (meta_models)
    assert any("weights on the meta device" in warning for warning in run.warnings)


def test_the_model_and_nested_inputs_go_to_the_virtual_gpu():
    from kernelscope.engine.devices.factory_program import on_the_virtual_gpu

    with cuda_program():
        model = torch.nn.Linear(4, 4)
        inputs = on_the_virtual_gpu(model, (torch.randn(2, 4), {"mask": [torch.ones(2, dtype=torch.bool)]}, 3))
        vgt = tensor_class()
        assert type(model.weight.data) is vgt and model.weight.device.type == "cuda"
        assert type(inputs[0]) is vgt and type(inputs[1]["mask"][0]) is vgt and inputs[2] == 3


def test_an_integer_histc_on_the_virtual_gpu_counts_as_cudas_does():
    values = [0, 1, 1, 3, 7, 7, 7]
    with cuda_program():
        counts = torch.histc(torch.tensor(values, device="cuda", dtype=torch.int32), bins=8, min=0, max=7)
        method = torch.tensor(values, device="cuda", dtype=torch.int32).histc(bins=8, min=0, max=7)
        assert type(counts) is tensor_class() and counts.dtype == torch.int32  # CUDA's: the input's dtype
        assert counts.tolist() == method.tolist() == [1, 2, 0, 1, 0, 0, 0, 3]
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):  # the CPU's own kernel, outside
        torch.histc(torch.tensor(values, dtype=torch.int32), bins=8, min=0, max=7)


def test_a_custom_op_body_runs_on_the_cpu_aliases_of_virtual_gpu_tensors():
    @torch.library.custom_op("kernelscope_test::scaled_copy", mutates_args=())
    def scaled_copy(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(x.shape, device=x.device, dtype=x.dtype)  # transformers' grouped_mm_fallback does this
        return out.add_(x * 2)

    with cuda_program():
        x = torch.ones(3, device="cuda")
        for op in (torch.ops.kernelscope_test.scaled_copy, torch.ops.kernelscope_test.scaled_copy.default):
            out = op(x)
            assert type(out) is tensor_class() and out.tolist() == [2.0, 2.0, 2.0]


def test_cuda_graph_classes_stay_classes_and_making_one_is_refused():
    with cuda_program():
        annotation = torch.cuda.CUDAGraph | None  # transformers' continuous batching annotates with it
        assert annotation is not None and isinstance(torch.cuda.graph, type)
        with pytest.raises(Unavailable, match="torch.cuda.CUDAGraph"):
            torch.cuda.CUDAGraph()


@pytest.mark.slow
def test_mixtrals_routing_counts_experts_in_int32_as_on_the_h100(tmp_path):
    """The H100 (bench/results/suite_compare_replay_h100_torch2.11.json, mixtral inference):
    the sort kernel casts the sorted expert ids to int32 and the cumsum runs in place on int32
    counts; captured on the CPU, transformers took its float32 branch."""
    import subprocess
    import sys

    dump = tmp_path / "mixtral.json"
    subprocess.run([sys.executable, "-m", "kernelscope", "compile", str(REPO / "bench/suite/hf_moe.py") + ":mixtral",
                    "--target", "virtual-cuda", "--store", str(tmp_path / ".ks"), "--dump", str(dump)],
                   cwd=REPO, check=True, capture_output=True)
    sources = ["\n".join(line["text"] for line in kernel["lines"])
               for graph in json.loads(dump.read_text())["run"]["graphs"] for kernel in graph["kernels"]]
    sort = [source for source in sources if "sort_with_index" in source]
    assert sort and all("tmp5.to(tl.int32)" in source for source in sort)  # the CPU's branch: tl.float32
    cumsum = [source for source in sources if "'kernel_name': 'triton_per_fused_cumsum" in source]
    assert cumsum and all("'in_out_ptr0': '*i32'" in source for source in cumsum)  # the CPU's: in_ptr0 *fp32


@pytest.mark.slow
def test_a_factorys_guards_name_the_gpus_classes_not_kernelscopes(tmp_path):
    """The guards a factory's recording keeps (`why`, the dump) read as a GPU's: the input a
    `Tensor`, the parameters `Parameter`, CUDA dispatch keys; before, `VirtualGpuTensor`."""
    from kernelscope.engine.recorder import RecordOptions, record_factory

    run = record_factory(f"{REPO / 'examples/mlp.py'}:make", RecordOptions(device="virtual-cuda", workspace=tmp_path))
    tensors = [guard.expression for guard in run.guards if guard.kind == "TENSOR_MATCH"]
    assert tensors and not any("VirtualGpuTensor" in text or "CPU" in text for text in tensors), tensors
    assert any(text.startswith("check_tensor(x, Tensor, DispatchKeySet(CUDA, ") for text in tensors), tensors
    assert any(text.startswith("check_tensor(self._modules['fc1']._parameters['weight'], Parameter, ")
               for text in tensors), tensors
