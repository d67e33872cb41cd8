"""A program's own Triton kernels on the virtual GPU (devices/user_triton.py), without Inductor.

Each test runs inside `cuda_program()`: the kernels are launched as a GPU program launches
them and run in Triton's interpreter on the virtual GPU's CPU tensors. The recording of a
whole program with user kernels (Inductor's wrappers, forward and backward) is in
test_user_triton_program.py.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from kernelscope.engine.devices.cuda_program import Unavailable, cuda_program  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class  # noqa: E402


@pytest.fixture
def program():
    with cuda_program():
        yield


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * x + _twice(y), mask=mask)


@triton.jit
def block_kernel(out_ptr, BLOCK: tl.constexpr):
    """Writes its own BLOCK: which config ran."""
    tl.store(out_ptr + tl.program_id(0), BLOCK)


@triton.jit
def inline_ptx_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr + offsets, y)


def _no_timing(kernel_call, quantiles):
    raise AssertionError("a config was benchmarked")


def _without_the_first(configs, named_args, **kwargs):
    return configs[1:]


autotuned = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=[],
                            do_bench=_no_timing)(block_kernel)
pruned = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}),
                                  triton.Config({"BLOCK": 128})], key=[], do_bench=_no_timing,
                         prune_configs_by={"early_config_prune": _without_the_first})(block_kernel)
heuristic = triton.heuristics({"BLOCK": lambda args: 16 * args["out_ptr"].numel()})(block_kernel)


def axpy(x, y, a):
    out = torch.empty_like(x)
    axpy_kernel[(triton.cdiv(x.numel(), 16),)](x, y, out, a, x.numel(), BLOCK=16)
    return out


def test_a_launch_runs_in_the_interpreter_on_the_virtual_gpu(program):
    x, y = torch.randn(50, device="cuda"), torch.randn(50, device="cuda")
    out = axpy(x, y, 3.0)  # 4 program instances, the last one masked; a @triton.jit helper inside
    assert type(out) is tensor_class() and out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), 3.0 * x.cpu() + 2 * y.cpu())


def test_a_helper_called_outside_a_kernel_raises_as_in_triton(program):
    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        _twice(1)


def test_what_the_interpreter_cannot_run_is_refused_in_one_line(program):
    x = torch.randn(16, device="cuda")
    with pytest.raises(Unavailable) as caught:
        inline_ptx_kernel[(1,)](x, BLOCK=16)
    message = str(caught.value)
    assert message.startswith(f"{__file__}:") and "\n" not in message, message  # the program's own line
    assert "`inline_ptx_kernel[grid](...)`" in message and "inline_asm not supported" in message, message


def test_autotune_launches_its_first_config_untimed(program):
    out = torch.zeros(2, dtype=torch.int32, device="cuda")
    autotuned[(2,)](out)
    assert out.tolist() == [32, 32]
    assert autotuned.best_config.kwargs == {"BLOCK": 32} and len(autotuned.configs) == 2  # put back


def test_autotune_launches_the_first_config_its_pruning_keeps(program):
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    pruned[(1,)](out)
    assert out.tolist() == [64] and len(pruned.configs) == 3


def test_heuristics_give_the_meta_parameter(program):
    out = torch.zeros(3, dtype=torch.int32, device="cuda")
    heuristic[(3,)](out)
    assert out.tolist() == [48, 48, 48]


def test_triton_op_with_its_autograd(program):
    from torch.library import triton_op, wrap_triton

    @triton_op("kernelscope_test::axpy", mutates_args={})
    def op(x: torch.Tensor, y: torch.Tensor, a: float) -> torch.Tensor:
        out = torch.empty_like(x)
        wrap_triton(axpy_kernel)[(triton.cdiv(x.numel(), 16),)](x, y, out, a, x.numel(), BLOCK=16)
        return out

    def backward(ctx, grad):  # d/dx = a, d/dy = 2, each through the kernel
        return op(grad, torch.zeros_like(grad), ctx.a), op(torch.zeros_like(grad), grad, 0.0), None

    def setup_context(ctx, inputs, output):
        ctx.a = inputs[2]

    op.register_autograd(backward, setup_context=setup_context)
    x = torch.randn(20, device="cuda", requires_grad=True)
    y = torch.randn(20, device="cuda", requires_grad=True)
    (op(x, y, 3.0) * torch.arange(20.0, device="cuda")).sum().backward()
    weights = torch.arange(20.0)
    torch.testing.assert_close(x.grad.cpu(), 3.0 * weights)
    torch.testing.assert_close(y.grad.cpu(), 2.0 * weights)
    assert x.grad.device.type == "cuda"


def dynamo_captures_the_kernel_and_its_graph_runs_it():
    """Dynamo captures the launch as on a GPU (the mutation wrapper, on fake cuda tensors);
    the captured graph run eagerly, and a launch after a graph break, are interpreted."""
    captured = []

    def backend(gm, example_inputs):
        captured.append(gm)
        return gm.forward

    def model(x, y):
        z = axpy(x, y, 0.5)
        torch._dynamo.graph_break()
        return axpy(z, y, 1.0)

    torch._dynamo.reset()
    try:
        with cuda_program():
            x, y = torch.randn(40, device="cuda"), torch.randn(40, device="cuda")
            out = torch.compile(model, backend=backend)(x, y)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(out.cpu(), 0.5 * x.cpu() + 4 * y.cpu())
    assert len(captured) == 2
    for gm in captured:
        [launch] = [node for node in gm.graph.nodes if "triton_kernel_wrapper" in str(node.target)]
        assert launch.kwargs["kwargs"]["x_ptr"].meta["example_value"].device.type == "cuda"


def test_dynamo_captures_the_kernel_and_its_graph_runs_it():
    # In a process of its own: with a bare backend (`gm.forward`, not kernelscope's), Dynamo
    # run after other compiles of the same test process tries to trace Triton's interpreter
    # frames behind the graph break. kernelscope's own path in one process after other
    # compiles: test_user_triton_program.py::test_recorded_after_another_compile_in_one_process.
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    code = ("import sys; sys.path.insert(0, 'tests/engine/devices'); "
            "import test_user_triton as t; t.dynamo_captures_the_kernel_and_its_graph_runs_it(); print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(repo), TORCHINDUCTOR_COMPILE_THREADS="1"))
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_the_launcher_is_triton_s_again_after_the_program():
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    before = (JITFunction.run, JITFunction.__call__, Autotuner.run)
    with cuda_program():
        assert JITFunction.run is not before[0]
    assert (JITFunction.run, JITFunction.__call__, Autotuner.run) == before


def test_the_wrapper_names_a_user_kernel_apart_from_its_variable():
    """Inductor defines a program's kernel `add_kernel` as `add_kernel_0`: its launches name the variable."""
    from kernelscope.compile_text import wrapper_code

    text = ("add_kernel_0 = async_compile.triton('add_kernel', '''\n@triton.jit\ndef add_kernel(x_ptr):\n    pass\n"
            "''', device_str='cuda')\n"
            "triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '''\n@triton.jit\n"
            "def triton_poi_fused_0(x_ptr):\n    pass\n''', device_str='cuda')\n")
    user, inductor = wrapper_code.read_layout(text).kernel_blocks
    assert (user.name, user.launched_as, user.user_defined) == ("add_kernel", "add_kernel_0", True)
    assert (inductor.name, inductor.launched_as, inductor.user_defined) == ("triton_poi_fused_0",) * 2 + (False,)
