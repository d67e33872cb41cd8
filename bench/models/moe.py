"""A top-k mixture-of-experts block: a router picks 2 of 8 SwiGLU experts per token.

Routing is written with gathers (no data-dependent shapes, so one graph): `topk` over
the router's softmax, `torch.gather` of the chosen scores, and each token's expert
weights gathered by index (`w_gate[experts]`), whose backward is an index_put /
scatter-add into the expert weights. Followed by a residual and RMSNorm.
"""
import torch
from torch import nn

TOKENS, DIM, HIDDEN, EXPERTS, TOP_K = 64, 64, 128, 8, 2


class TopKMoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(DIM, EXPERTS, bias=False)
        self.w_gate = nn.Parameter(torch.randn(EXPERTS, DIM, HIDDEN) * DIM ** -0.5)
        self.w_up = nn.Parameter(torch.randn(EXPERTS, DIM, HIDDEN) * DIM ** -0.5)
        self.w_down = nn.Parameter(torch.randn(EXPERTS, HIDDEN, DIM) * HIDDEN ** -0.5)
        self.norm = nn.RMSNorm(DIM)

    def forward(self, x):
        logits = self.router(x)                                   # (T, E)
        _, experts = torch.topk(logits, TOP_K, dim=-1)            # (T, k)
        scores = torch.gather(logits.softmax(dim=-1), -1, experts)
        scores = scores / scores.sum(dim=-1, keepdim=True)
        gate = torch.einsum("td,tkdh->tkh", x, self.w_gate[experts])
        up = torch.einsum("td,tkdh->tkh", x, self.w_up[experts])
        hidden = nn.functional.silu(gate) * up
        out = torch.einsum("tkh,tkhd->tkd", hidden, self.w_down[experts])
        mixed = (out * scores.unsqueeze(-1)).sum(dim=1)
        return self.norm(x + mixed)


def _model(dtype=torch.float32):
    torch.manual_seed(0)
    return TopKMoE().to(dtype)


def _tokens(dtype=torch.float32):
    return (torch.randn(TOKENS, DIM, dtype=dtype),)


def make():
    return _model().eval(), _tokens()


def make_train():
    return _model().train(), _tokens()


def make_bf16():
    return _model(torch.bfloat16).eval(), _tokens(torch.bfloat16)


def make_bf16_train():
    return _model(torch.bfloat16).train(), _tokens(torch.bfloat16)
