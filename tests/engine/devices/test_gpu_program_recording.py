"""`kernelscope run` of GPU programs under virtual-cuda: recorded as a GPU compiles them.

examples/gpu_train_script.py (written for a GPU: `.to("cuda")`, bf16 autocast, a compiled
model and a compiled AdamW step, synchronize, memory statistics, an early exit on `.item()`)
and examples/device_branch.py are each recorded once for this module, in a subprocess as a
user runs them; a program that needs what virtual-cuda cannot give is refused in one line
and leaves the store as it was.
"""
from __future__ import annotations

import re

import pytest
from conftest import EXAMPLES
from program_runs import kernelscope, recorded_run, recorded_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gpu_script(tmp_path_factory):
    """examples/gpu_train_script.py recorded (two steps): (store, the script's stdout)."""
    store = tmp_path_factory.mktemp("gpu-script") / ".kernelscope"
    done = kernelscope("run", "examples/gpu_train_script.py", "--store", str(store), "--", "--steps", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    return store, done.stdout


def _targets(graph):
    return {node["target"] for node in graph["post_grad_nodes"] if node["op"] == "call_function"}


def test_the_model_and_its_optimizer_step_are_recorded_on_cuda(gpu_script):
    store, _ = gpu_script
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda"
    graphs = {graph["kind"]: graph for graph in run["graphs"]}
    assert sorted(graphs) == ["backward", "forward", "inference"]  # the model's, and the optimizer step's
    for graph in run["graphs"]:
        assert any(kernel["kind"] == "triton" for kernel in graph["kernels"]), graph["kind"]
        post_grad, wrapper = recorded_text(store, graph, "post_grad_file"), recorded_text(store, graph, "wrapper_file")
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), graph["kind"]  # every value on cuda
        assert "device_str='cuda'" in wrapper and "empty_strided_cpu(" not in wrapper, graph["kind"]
    # the optimizer step: AdamW's foreach path with capturable steps, compiled as on a GPU
    assert {"aten._foreach_addcdiv.Scalar", "aten._foreach_pow.ScalarAndTensor"} <= _targets(graphs["inference"])
    assert any(kernel["name"].startswith("triton_for_fused") for kernel in graphs["inference"]["kernels"])
    # the forward: the logits' `device.type == "cuda"` branch, bf16 autocast's matmuls, SDPA as on sm_90
    forward = recorded_text(store, graphs["forward"], "post_grad_file")
    assert re.search(r'mm: "bf16\[', forward) and "aten._scaled_dot_product_cudnn_attention" in forward
    assert "logits = logits.float()" in forward
    # every node's line is the program's (or torch's), never kernelscope's own frames
    sources = {node["source"]["file"] for graph in run["graphs"] for node in graph["post_grad_nodes"]
               if node.get("source")}
    assert "examples/gpu_train_script.py" in sources and not any("kernelscope/" in file for file in sources)
    # the graph breaks are torch's own (the optimizer's `_use_grad`, as on a GPU); nothing recompiled
    assert {brk["source"]["function"] for brk in run["graph_breaks"]} == {"_use_grad"}
    assert run["recompiles"] == []
    # bf16 autocast around the compiled model: CUDA's op lists, in the backward too (AOTAutograd
    # traces it under the forward's autocast): a bias gradient is summed into fp32, as on a GPU
    # (the CPU's lists sum in bf16); nothing about autocast is left to warn of
    backward = recorded_text(store, graphs["backward"], "post_grad_file")
    assert re.search(r"aten\.sum\.dim_IntList\([^)]*dtype = torch\.float32\)", backward)
    assert not any("autocast" in warning for warning in run["warnings"]), run["warnings"]


def test_the_printed_losses_are_real(gpu_script):
    """The script's losses are the values its model computes on the CPU (same seeds, bf16
    autocast): the program ran for real, and its `.item()` answered. The program's eager run
    follows CUDA's autocast lists; for this model (its layer norms see the fp32 residual
    stream) they cast as the CPU's do, so the CPU's autocast computes the same loss."""
    import importlib.util

    import torch
    import torch.nn.functional as F

    _, stdout = gpu_script
    printed = [float(value) for value in re.findall(r"step \d+: loss ([0-9.]+)", stdout)]
    assert len(printed) == 2 and "device: NVIDIA H100 (virtual)" in stdout and "peak memory 0.0 MiB" in stdout
    spec = importlib.util.spec_from_file_location("gpu_train_script", EXAMPLES / "gpu_train_script.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    torch.manual_seed(0)
    model = example.TinyLM()
    tokens = torch.randint(0, 256, (8, 33))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(tokens[:, :-1]).float()
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
    assert printed[0] == pytest.approx(loss.item(), abs=2e-4)


def test_the_fused_optimizer_runs_eagerly_as_on_a_gpu(tmp_path):
    """Fused AdamW is `torch.compiler.disable`d in torch: no optimizer graph, as on a GPU."""
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", "examples/gpu_train_script.py", "--store", str(store), "--", "--steps", "1", "--fused")
    assert done.returncode == 0, done.stderr[-3000:]
    run = recorded_run(store)
    assert sorted(graph["kind"] for graph in run["graphs"]) == ["backward", "forward"]
    assert any(brk["source"]["file"].endswith("torch/optim/adam.py") and "disable" in brk["reason"]
               for brk in run["graph_breaks"])


def test_the_device_branch_is_the_gpus(tmp_path):
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", "examples/device_branch.py", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cuda branch" in done.stdout
    [graph] = recorded_run(store)["graphs"]
    targets = _targets(graph)
    assert "aten.sigmoid.default" in targets and "aten.tanh.default" not in targets


def test_cpu_tensors_of_a_gpu_program_stay_on_the_cpu(tmp_path):
    """A graph Dynamo captured on the virtual GPU is compiled as captured: a CPU tensor among
    its inputs stays a CPU input, as on a GPU (graphs of CPU scripts are moved to cuda)."""
    script = tmp_path / "mixed.py"
    script.write_text("import torch\n\n"
                      "x = torch.randn(8, 8, device='cuda')\n"
                      "scale = torch.tensor(0.5)  # a CPU scalar, as optimizers keep their step\n"
                      "print(torch.compile(lambda x, s: (x * s).relu())(x, scale).device)\n")
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", str(script), "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == "cuda:0"
    [graph] = recorded_run(store)["graphs"]
    post_grad = recorded_text(store, graph, "post_grad_file")
    assert re.search(r'"f32\[8, 8\]\[8, 1\]cuda:0"', post_grad) and re.search(r'"f32\[\]\[\]cpu"', post_grad)


def test_a_program_needing_a_cuda_extension_gets_one_line_and_the_store_survives(gpu_script, tmp_path):
    store, _ = gpu_script
    script = tmp_path / "needs_extension.py"
    script.write_text("import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
                      "x = torch.randn(4, device='cuda')\n"
                      "ext = load_inline('fused_gelu', cpp_sources='', cuda_sources='__global__ void k() {}')\n")
    done = kernelscope("run", str(script), "--store", str(store))
    assert done.returncode == 3
    [line] = done.stderr.strip().splitlines()
    assert line == (f"kernelscope: error: {script}:5: virtual-cuda cannot run "
                    "`torch.utils.cpp_extension.load_inline('fused_gelu', cuda_sources=...)`: it builds a CUDA C++ "
                    "extension; its kernels are CUDA code, which needs a GPU to build and run; record this program on "
                    "a GPU with --target cuda, or give the program a path without the extension (a PyTorch or Triton "
                    "version of the op) (the last good run in the store is unchanged) "
                    "(--traceback shows the full error)")
    listed = kernelscope("runs", "--store", str(store))
    assert listed.returncode == 0 and "needs_extension" not in listed.stdout and "gpu_train_script" in listed.stdout
