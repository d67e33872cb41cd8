"""A GPU training script with Triton kernels of its own, as one writes it, for
`kernelscope run examples/user_triton_kernel.py -- --steps 2`.

Nothing here knows about kernelscope. The model's activation is SiLU written in Triton, an
`autograd.Function` whose forward kernel is `@triton.autotune`d and whose backward kernel
takes its block size from `@triton.heuristics`; both call a `@triton.jit` helper. Its
residual add is a `torch.library.triton_op` (`wrap_triton`) with `register_autograd`, whose
backward launches the same kernel. Before training, the script checks its SiLU kernel
against torch's on the GPU, uncompiled; then it trains the compiled model a few steps with
AdamW and prints each loss. On a machine without a GPU, virtual-cuda runs it as written:
the kernels run in Triton's interpreter on the CPU (the printed numbers are real) and the
model's forward and backward graphs are recorded with the user kernels in their cuda
wrappers, as a GPU compiles them.
"""
import argparse

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import nn
from torch.library import triton_op, wrap_triton


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=2)],
                 key=["n"])
@triton.jit
def silu_forward_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * _sigmoid(x), mask=mask)


@triton.heuristics({"BLOCK": lambda args: min(1024, triton.next_power_of_2(args["n"]))})
@triton.jit
def silu_backward_kernel(x_ptr, grad_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    grad = tl.load(grad_ptr + offsets, mask=mask)
    s = _sigmoid(x)
    tl.store(out_ptr + offsets, grad * s * (1.0 + x * (1.0 - s)), mask=mask)


@triton.jit
def axpby_kernel(x_ptr, y_ptr, out_ptr, a, b, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * x + b * y, mask=mask)


class TritonSiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_forward_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        grad = grad.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_backward_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, grad, out, n)
        return out


@triton_op("user_kernels::axpby", mutates_args={})
def axpby(x: torch.Tensor, y: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """a * x + b * y, in Triton."""
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(axpby_kernel)[(triton.cdiv(n, 512),)](x, y, out, a, b, n, BLOCK=512)
    return out


def _axpby_setup(ctx, inputs, output):
    _, _, ctx.a, ctx.b = inputs


def _axpby_backward(ctx, grad):
    grad = grad.contiguous()
    return axpby(grad, grad, ctx.a, 0.0), axpby(grad, grad, ctx.b, 0.0), None, None


axpby.register_autograd(_axpby_backward, setup_context=_axpby_setup)


class Block(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 128):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return axpby(self.down(TritonSiLU.apply(self.up(x))), x, 1.0, 0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--eval", action="store_true", help="one forward pass without gradients, no training")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Block().to("cuda")
    x = torch.randn(16, 64, device="cuda")
    target = torch.randn(16, 64, device="cuda")
    check = torch.randn(1000, device="cuda")  # the kernel against torch's SiLU, uncompiled
    print(f"silu kernel max error {(TritonSiLU.apply(check) - F.silu(check)).abs().max().item():.2e}")
    compiled = torch.compile(model)
    if args.eval:
        with torch.no_grad():
            print(f"eval: loss {F.mse_loss(compiled(x), target).item():.6f}")
        return
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        loss = F.mse_loss(compiled(x), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.6f}")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
