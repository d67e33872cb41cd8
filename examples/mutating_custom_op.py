"""A custom op that mutates its input (`torch.library.custom_op` with `mutates_args`),
called in a compiled model.

Shows: torch.compile functionalizes the mutation (`auto_functionalized_v2`) and Inductor
turns it back into an in-place call after its passes (`decompose_auto_functionalized`);
kernelscope traces the custom op's node to the line that calls it, its extern call in the
wrapper to that node, and names the pass that made it ("made by pass
decompose_auto_functionalized ... from auto_functionalized_v2").
"""
import torch
from torch import nn


@torch.library.custom_op("kernelscope_examples::scale_", mutates_args=("buf",))
def scale_(buf: torch.Tensor, factor: float) -> None:
    buf.mul_(factor)


@scale_.register_fake
def _(buf, factor):
    return None


class Scaled(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.relu(self.proj(x))
        scale_(h, 0.5)
        return h.sum(-1)


def make():
    torch.manual_seed(0)
    return Scaled(), (torch.randn(8, 16),)
