"""A small self-attention block: QKV projection, scaled dot-product attention
written out by hand (matmul, scale, softmax, matmul), output projection and a
residual + LayerNorm.

Shows: batched matmuls (bmm) as extern calls, the softmax fused into one Triton
reduction kernel, and the residual add fused with LayerNorm.
"""
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(batch, seq, self.heads, -1).transpose(1, 2)
        k = k.view(batch, seq, self.heads, -1).transpose(1, 2)
        v = v.view(batch, seq, self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = scores.softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, seq, dim)
        return self.norm(x + self.proj(out))


def make():
    torch.manual_seed(0)
    return Attention(), (torch.randn(2, 16, 64),)
