"""Planted divergence at a matmul: an extern kernel (eager's own mm) amplifies a small difference.

`scaled = x * 1.7 + 0.3` in bfloat16: eager rounds the product and then the sum, the fused
kernel rounds once, so some entries differ by one bfloat16 step (within tolerance). The matmul
subtracts neighbouring columns that are nearly equal: where eager's two roundings and the
kernel's one differ, the difference is the whole result. Inductor runs the matmul as an extern
call (`extern_kernels.mm`), eager's own op; `kernelscope numerics` compares its output too and
names the matmul's line, saying that its input already differed.
"""
import torch


def difference_of_neighbours(x, w):
    scaled = x * 1.7 + 0.3
    return scaled @ w


def make():
    torch.manual_seed(0)
    rows, pairs = 16, 8
    first = (torch.rand(rows, pairs) * 20 + 50).to(torch.bfloat16)
    second = torch.nextafter(first, torch.full_like(first, 1000))  # the next bfloat16 up
    x = torch.stack([first, second], dim=-1).reshape(rows, 2 * pairs)
    w = torch.zeros(2 * pairs, pairs, dtype=torch.bfloat16)
    for pair in range(pairs):
        w[2 * pair, pair], w[2 * pair + 1, pair] = 1.0, -1.0
    return difference_of_neighbours, (x, w)
