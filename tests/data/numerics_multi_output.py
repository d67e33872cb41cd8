"""A model whose outputs come from extern kernels (mm, addmm, bmm), a fallback with two
outputs (topk) and a Triton kernel storing two outputs of one node (var_mean): `kernelscope
numerics` compares each (tests/engine/test_numerics.py)."""
import torch


def block(x, w, b, y):
    h = x * 1.7 + 0.3
    out = h @ w
    lin = torch.addmm(b, out, w.t())
    both = torch.bmm(y, y.transpose(1, 2))
    var, mean = torch.var_mean(lin, dim=-1)
    top = torch.topk(lin, 2, dim=-1)
    return var, mean, both, top.values


def make():
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    w = torch.randn(16, 16)
    b = torch.randn(16)
    y = torch.randn(2, 4, 8)
    return block, (x, w, b, y)
