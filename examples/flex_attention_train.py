"""A small attention model trained with FlexAttention on a GPU, as one writes it, for
`kernelscope run examples/flex_attention_train.py -- --steps 3`.

Nothing here knows about kernelscope: the model goes to "cuda", the block mask (causal
and a sliding window, `and_masks`) is made there with `create_block_mask`, and attention
is `flex_attention` with a score_mod that adds learned per-head ALiBi slopes (a parameter
the score_mod captures, so gradients flow into it) and soft-caps the scores with tanh.
The model is compiled and trained with AdamW; each step prints its loss and the norm of
the ALiBi slopes' gradient. On a machine without a GPU, virtual-cuda runs it as written
and records the model's forward and backward graphs with Inductor's FlexAttention Triton
kernels for cuda; the printed values are real.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention.flex_attention import and_masks, create_block_mask, flex_attention

WINDOW = 96
SOFT_CAP = 20.0


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < WINDOW


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        # ALiBi's geometric slopes, learned from there
        self.alibi = nn.Parameter(torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)]))

    def attention(self, q, k, v, block_mask):
        slopes = self.alibi

        def alibi_soft_cap(score, b, h, q_idx, kv_idx):
            score = score + slopes[h] * (kv_idx - q_idx)
            return SOFT_CAP * torch.tanh(score / SOFT_CAP)

        return flex_attention(q, k, v, score_mod=alibi_soft_cap, block_mask=block_mask)

    def forward(self, x, block_mask):
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = self.attention(q, k, v, block_mask)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, length, dim))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh"))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, block_mask):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, block_mask)
        return self.head(self.norm(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=256)
    args = parser.parse_args()

    assert torch.cuda.is_available(), "this script needs a GPU"
    device = torch.device("cuda")
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)

    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    compiled = torch.compile(model)
    block_mask = create_block_mask(and_masks(causal, sliding_window), None, None, args.length, args.length,
                                   device=device)
    print(f"block mask on {block_mask.kv_num_blocks.device}: {block_mask.sparsity():.1f}% sparse")

    tokens = torch.randint(0, 256, (args.batch, args.length + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    for step in range(args.steps):
        logits = compiled(inputs, block_mask)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        alibi_grad = torch.linalg.vector_norm(model.blocks[0].alibi.grad).item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step}: loss {loss.item():.5f}  alibi grad {alibi_grad:.6f}")


if __name__ == "__main__":
    main()
