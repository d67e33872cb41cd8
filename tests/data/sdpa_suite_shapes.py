"""Attention as the model suite's models call it, small: each reproduces one decision an H100
made for the suite under torch 2.11 (/work results of `bench/suite.py --compare`), which
virtual-cuda's SDPA rule got wrong before it ported ATen's checks (tests/engine/devices/test_sdpa_choice.py).
"""
import torch
from torch import nn


class SelfAttention(nn.Module):
    """q, k, v from one projection, viewed (batch, heads, seq, head_dim) as Hugging Face does."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def split(self, x):
        batch, seq, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return [t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v)]

    def merge(self, attended):
        batch, _, seq, _ = attended.shape
        return self.out(attended.transpose(1, 2).reshape(batch, seq, -1))


class BertLike(SelfAttention):
    """BERT/BART under torch.compile: head size 16 and the boolean padding mask transformers
    builds by broadcasting, (batch, 1, seq, seq) with stride 0 in its last dimension. The H100
    ran the math path (a fused kernel needs the mask's last stride to be 1)."""

    def __init__(self):
        super().__init__(64, 4)

    def forward(self, x):
        q, k, v = self.split(x)
        batch, seq = x.shape[:2]
        keep = (torch.arange(seq, device=x.device)[:, None] >= 0).expand(batch, 1, seq, seq)
        return self.merge(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.25))


class T5Like(SelfAttention):
    """T5: the position bias as an additive mask, permuted from (seq, seq, heads): its last
    stride is `heads`. The H100 ran the math path."""

    def __init__(self):
        super().__init__(64, 4)
        self.bias = nn.Embedding(32, 4)

    def forward(self, x):
        q, k, v = self.split(x)
        seq = x.shape[1]
        positions = torch.arange(seq, device=x.device)
        relative = (positions[None, :] - positions[:, None]).clamp(0, 31)
        bias = self.bias(relative).permute(2, 0, 1).unsqueeze(0).expand(x.shape[0], -1, -1, -1)
        return self.merge(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0))


class MobileVitLike(SelfAttention):
    """MobileViT's transformer blocks: head size 36 (a multiple of 4, not of 8), no mask. The
    H100 ran the memory-efficient kernel (fp32 needs a multiple of 4 on sm80+)."""

    def __init__(self):
        super().__init__(144, 4)

    def forward(self, x):
        q, k, v = self.split(x)
        return self.merge(torch.nn.functional.scaled_dot_product_attention(q, k, v))


def make_bert_like():
    torch.manual_seed(0)
    return BertLike(), (torch.randn(2, 32, 64),)


def make_t5_like():
    torch.manual_seed(0)
    return T5Like(), (torch.randn(2, 32, 64),)


def make_mobilevit_like():
    torch.manual_seed(0)
    return MobileVitLike(), (torch.randn(8, 16, 144),)
