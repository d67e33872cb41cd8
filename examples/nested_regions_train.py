"""An LLM-style stack of identical transformer blocks, each a nested compile region, trained
on a GPU for a few steps, for `kernelscope run examples/nested_regions_train.py -- --steps 2`.

`torch.compiler.nested_compile_region` marks the block's forward: torch.compile traces and
compiles the block once and calls that compiled region for every layer (an `invoke_subgraph`
in the graph) instead of inlining each layer, so compile time stops growing with depth.
Every other block also recomputes its activations in the backward
(`torch.utils.checkpoint`, non-reentrant), trading compute for memory as large models do.
Nothing here knows about kernelscope: on a machine without a GPU, virtual-cuda runs it as
written and records the model's forward and backward graphs (their regions compiled for
cuda); the printed losses are real. `--device cpu --eager` runs the same program on the CPU
without torch.compile.
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


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

    @torch.compiler.nested_compile_region
    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, length, dim))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh"))


class StackLM(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for index, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if index % 2 else block(x)
        return self.head(self.norm(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--eager", action="store_true", help="run without torch.compile")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = StackLM().to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    run = model if args.eager else torch.compile(model)
    tokens = torch.randint(0, 256, (4, 33), device=args.device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    for step in range(args.steps):
        logits = run(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step}: loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
