"""A program on the virtual GPU (devices/cuda_program.py): what it sees, without a compile.

Each test runs its code inside `cuda_program()`, the context `kernelscope run` puts a script
in under virtual-cuda; the recordings of whole scripts are in test_gpu_program_recording.py.
"""
from __future__ import annotations

import copy
import importlib
import io
import pickle

import pytest

torch = pytest.importorskip("torch")

from kernelscope.engine.devices.cuda_program import Unavailable, cuda_program  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class  # noqa: E402

CUDA = torch.device("cuda", 0)


@pytest.fixture
def program():
    with cuda_program():
        yield


def on_gpu(tensor) -> bool:
    """Answers as a cuda tensor wherever Python looks."""
    return (type(tensor) is tensor_class() and tensor.device == CUDA and tensor.device.type == "cuda"
            and tensor.is_cuda and not tensor.is_cpu and tensor.get_device() == 0)


def on_cpu(tensor) -> bool:
    return type(tensor) is torch.Tensor and tensor.device.type == "cpu" and tensor.get_device() == -1


# -- the device ----------------------------------------------------------------------------------


def test_the_program_sees_one_h100(program):
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
    assert torch.cuda.get_device_name() == "NVIDIA H100 (virtual)"
    assert torch.cuda.get_device_capability() == (9, 0) and torch.cuda.get_arch_list() == ["sm_90"]
    props = torch.cuda.get_device_properties(0)
    assert props.total_memory == 80 * 2**30 and props.multi_processor_count == 132
    assert torch.cuda.is_bf16_supported() and torch.cuda.is_initialized()
    assert torch.accelerator.is_available() and torch.accelerator.current_accelerator() == torch.device("cuda")
    torch.cuda.set_device(0)
    with torch.cuda.device(0):
        assert torch.cuda.current_device() == 0


def test_everything_is_put_back_when_the_program_ends():
    import torch.utils._foreach_utils

    optim = importlib.import_module("torch.optim.optimizer")  # torch.optim deletes the attribute
    available = torch.cuda.is_available()
    with cuda_program():
        x = torch.randn(2, device="cuda")
        assert torch.__future__.get_swap_module_params_on_conversion()
        assert torch._C._len_torch_function_stack() == 1
    assert torch.cuda.is_available() == available
    assert not torch.__future__.get_swap_module_params_on_conversion()
    assert torch._C._len_torch_function_stack() == 0
    assert tensor_class() not in optim._foreach_supported_types
    assert tensor_class() not in torch.utils._foreach_utils._foreach_supported_types
    assert x.device.type == "cuda"  # a tensor made on the virtual GPU keeps answering so


# -- tensors on the virtual GPU ------------------------------------------------------------------


MADE_ON_CUDA = {
    "randn device='cuda'": lambda: torch.randn(2, 3, device="cuda"),
    "zeros device='cuda:0'": lambda: torch.zeros(2, 3, device="cuda:0"),
    "empty device=torch.device": lambda: torch.empty(2, 3, device=torch.device("cuda")),
    "ones device=0": lambda: torch.ones(2, 3, device=0),
    "tensor(data, device='cuda')": lambda: torch.tensor([[1.0, 2.0, 3.0]], device="cuda"),
    ".to('cuda')": lambda: torch.ones(2, 3).to("cuda"),
    ".to(device='cuda', dtype)": lambda: torch.ones(2, 3).to(device="cuda", dtype=torch.float16),
    ".cuda()": lambda: torch.ones(2, 3).cuda(),
    ".cuda(0, non_blocking)": lambda: torch.ones(2, 3).cuda(0, non_blocking=True),
    ".to(cuda tensor)": lambda: torch.ones(2, 3).to(torch.zeros(1, device="cuda")),
    "zeros_like(cuda)": lambda: torch.zeros_like(torch.ones(2, device="cuda")),
    "new_zeros": lambda: torch.ones(2, device="cuda").new_zeros(3),
    "with torch.device('cuda')": lambda: _under_default_device(),
    "set_default_device('cuda')": lambda: _under_set_default_device(),
}


def _under_default_device():
    with torch.device("cuda"):
        return torch.zeros(2)


def _under_set_default_device():
    torch.set_default_device("cuda")
    try:
        return torch.zeros(2)
    finally:
        torch.set_default_device(None)


@pytest.mark.parametrize("name", MADE_ON_CUDA)
def test_what_the_program_puts_on_cuda_answers_cuda(program, name):
    tensor = MADE_ON_CUDA[name]()
    assert on_gpu(tensor), (name, type(tensor), tensor.device)
    assert tensor.type().startswith("torch.cuda.")


def test_ops_keep_results_on_the_virtual_gpu(program):
    x = torch.randn(4, 6, device="cuda")
    w = torch.randn(5, 6, device="cuda")
    results = [x * 2 + 1, x.sum(), x[0], x.view(6, 4), x.t(), torch.cat([x, x]), torch.nn.functional.linear(x, w),
               x.to(torch.float16), x.float(), x.detach(), x.clone(), x.max(dim=1).values, *x.split(2),
               x @ w.T, torch.where(x > 0, x, 0.0)]
    assert all(on_gpu(result) for result in results)
    assert x.to("cuda") is x and x.cuda() is x  # nothing to move, as on a GPU


def test_the_host_is_the_cpu(program):
    x = torch.randn(4, device="cuda")
    host = x.cpu()
    assert on_cpu(host) and torch.equal(host, x.cpu())
    host.add_(1)  # a copy, as the GPU's copy to the host is
    assert not torch.equal(host, x.cpu())
    assert on_cpu(x.to("cpu")) and x.to("cpu", torch.float16).dtype == torch.float16
    assert on_cpu(torch.empty_like(x, device="cpu"))
    kept = torch.zeros(4)
    kept.copy_(x)  # an in-place op on a CPU tensor keeps it there
    assert on_cpu(kept) and torch.equal(kept, x.cpu())
    assert on_cpu(torch.randn(3))  # no device: the CPU, as in the GPU program


def test_values_are_real(program):
    torch.manual_seed(0)
    on_device = torch.randn(5, device="cuda")
    torch.manual_seed(0)
    on_host = torch.randn(5)
    assert torch.equal(on_device.cpu(), on_host)  # the virtual GPU draws from the CPU's generator
    assert (on_device * 2).sum().item() == pytest.approx((on_host * 2).sum().item())
    assert on_device.tolist() == on_host.tolist()


def test_numpy_is_refused_as_on_a_gpu(program):
    x = torch.ones(2, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    assert x.cpu().numpy().tolist() == [1.0, 1.0]


def test_repr_is_a_cuda_tensors(program):
    assert repr(torch.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"
    assert repr(torch.zeros(2, 2, device="cuda")) == "tensor([[0., 0.],\n        [0., 0.]], device='cuda:0')"
    weight = torch.nn.Linear(2, 1).to("cuda").weight
    assert repr(weight).startswith("Parameter containing:\ntensor([[") and repr(weight).endswith(
        "device='cuda:0', requires_grad=True)")


def test_pin_memory_does_nothing(program):
    x = torch.ones(2)
    assert x.pin_memory() is x and not x.is_pinned()


# -- models, gradients, optimizers ---------------------------------------------------------------


def test_model_to_cuda_and_its_gradients(program):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    before = list(model.parameters())
    model.to("cuda")
    after = list(model.parameters())
    assert all(a is b for a, b in zip(before, after))  # the same Parameter objects, now on the GPU
    assert all(on_gpu(p) and isinstance(p, torch.nn.Parameter) and p.is_leaf and p.requires_grad for p in after)
    x = torch.randn(3, 8, device="cuda")
    for _ in range(2):  # the second backward makes fresh grads after zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        grads = [p.grad for p in model.parameters()]
        assert all(on_gpu(g) for g in grads)
        assert all(p.grad is g for p, g in zip(model.parameters(), grads))  # read twice: the same tensor
        model.zero_grad(set_to_none=True)
    leaf = torch.randn(3, device="cuda", requires_grad=True)
    later = torch.zeros(3, device="cuda").requires_grad_()
    (leaf * later).sum().backward()
    assert on_gpu(leaf.grad) and on_gpu(later.grad)
    assert on_gpu(torch.nn.Linear(2, 2).cuda().weight)


def test_optimizers_take_the_path_they_take_on_a_gpu(program):
    optim = importlib.import_module("torch.optim.optimizer")
    model = torch.nn.Linear(4, 4).to("cuda")
    params = list(model.parameters())
    assert optim._default_to_fused_or_foreach(params, False, False) == (False, True)  # foreach
    model(torch.randn(2, 4, device="cuda")).sum().backward()
    for optimizer in (torch.optim.AdamW(params, lr=0.1), torch.optim.AdamW(params, lr=0.1, fused=True),
                      torch.optim.SGD(params, lr=0.1, momentum=0.9)):
        before = params[0].detach().clone()
        optimizer.step()
        assert not torch.equal(before, params[0].detach()) and on_gpu(params[0])
        assert all(on_gpu(value) for state in optimizer.state.values() for key, value in state.items()
                   if isinstance(value, torch.Tensor) and key != "step")
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    assert on_gpu(norm)


def test_pickle_save_and_deepcopy(program):
    model = torch.nn.Linear(3, 2).to("cuda")
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)  # names no kernelscope class
    assert all(on_cpu(value) for value in loaded.values())
    assert torch.equal(loaded["weight"], model.weight.detach().cpu())
    model.load_state_dict(loaded)
    assert on_gpu(model.weight)
    pickled = pickle.loads(pickle.dumps(model.weight))
    assert type(pickled) is torch.nn.Parameter and pickled.requires_grad
    model(torch.ones(1, 3, device="cuda")).sum().backward()
    copied = copy.deepcopy(model)
    assert on_gpu(copied.weight) and isinstance(copied.weight, torch.nn.Parameter)
    assert copied.weight is not model.weight and torch.equal(copied.weight.detach().cpu(), model.weight.detach().cpu())
    assert on_gpu(copied.weight.grad) and torch.equal(copied.weight.grad.cpu(), model.weight.grad.cpu())
    with torch.no_grad():
        copied.weight.add_(1)
    assert not torch.equal(copied.weight.detach().cpu(), model.weight.detach().cpu())


def test_autocast_cuda_computes_in_its_dtype(program):
    x, w = torch.randn(4, 4, device="cuda"), torch.randn(4, 4, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("cuda")
        out = x @ w
    assert out.dtype == torch.bfloat16 and on_gpu(out)
    assert (x @ w).dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


def test_grad_scaler(program):
    model = torch.nn.Linear(4, 1).to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    assert scaler.is_enabled()
    loss = model(torch.randn(2, 4, device="cuda")).sum()
    scaled = scaler.scale(loss)
    assert on_gpu(scaled)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 65536.0


def test_streams_events_memory_and_seeds(program):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.Stream()
    start.record()
    with torch.cuda.stream(stream):
        assert torch.cuda.current_stream() is stream
        torch.randn(64, 64, device="cuda").sum()
    end.record()
    torch.cuda.synchronize()
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
    assert torch.cuda.current_stream() is torch.cuda.default_stream()
    assert torch.cuda.max_memory_allocated() == 0 and torch.cuda.memory_allocated() == 0
    assert torch.cuda.memory_stats()["allocated_bytes.all.peak"] == 0
    assert torch.cuda.mem_get_info() == (80 * 2**30, 80 * 2**30)
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.empty_cache()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    torch.cuda.manual_seed_all(3)
    first = torch.randn(3, device="cuda")
    state = torch.cuda.get_rng_state()
    second = torch.randn(3, device="cuda")
    torch.cuda.manual_seed(3)
    assert torch.equal(torch.randn(3, device="cuda").cpu(), first.cpu())
    torch.cuda.set_rng_state(state)
    assert torch.equal(torch.randn(3, device="cuda").cpu(), second.cpu())


def test_backend_switches_can_be_set(program):
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark)
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.enable_flash_sdp(True)
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.benchmark
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark = before


# -- what Dynamo captures ------------------------------------------------------------------------


def test_dynamo_captures_the_gpu_program(program):
    captured = []

    def backend(gm, example_inputs):
        captured.append(gm)
        return gm.forward

    def gated(x):
        n = x.shape[-1]
        if x.device.type == "cuda":  # the GPU's branch
            return x.sin() * n + torch.zeros(n, device=x.device)
        return x.cos()

    torch._dynamo.reset()
    try:
        x = torch.randn(2, 8, device="cuda")
        out = torch.compile(gated, backend=backend, fullgraph=True)(x)
    finally:
        torch._dynamo.reset()
    assert on_gpu(out) and torch.allclose(out.cpu(), x.cpu().sin() * 8)
    [gm] = captured
    targets = {str(node.target) for node in gm.graph.nodes}
    assert "sin" in targets and "cos" not in targets
    [placeholder] = [node for node in gm.graph.nodes if node.op == "placeholder"]
    assert placeholder.meta["example_value"].device == CUDA  # Dynamo's fake: a cuda one
    zeros = next(node for node in gm.graph.nodes if node.target is torch.zeros)
    assert torch.device(zeros.kwargs["device"]) == CUDA
    # traced as a plain tensor: the graph names nodes after its ops, as a GPU's does
    assert {node.name for node in gm.graph.nodes} >= {"sin", "zeros"}
    # and the program mode is not traced: each node's innermost frame is the program's line
    traces = [node.meta.get("stack_trace") or "" for node in gm.graph.nodes if node.op == "call_function"]
    innermost = [[line.strip() for line in trace.splitlines() if line.strip().startswith('File "')][-1]
                 for trace in traces]
    assert innermost and all(frame.startswith(f'File "{__file__}"') for frame in innermost), innermost


def test_dynamo_sees_gradients_on_the_gpu(program):
    """A compiled function reading `.grad` (an optimizer step, gradient clipping) gets cuda
    gradients: Dynamo reads them for real, outside the program mode."""
    captured = []

    def backend(gm, example_inputs):
        captured.append(gm)
        return gm.forward

    model = torch.nn.Linear(4, 4).to("cuda")
    model(torch.randn(2, 4, device="cuda")).sum().backward()
    torch._dynamo.reset()
    try:
        torch.compile(lambda: [p.grad * 2 for p in model.parameters()], backend=backend, fullgraph=True)()
    finally:
        torch._dynamo.reset()
    [gm] = captured
    grads = [node.meta["example_value"] for node in gm.graph.nodes if node.op == "placeholder"]
    assert len(grads) == 2 and all(grad.device == CUDA for grad in grads)


# -- what cannot be given ------------------------------------------------------------------------


def test_what_cannot_be_given_is_refused_in_one_line(program):
    from torch.utils import cpp_extension

    refusals = {
        "load('ext', ...)": lambda: cpp_extension.load("ext", ["kernel.cu"]),
        "load_inline('ext', cuda_sources=...)": lambda: cpp_extension.load_inline("ext", "", cuda_sources="x"),
        "init_process_group(backend='nccl')": lambda: torch.distributed.init_process_group("nccl"),
        # a mesh starts the default group itself (device_mesh imports init_process_group by name)
        "init_process_group(backend=None)": lambda: torch.distributed.device_mesh.init_device_mesh("cuda", (2,)),
        "torch.cuda.CUDAGraph": lambda: torch.cuda.CUDAGraph(),
        "torch.cuda.graph_pool_handle": lambda: torch.cuda.graph_pool_handle(),  # torchtitan's CUDA graphs start here
    }
    for call, refused in refusals.items():
        with pytest.raises(Unavailable) as caught:
            refused()
        message = str(caught.value)
        assert "\n" not in message and call in message, message
        assert message.startswith(f"{__file__}:"), message  # the program's own line
        assert "(the last good run in the store is unchanged)" in message
    assert "--world-size" in str(pytest.raises(Unavailable, torch.distributed.init_process_group, "nccl").value)


def test_an_operator_whose_only_kernel_is_cudas_is_refused_in_one_line(program):
    """A C++ extension registers its CUDA kernels for the CUDA dispatch key only (as
    `TORCH_LIBRARY_IMPL(ns, CUDA, m)` does; here through torch.library), a Python custom op
    with `device_types="cuda"` likewise: the dispatcher finds no kernel for the virtual GPU's
    CPU tensors. One line naming the op, the program's line and what to do; an operator with a
    CPU kernel too runs on the virtual GPU."""
    library = torch.library.Library("ks_cuda_only_test", "DEF")
    try:
        library.define("fused(Tensor x) -> Tensor")
        library.impl("fused", lambda x: x * 2, "CUDA")
        library.define("both(Tensor x) -> Tensor")
        library.impl("both", lambda x: x * 2, "CUDA")
        library.impl("both", lambda x: x * 3, "CPU")

        @torch.library.custom_op("ks_cuda_only_test::scaled", mutates_args=(), device_types="cuda")
        def scaled(x: torch.Tensor) -> torch.Tensor:
            return x * 4

        x = torch.ones(2, device="cuda")
        for call, refused in {"torch.ops.ks_cuda_only_test.fused(...)": lambda: torch.ops.ks_cuda_only_test.fused(x),
                              "torch.ops.ks_cuda_only_test.scaled(...)": lambda: scaled(x)}.items():
            with pytest.raises(Unavailable) as caught:
                refused()
            message = str(caught.value)
            assert "\n" not in message and message.startswith(f"{__file__}:"), message
            assert f"`{call}`: its only kernel is CUDA code (registered for the CUDA dispatch key)" in message
            assert "--target cuda" in message and 'register_kernel(..., "cpu")' in message
        both = torch.ops.ks_cuda_only_test.both(x)
        assert on_gpu(both) and both.tolist() == [3.0, 3.0]
        with pytest.raises(RuntimeError, match="expected"):  # any other error of a library op stays its own
            torch.ops.ks_cuda_only_test.both(x, x)
    finally:
        library._destroy()


def test_a_library_needing_cudas_runtime_is_refused_and_a_missing_one_is_its_own_error(program, tmp_path):
    """`torch.ops.load_library` of a CUDA extension's shared library on a machine without CUDA's
    runtime: built here as a library linked to a `libcudart.so.12` that is then removed."""
    import shutil
    import subprocess

    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler to build the library")
    stub, library = tmp_path / "stub", tmp_path / "libops_cuda.so"
    stub.mkdir()
    (tmp_path / "stub.c").write_text("int cuda_stub(void) { return 0; }\n")
    (tmp_path / "ops.c").write_text("int cuda_stub(void);\nint ops(void) { return cuda_stub(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stub / "libcudart.so.12"), str(tmp_path / "stub.c")],
                   check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "ops.c"), f"-L{stub}",
                    "-l:libcudart.so.12"], check=True)
    shutil.rmtree(stub)
    with pytest.raises(Unavailable) as caught:
        torch.ops.load_library(str(library))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{__file__}:"), message
    assert "`torch.ops.load_library('libops_cuda.so')`: the library needs CUDA's runtime (libcudart.so.12" in message
    # still the loader's OSError: a program that goes on without the library (torchvision's
    # `_C` check, bench/suite/vision_libs.py) goes on as on a machine without it
    assert isinstance(caught.value, OSError)
    with pytest.raises(OSError) as missing:  # a path that is not there is the program's own error
        torch.ops.load_library(str(tmp_path / "libother_cuda.so"))
    assert not isinstance(missing.value, Unavailable)


# -- what Dynamo's guards say ----------------------------------------------------------------------


def test_a_tensor_guard_on_the_virtual_gpu_reads_as_a_gpus_and_still_passes(program):
    """Dynamo's text of a TENSOR_MATCH guard (what the store keeps, `why` shows) names the
    class and dispatch keys a GPU's tensor has, not kernelscope's class and the CPU keys;
    the check itself is the tensor's own, so the same call reuses its compile."""
    from torch._dynamo import guards
    from torch._dynamo.testing import CompileCounter

    def text(tensor):
        return guards.get_tensor_guard_code_part(tensor, "L['t']", [2, 2], [2, 1], type(tensor),
                                                 torch._C._dispatch_keys(tensor))

    model = torch.nn.Linear(2, 2).to("cuda")
    x = torch.ones(2, 2, device="cuda")
    assert text(x).startswith("check_tensor(L['t'], Tensor, DispatchKeySet(CUDA, ") and "CPU" not in text(x), text(x)
    assert "AutogradCUDA" in text(x) and "device=0" in text(x)
    assert text(model.weight).startswith("check_tensor(L['t'], Parameter, DispatchKeySet(CUDA, "), text(model.weight)
    cpu = text(torch.ones(2, 2))  # a CPU tensor of the program: as it is
    assert cpu.startswith("check_tensor(L['t'], Tensor, DispatchKeySet(CPU, ") and "device=None" in cpu, cpu
    counter = CompileCounter()
    torch._dynamo.reset()
    try:
        compiled = torch.compile(lambda a: model(a).relu(), backend=counter)
        compiled(x)
        compiled(x)
    finally:
        torch._dynamo.reset()
    assert counter.frame_count == 1
