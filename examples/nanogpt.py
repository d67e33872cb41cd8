"""A nanoGPT-style language model: token + position embeddings, a loop over
Blocks (causal self-attention through SDPA, tanh-GELU MLP), and cross-entropy.

Shows: whole-stack provenance. The loop line `x = block(x)` and the residual
lines inside `Block.forward` are outer frames of every op beneath them; a query on
them answers per module instance (`blocks.0`, `blocks.1`), and `--module` picks one.
"""
import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        q = q.view(batch, tokens, self.heads, dim // self.heads).transpose(1, 2)
        k = k.view(batch, tokens, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, tokens, self.heads, dim // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(batch, tokens, dim)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = F.gelu(self.fc(x), approximate="tanh")
        return self.proj(h)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab: int = 96, context: int = 32, dim: int = 64, heads: int = 4, layers: int = 2):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.position_embedding = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.token_embedding(idx) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make(layers: int = 2):
    torch.manual_seed(0)
    model = GPT(layers=layers)
    idx = torch.randint(0, 96, (2, 32))
    targets = torch.randint(0, 96, (2, 32))
    return model, (idx, targets)
