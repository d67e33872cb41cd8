"""A training script written for a GPU, as one writes it, for
`kernelscope run examples/gpu_train_script.py -- --steps 3`.

Nothing here knows about kernelscope: it moves the model to "cuda", makes its batches there,
seeds the GPU, trains in bf16 autocast with a compiled model and a compiled AdamW step,
synchronizes, reads the GPU's memory statistics, prints the loss and stops early once
the loss is low enough. On a machine without a GPU, virtual-cuda runs it as written (the
program sees a CUDA device) and records the model's forward and backward graphs and the
optimizer step's graph, with their CUDA kernels; the printed losses are real.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn


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

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, length, dim))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh"))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if logits.device.type == "cuda":  # a device branch, as training code has them
            logits = logits.float()
        return logits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--target-loss", type=float, default=0.5, help="stop once the loss is below this")
    parser.add_argument("--fused", action="store_true", help="fused AdamW instead of foreach")
    args = parser.parse_args()

    assert torch.cuda.is_available(), "this script needs a GPU"
    device = torch.device("cuda")
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()} (capability {torch.cuda.get_device_capability()})")

    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1,
                                  fused=True if args.fused else None)
    compiled = torch.compile(model)

    @torch.compile
    def optimizer_step():
        optimizer.step()

    tokens = torch.randint(0, 256, (args.batch, args.length + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    for step in range(args.steps):
        started = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = compiled(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        optimizer_step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        value = loss.item()
        print(f"step {step}: loss {value:.4f}  {1000 * (time.perf_counter() - started):.0f} ms  "
              f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
        if not math.isfinite(value):
            raise SystemExit(f"loss is {value} at step {step}")
        if value < args.target_loss:
            print(f"reached loss {value:.4f} < {args.target_loss} at step {step}: stopping")
            break


if __name__ == "__main__":
    main()
