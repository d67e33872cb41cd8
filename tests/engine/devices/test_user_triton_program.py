"""`kernelscope run` of a GPU program with Triton kernels of its own, under virtual-cuda.

examples/user_triton_kernel.py (a SiLU `autograd.Function` whose forward kernel is
autotuned and whose backward kernel uses heuristics, a `triton_op` residual add with
`register_autograd`, a compiled model trained with AdamW) is recorded once for this module
in a subprocess, as a user runs it: the user kernels are captured and written into the cuda
wrappers of the forward and the backward, as a GPU compiles them, and the printed losses are
the ones the same math gives in torch (the kernels ran in Triton's interpreter).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import EXAMPLES, REPO
from program_runs import kernelscope, recorded_run, recorded_text

pytestmark = pytest.mark.slow

EXAMPLE = "examples/user_triton_kernel.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """examples/user_triton_kernel.py recorded (two training steps): (store, the script's stdout)."""
    store = tmp_path_factory.mktemp("user-triton") / ".kernelscope"
    done = kernelscope("run", EXAMPLE, "--target", "virtual-cuda", "--store", str(store), "--", "--steps", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    return store, done.stdout


def _launches(wrapper):
    """The user kernels the wrapper launches, by the name Triton's source gives them."""
    return set(re.findall(r"^\s+(\w+_kernel)_\d+\.run\(", wrapper, re.MULTILINE))


def test_the_user_kernels_are_in_the_forward_and_the_backward(recorded):
    store, _ = recorded
    run = recorded_run(store)
    assert run["device"] == "virtual-cuda"
    graphs = {graph["kind"]: graph for graph in run["graphs"]}
    assert sorted(graphs) == ["backward", "forward"]
    expected = {"forward": {"silu_forward_kernel", "axpby_kernel"},
                "backward": {"silu_backward_kernel", "axpby_kernel"}}
    for kind, graph in graphs.items():
        wrapper, post_grad = recorded_text(store, graph, "wrapper_file"), recorded_text(store, graph, "post_grad_file")
        assert expected[kind] <= {kernel["name"] for kernel in graph["kernels"] if kernel["kind"] == "triton"}, kind
        assert _launches(wrapper) == expected[kind], kind
        assert "triton_kernel_wrapper_mutation" in post_grad, kind
        assert "device_str='cuda'" in wrapper and "empty_strided_cpu(" not in wrapper, kind
        assert "cuda:0" in post_grad and not re.search(r'\]cpu"', post_grad), kind
    forward = recorded_text(store, graphs["forward"], "wrapper_file")
    # the autotuned kernel keeps both configs in the wrapper, as on a GPU (the eager run used the first)
    assert "@triton_heuristics.user_autotune(" in forward and "def silu_forward_kernel(" in forward
    assert "configs=[{'BLOCK': 256, 'num_warps': 4" in forward and "{'BLOCK': 128, 'num_warps': 2" in forward
    assert "def _sigmoid(" in forward  # the @triton.jit helper goes with the kernel


def test_each_user_kernel_links_to_the_line_that_launches_it(recorded):
    """Kernel -> the launch's node (Inductor's own mapping agrees) -> the program's line,
    and the wrapper's launch line -> the kernel; Triton's autotune/heuristics frames skipped."""
    store, _ = recorded
    launched_at = {  # kernel -> the example's code at the line its launch is attributed to
        "silu_forward_kernel": "silu_forward_kernel[", "silu_backward_kernel": "silu_backward_kernel[",
        "axpby_kernel": "return axpby(",
    }
    for graph in recorded_run(store)["graphs"]:
        nodes = {node["name"]: node for node in graph["post_grad_nodes"]}
        wrapper = recorded_text(store, graph, "wrapper_file").splitlines()
        for kernel in graph["kernels"]:
            if kernel["name"] not in launched_at:
                continue
            [node] = kernel["nodes"]
            assert kernel["inductor_nodes"] == [node], (graph["kind"], kernel["name"])
            assert nodes[node]["target"] == "torch.ops.higher_order.triton_kernel_wrapper_mutation"
            source = nodes[node]["source"]
            assert source["file"] == EXAMPLE and source["code"].startswith(launched_at[kernel["name"]]), source
            [line] = kernel["wrapper_lines"]
            assert re.match(rf"\s+{kernel['name']}_\d+\.run\(", wrapper[line - 1]), wrapper[line - 1]
            assert all(row["nodes"] == [node] for row in kernel["lines"])


def _same_program_in_torch(steps: int):
    """The example's losses with its kernels written as torch ops, on the CPU, same seeds."""
    import torch
    import torch.nn.functional as F

    spec = importlib.util.spec_from_file_location("user_triton_kernel", EXAMPLES / "user_triton_kernel.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    torch.manual_seed(0)
    model = example.Block()
    x, target = torch.randn(16, 64), torch.randn(16, 64)
    torch.randn(1000)  # the script's check of its SiLU kernel draws these next
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = F.mse_loss(1.0 * model.down(F.silu(model.up(x))) + 0.5 * x, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_the_printed_losses_are_the_same_math_in_torch(recorded):
    """Step 0 checks the forward kernels, step 1 the backward ones (the gradients AdamW used)."""
    _, stdout = recorded
    printed = [float(value) for value in re.findall(r"step \d+: loss ([0-9.]+)", stdout)]
    assert printed == pytest.approx(_same_program_in_torch(2), abs=2e-6)
    error = float(re.search(r"silu kernel max error (\S+)", stdout).group(1))
    assert error < 1e-5  # the uncompiled launch, against torch's SiLU


def test_an_inference_run_records_the_kernels(tmp_path):
    store = tmp_path / ".kernelscope"
    done = kernelscope("run", EXAMPLE, "--target", "virtual-cuda", "--store", str(store), "--", "--eval")
    assert done.returncode == 0, done.stderr[-3000:]
    [graph] = recorded_run(store)["graphs"]
    assert graph["kind"] == "inference"
    assert _launches(recorded_text(store, graph, "wrapper_file")) == {"silu_forward_kernel", "axpby_kernel"}
    printed = float(re.search(r"eval: loss ([0-9.]+)", done.stdout).group(1))
    assert printed == pytest.approx(_same_program_in_torch(1)[0], abs=2e-6)


def test_recorded_after_another_compile_in_one_process(tmp_path):
    """As a warm engine worker (`kernelscope watch`) records them: a compiled function, a
    factory, then the program with its own kernels, in one process. The factory's recording
    (no CUDA device) leaves torch's cached `has_triton` False; the program asks again, so its
    kernels are traced as kernels (no graph break at the autotuner, a forward and a backward)."""
    first = tmp_path / "first.py"
    first.write_text("import torch\nprint(torch.compile(lambda x: (x * 2).sin())(torch.randn(8)).sum())\n")
    code = textwrap.dedent(f"""
        from pathlib import Path
        from kernelscope.engine.record_options import RecordOptions
        from kernelscope.engine.recorder import record_factory, record_script
        for script, args in (({str(first)!r}, []), ("examples/user_triton_kernel.py", ["--steps", "1"])):
            if script.endswith("user_triton_kernel.py"):
                record_factory("examples/mlp.py:make", RecordOptions(device="virtual-cuda", workspace=Path(".")))
            run = record_script(Path(script), args, RecordOptions(device="virtual-cuda", workspace=Path(".")))
            print("KERNELS", sorted({{k.name for g in run.graphs for k in g.kernels if k.kind != "extern"}}))
            print("KINDS", [g.kind for g in run.graphs], len(run.graph_breaks))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=str(REPO), TORCHINDUCTOR_COMPILE_THREADS="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    kernels = [line for line in done.stdout.splitlines() if line.startswith("KERNELS")]
    assert len(kernels) == 2 and "triton_poi_fused_mul_sin_0" in kernels[0]
    assert all(name in kernels[1] for name in ("silu_forward_kernel", "silu_backward_kernel", "axpby_kernel"))
    kinds = [line for line in done.stdout.splitlines() if line.startswith("KINDS")]
    assert kinds[1] == "KINDS ['forward', 'backward'] 0"


def test_the_summary_says_every_user_kernel_line_links_to_the_users_source(recorded):
    """The run's summary counts the user kernels' body lines linked line for line to the
    example's kernel source (engine/user_kernels.py): every one."""
    _, stdout = recorded
    found = re.search(r"user Triton kernel lines linked to the user's kernel source: 100\.0% \((\d+)/(\d+)\)", stdout)
    assert found and found.group(1) == found.group(2) and int(found.group(1)) > 0, stdout[-2000:]
