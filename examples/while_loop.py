"""A loop written with `torch._higher_order_ops.while_loop`: its cond and body as subgraphs.

Shows: `while_loop`'s cond and body functions recorded as subgraphs nested in the graph
that runs the loop (kernelscope show: "while_loop: body of Smoother.forward"), each
traced to its function's lines and on to its own kernels.
"""
import torch
from torch import nn
from torch._higher_order_ops import while_loop


class Smoother(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)

        def keep_going(step, h):
            return step < 3

        def smooth(step, h):
            return step + 1, torch.tanh(h) * 0.5 + h.mean(dim=-1, keepdim=True)

        _, out = while_loop(keep_going, smooth, (torch.zeros((), dtype=torch.int64, device=x.device), h))
        return out.relu()


def make():
    torch.manual_seed(0)
    return Smoother(), (torch.randn(16, 64),)
