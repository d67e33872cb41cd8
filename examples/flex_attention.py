"""FlexAttention with a score_mod, for `kernelscope compile examples/flex_attention.py:make`.

The score_mod adds a relative-position bias and keeps the causal half (a score_mod may
mask too, by sending scores to -inf). Inductor inlines it into its FlexAttention Triton
template; kernelscope links the template lines that compute it to the function's lines.
Inference only (a factory's model also runs eagerly on the CPU, where FlexAttention has no
backward): examples/flex_attention_train.py trains one under `kernelscope run`.
"""
import torch
from torch import nn
from torch.nn.attention.flex_attention import flex_attention


def causal_bias(score, b, h, q_idx, kv_idx):
    bias = (q_idx - kv_idx) * -0.1
    return torch.where(q_idx >= kv_idx, score + bias, -float("inf"))


class FlexBlock(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        out = flex_attention(q, k, v, score_mod=causal_bias)
        return out.transpose(1, 2).reshape(batch, seq, dim)


def make():
    torch.manual_seed(0)
    return FlexBlock(), (torch.randn(2, 128, 64),)
