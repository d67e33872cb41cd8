"""Higher-order ops in GPU programs under virtual-cuda (devices/program_hops.py,
eager_regions.py, program_autograd.py): recorded as a GPU compiles them, with real values.

examples/cond_model.py (`torch.cond`, inference) and examples/nested_regions_train.py
(blocks under `torch.compiler.nested_compile_region`, every other one checkpointed, trained
two steps) are each recorded once for this module, in a subprocess as a user runs them, and
their printed values are compared with the same script run plainly on the CPU without
torch.compile (`--device cpu --eager`). A `while_loop` program, a factory whose model uses
nested regions (`compile PATH:FACTORY --train`) and eager higher-order ops inside the
program (`torch.cond` with gradients, a checkpoint that makes tensors on the input's device)
are checked beside them.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import EXAMPLES, REPO
from program_runs import kernelscope, recorded_run

pytestmark = pytest.mark.slow


def on_the_cpu(script, *args) -> str:
    """The script's stdout, run plainly on the CPU without torch.compile."""
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--device", "cpu", "--eager", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def recorded(tmp_path_factory, name, *args):
    store = tmp_path_factory.mktemp(name) / ".kernelscope"
    done = kernelscope("run", f"examples/{name}.py", "--store", str(store), *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return store, done.stdout


@pytest.fixture(scope="module")
def cond_model(tmp_path_factory):
    """examples/cond_model.py recorded: (store, its stdout)."""
    return recorded(tmp_path_factory, "cond_model")


@pytest.fixture(scope="module")
def nested_train(tmp_path_factory):
    """examples/nested_regions_train.py recorded (two steps): (store, its stdout)."""
    return recorded(tmp_path_factory, "nested_regions_train", "--", "--steps", "2")


def _post_grad(store, graph, number=1):
    return (store / "runs" / str(number) / graph["post_grad_file"]["path"]).read_text()


def _wrapper(store, graph, number=1):
    return (store / "runs" / str(number) / graph["wrapper_file"]["path"]).read_text()


def _numbers(text):
    return [float(value) for value in re.findall(r"-?\d+\.\d+", text)]


def _all_on_cuda(store, run, number=1):
    """Every value of every graph on cuda, its buffers made there, and Triton kernels (a part
    holding only a matmul of a region has none of its own)."""
    for graph in run["graphs"]:
        post_grad, wrapper = _post_grad(store, graph, number), _wrapper(store, graph, number)
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), graph["kind"]
        assert "empty_strided_cpu(" not in wrapper and "device_str='cpu'" not in wrapper, graph["kind"]
    assert any(kernel["kind"] == "triton" for graph in run["graphs"] for kernel in graph["kernels"])


def test_the_cond_model_is_compiled_for_cuda_with_both_branches(cond_model):
    store, _ = cond_model
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda"
    assert {graph["kind"] for graph in run["graphs"]} == {"inference"}
    _all_on_cuda(store, run)
    conds = [graph for graph in run["graphs"] if "torch.ops.higher_order.cond(" in _post_grad(store, graph)]
    assert conds, "no post-grad graph holds the cond"
    # both branches of the cond are subgraphs of the graph (the MLP's gelu, decomposed to erf,
    # and the cheap path's tanh), compiled with it: each a function of the wrapper, on cuda
    [graph] = [graph for graph in conds if "class true_graph_0" in (text := _post_grad(store, graph))
               and "class false_graph_0" in text and "aten.erf" in text and "aten.tanh" in text]
    wrapper = _wrapper(store, graph)
    for branch in ("true_graph_0", "false_graph_0"):
        assert f"def {branch}(args):" in wrapper and f"{branch}_buf0 = empty_strided_cuda(" in wrapper


def test_the_cond_models_values_are_the_cpu_programs(cond_model):
    _, stdout = cond_model
    printed = [line for line in stdout.splitlines() if " inputs (mean" in line]
    expected = on_the_cpu("cond_model.py").splitlines()
    assert len(printed) == len(expected) == 2
    for line, reference in zip(printed, expected):
        assert line.split(": logits")[0] == reference.split(": logits")[0]  # the same inputs
        assert line.split("classes")[1] == reference.split("classes")[1]  # the same predictions
        assert _numbers(line) == pytest.approx(_numbers(reference), abs=1e-4)


def test_the_nested_regions_are_compiled_forward_and_backward_for_cuda(nested_train):
    store, _ = nested_train
    run = recorded_run(store)
    kinds = [graph["kind"] for graph in run["graphs"]]
    assert {"forward", "backward"} == set(kinds)
    _all_on_cuda(store, run)
    texts = {kind: [_post_grad(store, graph) for graph in run["graphs"] if graph["kind"] == kind]
             for kind in ("forward", "backward")}
    for kind in ("forward", "backward"):
        # the compiled block, called once per layer as a region
        assert any(text.count("torch.ops.higher_order.invoke_subgraph(") >= 2 for text in texts[kind]), kind
    # the checkpointed blocks' attention runs again in the backward (recomputed, not saved)
    assert any("aten._scaled_dot_product_efficient_attention.default(" in text for text in texts["backward"])


def test_the_nested_regions_losses_are_the_cpu_programs(nested_train):
    _, stdout = nested_train
    printed = [float(value) for value in re.findall(r"step \d+: loss ([0-9.]+)", stdout)]
    expected = [float(value) for value in re.findall(r"step \d+: loss ([0-9.]+)", on_the_cpu("nested_regions_train.py",
                                                                                           "--steps", "2"))]
    assert len(printed) == len(expected) == 2 and printed[0] != printed[1]  # it trained
    assert printed == pytest.approx(expected, abs=1e-4)


def test_a_while_loop_program(tmp_path):
    script = tmp_path / "countdown.py"
    script.write_text(
        "import torch\n"
        "from torch._higher_order_ops import while_loop\n\n"
        "torch.manual_seed(0)\n"
        "layer = torch.nn.Linear(8, 8).cuda()\n\n"
        "def refine(x):\n"
        "    def more(i, t):\n"
        "        return i < 3\n"
        "    def step(i, t):\n"
        "        return i + 1, torch.tanh(layer(t))\n"
        "    return while_loop(more, step, (torch.zeros((), dtype=torch.int64, device=x.device), x))[1]\n\n"
        "x = torch.randn(4, 8, device='cuda')\n"
        "with torch.no_grad():\n"
        "    out = torch.compile(refine)(x)\n"
        "print(out.device, f'{out.sum().item():.5f}')\n")
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", str(script), "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 8)
    expected = torch.randn(4, 8)
    with torch.no_grad():
        for _ in range(3):
            expected = torch.tanh(layer(expected))
    device, value = done.stdout.splitlines()[0].split()
    assert device == "cuda:0" and float(value) == pytest.approx(expected.sum().item(), abs=1e-4)
    run = recorded_run(store)
    _all_on_cuda(store, run)
    assert any("torch.ops.higher_order.while_loop(" in _post_grad(store, graph) for graph in run["graphs"])


def test_a_factory_with_nested_regions_trains(tmp_path):
    """`compile PATH:FACTORY --train` (a model of CPU tensors, compiled on a cuda copy): the
    graph run eagerly calls the regions inline (torch's own autograd of invoke_subgraph needs
    a fake mode: "fake_mode should be enabled for HOPs")."""
    factory = tmp_path / "stack.py"
    factory.write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.linear = nn.Linear(32, 32)\n\n"
        "    @torch.compiler.nested_compile_region\n"
        "    def forward(self, x):\n"
        "        return torch.relu(self.linear(x)) + x\n\n"
        "class Stack(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.blocks = nn.ModuleList(Block() for _ in range(3))\n\n"
        "    def forward(self, x):\n"
        "        for block in self.blocks:\n"
        "            x = block(x)\n"
        "        return x\n\n"
        "def make(device='cpu'):\n"
        "    return Stack().to(device), (torch.randn(8, 32, device=device),)\n")
    store = tmp_path / ".kernelscope"
    done = kernelscope("compile", f"{factory}:make", "--train", "--target", "virtual-cuda", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    run = recorded_run(store)
    assert {graph["kind"] for graph in run["graphs"]} == {"forward", "backward"}
    _all_on_cuda(store, run)
    assert any("torch.ops.higher_order.invoke_subgraph(" in _post_grad(store, graph)
               for graph in run["graphs"] if graph["kind"] == "backward")


def test_eager_higher_order_ops_and_checkpoints_inside_a_program():
    """Without a compile: `torch.cond` with gradients (its autograd traces the branches) and a
    non-reentrant checkpoint whose block makes a tensor on its input's device (recomputed in
    the backward) give the CPU program's values and gradients, on the virtual GPU."""
    import torch
    from torch.utils.checkpoint import checkpoint

    from kernelscope.engine.devices.cuda_program import cuda_program
    from kernelscope.engine.devices.virtual_gpu_tensor import is_virtual

    def program(device):
        torch.manual_seed(0)
        linear = torch.nn.Linear(8, 8).to(device)
        x = torch.randn(4, 8, device=device)

        def block(t):
            positions = torch.arange(t.shape[-1], device=t.device)
            return torch.relu(linear(t)) * positions

        branched = torch.cond(x.sum() > 0, lambda t: linear(t).sin(), lambda t: linear(t).cos(), (x,))
        out = checkpoint(block, branched, use_reentrant=False)
        out.sum().backward()
        return out, linear.weight.grad

    expected_out, expected_grad = program("cpu")
    with cuda_program():
        out, grad = program("cuda")
        assert is_virtual(out) and is_virtual(grad) and out.device.type == "cuda"
        out, grad = out.cpu(), grad.cpu()
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(grad, expected_grad)
