"""A recurrence written with `scan` and a per-step layer written with `map`
(torch._higher_order_ops): loops torch.compile keeps as loops instead of unrolling them.

Shows: Inductor rewrites `scan` and `map` as a `while_loop`; kernelscope labels its
subgraphs as what was written ("scan: combine_fn of Recurrence.forward (scan_map.py:NN),
as while_loop body"), and traces their ops to the combine_fn's and body's lines.
torch.compile needs `capture_scalar_outputs` for both (the while_loop reads its step index
with `.item()`; without it torch 2.13 fails with DataDependentOutputException).

`make` records inference; `make_map` the map alone, for `--train` (training through `scan`
is refused by torch itself when its carry comes from tanh: pytorch/pytorch#195977).
"""
import torch
from torch import nn
from torch._higher_order_ops.map import map as loop_map
from torch._higher_order_ops.scan import scan


class Recurrence(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, xs):
        def step(carry, x):
            h = torch.tanh(carry + self.inp(x))
            return h, h * 2.0

        def per_step(y):
            return torch.sigmoid(self.out(y)) * y

        init = torch.zeros(xs.shape[1], xs.shape[2], device=xs.device)
        last, ys = scan(step, init, xs)
        return loop_map(per_step, ys).sum(0) + last


class StepMap(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.out = nn.Linear(dim, dim)

    def forward(self, xs):
        def per_step(y):
            return torch.sigmoid(self.out(y)) * y

        return loop_map(per_step, xs).sum(0)


def make():
    torch._dynamo.config.capture_scalar_outputs = True
    torch.manual_seed(0)
    return Recurrence(), (torch.randn(6, 4, 32),)


def make_map():
    torch._dynamo.config.capture_scalar_outputs = True
    torch.manual_seed(0)
    return StepMap(), (torch.randn(6, 4, 32),)
