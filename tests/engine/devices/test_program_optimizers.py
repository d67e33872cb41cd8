"""An optimizer's bookkeeping below the program mode (devices/program_optimizers.py).

`zero_grad` and `_init_group` (once the state exists) run with torch functions off inside a
program; these tests hold that nothing the program or Dynamo sees changes: the values are
the CPU program's bit for bit, the state is on the virtual GPU, another mode still sees every
call, a compiled step still captures cuda tensors, and the calls no longer reach the mode.
"""
from __future__ import annotations

import contextlib
import importlib

import pytest

torch = pytest.importorskip("torch")

from torch.overrides import TorchFunctionMode  # noqa: E402

from kernelscope.engine import program_patch_points as program_points  # noqa: E402
from kernelscope.engine.devices.cuda_program import cuda_program  # noqa: E402
from kernelscope.engine.devices.program_mode import mode_classes  # noqa: E402
from kernelscope.engine.devices.virtual_gpu_tensor import tensor_class  # noqa: E402

CUDA = torch.device("cuda", 0)
GRAD_READ = torch.Tensor.grad.__get__  # the function a torch-function mode is given for `p.grad`

# each optimizer as a GPU program makes it (foreach, or fused where asked): the CPU program is
# asked for the same path, so both run the same kernels in the same order
OPTIMIZERS = {
    "AdamW": lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1, foreach=True),
    "AdamW fused": lambda params: torch.optim.AdamW(params, lr=0.01, fused=True),
    "Adam amsgrad": lambda params: torch.optim.Adam(params, lr=0.01, amsgrad=True, foreach=True),
    "SGD momentum": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=True),
    "RMSprop": lambda params: torch.optim.RMSprop(params, lr=0.01, foreach=True),
    "Adagrad": lambda params: torch.optim.Adagrad(params, lr=0.01, foreach=True),
    "NAdam": lambda params: torch.optim.NAdam(params, lr=0.01, foreach=True),
}


def on_gpu(tensor) -> bool:
    return type(tensor) is tensor_class() and tensor.device == CUDA and tensor.is_cuda


def _train(device: str, make_optimizer, steps: int = 4):
    """(parameters, optimizer) after `steps` eager steps, zero_grad set_to_none and not alternating."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(device)
    x = torch.randn(5, 6, device=device)
    optimizer = make_optimizer(list(model.parameters()))
    for step in range(steps):
        model(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=step % 2 == 0)
    return list(model.parameters()), optimizer


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_eager_steps_compute_the_cpu_programs_values_and_keep_the_state_on_the_gpu(name):
    cpu_params, cpu_optimizer = _train("cpu", OPTIMIZERS[name])
    with cuda_program():
        params, optimizer = _train("cuda", OPTIMIZERS[name])
        assert all(on_gpu(param) for param in params)
        assert all(on_gpu(param.grad) for param in params if param.grad is not None)
        for param, cpu_param in zip(params, cpu_params):
            assert torch.equal(param.detach().cpu(), cpu_param.detach())
            state, cpu_state = optimizer.state[param], cpu_optimizer.state[cpu_param]
            assert state.keys() == cpu_state.keys()
            for key, value in state.items():
                if not isinstance(value, torch.Tensor):
                    continue
                assert torch.equal(value.cpu(), cpu_state[key])
                # the step count (and NAdam's mu product) are on the host unless the step is
                # fused or capturable, as on a GPU; the rest is on the parameter's device
                on_host = key in ("step", "mu_product") and not optimizer.defaults.get("fused")
                assert value.device.type == ("cpu" if on_host else "cuda"), (key, value.device)
                assert on_host or on_gpu(value)


@contextlib.contextmanager
def _calls_reaching_the_program_mode():
    """The torch functions the program mode is asked to run while inside."""
    mode_class = mode_classes()[0]
    run = mode_class.__torch_function__
    seen: list = []

    def counting(self, func, types, args=(), kwargs=None):
        seen.append(func)
        return run(self, func, types, args, kwargs)

    mode_class.__torch_function__ = counting
    try:
        yield seen
    finally:
        mode_class.__torch_function__ = run


def test_the_bookkeeping_runs_below_the_mode_once_the_state_exists():
    with cuda_program():
        model = torch.nn.Linear(4, 4).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        x = torch.randn(2, 4, device="cuda")
        for step in range(2):
            model(x).sum().backward()
            with _calls_reaching_the_program_mode() as seen_by_step:
                optimizer.step()
            with _calls_reaching_the_program_mode() as seen_by_zero_grad:
                optimizer.zero_grad()
            if step == 0:  # the state is made on the first step: under the mode, on the virtual GPU
                assert {torch.is_complex, GRAD_READ, torch.zeros_like} <= set(seen_by_step)
                assert all(on_gpu(state["exp_avg"]) for state in optimizer.state.values())
        assert torch.is_complex not in seen_by_step and GRAD_READ not in seen_by_step
        assert seen_by_zero_grad == []


def test_another_mode_on_the_stack_still_sees_every_call():
    class Seen(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.funcs: list = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    with cuda_program():
        model = torch.nn.Linear(4, 4).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        for _ in range(2):
            model(torch.randn(2, 4, device="cuda")).sum().backward()
            with Seen() as seen:
                optimizer.step()
                optimizer.zero_grad()
        assert {torch.is_complex, GRAD_READ, torch.Tensor.grad.__set__} <= set(seen.funcs)


def test_a_plain_gradient_is_put_on_the_virtual_gpu_as_the_modes_read_puts_it():
    with cuda_program():
        model = torch.nn.Linear(4, 4).to("cuda")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            model(torch.randn(2, 4, device="cuda")).sum().backward()
            optimizer.step()
        with torch._C.DisableTorchFunction():  # a gradient set where no hook or read changes it
            model.weight.grad = torch.ones(4, 4)
            plain = torch._C.TensorBase.grad.__get__(model.weight)
        assert type(plain) is torch.Tensor
        optimizer.step()
        assert type(plain) is tensor_class() and model.weight.grad is plain and on_gpu(plain)


def test_a_gradient_of_the_programs_own_subclass_still_sees_its_calls():
    seen: list = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    with cuda_program():
        model = torch.nn.Linear(4, 4, bias=False).to("cuda")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            model(torch.randn(2, 4, device="cuda")).sum().backward()
            optimizer.step()
        with torch._C.DisableTorchFunction():
            model.weight.grad = torch.ones(4, 4).as_subclass(Logged)
        seen.clear()
        optimizer.step()
        assert torch.Tensor.is_sparse.__get__ in seen  # `p.grad.is_sparse` in SGD's _init_group


def test_a_compiled_step_after_eager_steps_still_captures_cuda_tensors():
    """Dynamo runs `_init_group` for real while it compiles a step (the fast path steps
    aside): the graph's inputs are cuda, its nodes trace to torch's optimizer, not kernelscope."""
    captured = []

    def backend(gm, example_inputs):
        captured.append(gm)
        return gm.forward

    with cuda_program():
        model = torch.nn.Linear(4, 4).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        x = torch.randn(2, 4, device="cuda")
        for _ in range(2):  # eager steps first: the state exists, the fast path is taken
            model(x).sum().backward()
            optimizer.step()
        torch._dynamo.reset()
        try:
            compiled = torch.compile(optimizer.step, backend=backend)
            for _ in range(2):
                model(x).sum().backward()
                compiled()
                optimizer.zero_grad()
        finally:
            torch._dynamo.reset()
        assert all(on_gpu(param) for param in model.parameters())
    assert captured
    tensors = [node.meta["example_value"] for gm in captured for node in gm.graph.nodes
               if node.op == "placeholder" and isinstance(node.meta.get("example_value"), torch.Tensor)]
    assert tensors and all(tensor.device == CUDA for tensor in tensors)
    traces = [node.meta.get("stack_trace") or "" for gm in captured for node in gm.graph.nodes
              if node.op == "call_function"]
    assert any("torch/optim/" in trace for trace in traces)
    assert not any("kernelscope" in trace for trace in traces)


def test_the_replaced_functions_are_torchs_again_after_the_program():
    optimizer_class = importlib.import_module("torch.optim.optimizer").Optimizer
    zero_grad, init_group = optimizer_class.zero_grad, torch.optim.Adam._init_group
    with cuda_program():
        assert optimizer_class.zero_grad is not zero_grad and torch.optim.Adam._init_group is not init_group
    assert optimizer_class.zero_grad is zero_grad and torch.optim.Adam._init_group is init_group
    points = (program_points.OPTIMIZER_ZERO_GRAD, *program_points.OPTIMIZER_INIT_GROUPS.values())
    assert all(point.check() is None for point in points)


def test_adamw_is_wrapped_too_and_put_back_exactly_after_dynamos_optimizer_patch():
    """Dynamo gives each optimizer class a disabled `_init_group` of its own at the first
    compile in a process (AdamW stops inheriting Adam's): the program makes that happen first,
    so AdamW's calls take the fast path whenever the process compiled before, and what each
    class held is what it holds again after the program."""
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))  # Dynamo's one-time patch
    held = {cls: vars(cls).get("_init_group") for cls in (torch.optim.Adam, torch.optim.AdamW)}
    assert held[torch.optim.AdamW] is not None
    with cuda_program():
        assert all(vars(cls)["_init_group"] is not value for cls, value in held.items())
    assert {cls: vars(cls).get("_init_group") for cls in held} == held
