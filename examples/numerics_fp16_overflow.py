"""Planted divergence: an fp16 product that overflows in eager but not in the fused kernel.

`a * b` is 90000 for the largest entries, above fp16's 65504: eager rounds the product
to fp16 and gets inf; Inductor fuses the product with the scaling below and computes
the chain in fp32, so the kernel stores 90.0. `kernelscope numerics` names the product's
line as the first divergence.
"""
import torch


def scaled_product(a, b):
    shifted = a + 1.0
    product = shifted * b
    scaled = product * 1e-3
    return scaled.relu()


def make():
    torch.manual_seed(0)
    a = torch.rand(16, 32, dtype=torch.float16) * 100
    b = torch.rand(16, 32, dtype=torch.float16) * 100
    a[0, 0], b[0, 0] = 299.0, 300.0
    return scaled_product, (a, b)
